"""The tenant's shared catalog (world data every subject's recall may find): add, edit, delete entries.

Catalog entries belong to the tenant, not to a subject: they carry ``tenant_id`` and no ``user_id``.
Reads run with the tenant's own key (DLS ``tenant_id``); writes with the service writer after the
interface has checked the caller may manage the catalog. An edit overwrites the entry in place (the
catalog is reference data, not a person's history) and only over the version the editor read.
"""

from __future__ import annotations

from typing import Any

from elasticsearch import ConflictError

from atlas_site.errors import Conflict, NotFound, PreconditionFailed, ValidationFailed
from atlas_site.idempotency import idempotency_tenant_records_forget
from memory.elastic import queries, store
from memory.inference.embeddings import query_caches_clear
from memory.scope import tenant_read_filters
from tenants.models import MemorySubject, Tenant
from tenants.selectors import tenant_es_client, writer_es_client
from tenants.services import audit_record

from . import gate
from .forget import forget_receipt, stored_answer_matcher
from .non_english_flags import non_english_marked
from .prepare import PreparedMemory, catalog_prepare, embed_into
from .writes import EDIT_ATTEMPTS, edit_backoff, memory_etag, stored_view

CATALOG_FIELDS = ("title", "text", "category", "tags")


def catalog_entry_fetch(*, tenant: Tenant, entry_id: Any) -> dict[str, Any]:
    """The entry's hit (with its version), read with the tenant's key; another tenant's is "not found"."""
    if not isinstance(entry_id, str) or not entry_id:
        raise ValidationFailed("an entry id is required", field="id")
    found = store.memories_fetch(
        tenant_es_client(tenant=tenant),
        ids=[entry_id],
        memory_types=("catalog",),
        filters=tenant_read_filters(str(tenant.es_id)),
        versions=True,
    )
    hit = found.get(entry_id)
    if hit is None or hit["_source"].get("tenant_id") != str(tenant.es_id):
        raise NotFound(f"no catalog entry {entry_id}", field="id")
    return hit


def _store(tenant: Tenant, prepared, *, if_version: tuple[int, int] | None = None, create_only: bool = False) -> bool:
    embed_into([prepared])
    with non_english_marked([prepared]):
        return store.memory_index(
            writer_es_client(),
            memory_type="catalog",
            memory_id=prepared.memory_id,
            source=prepared.source,
            refresh=True,
            if_version=if_version,
            create_only=create_only,
        )


def catalog_entry_write(*, tenant: Tenant, actor: str, **fields: Any) -> dict[str, Any]:
    """Add an entry. An external id naming a stored entry is the same write again (answered as stored)
    or a 409 pointing at the edit: a write never replaces an entry in place (memory/services/gate.py)."""
    if not tenant.is_active:
        raise NotFound(f"tenant {tenant.slug} is deactivated")
    prepared = catalog_prepare(tenant_id=str(tenant.es_id), **fields)
    if not _store(tenant, prepared, create_only=True):
        hit = catalog_entry_fetch(tenant=tenant, entry_id=prepared.memory_id)
        if not gate.same_content("catalog", hit["_source"], prepared.source):
            raise gate.existing_refused(
                memory_type="catalog", external_id=prepared.source.get("external_id") or "", memory_id=hit["_id"]
            )
        return {"id": hit["_id"], "type": "catalog", **hit["_source"]}
    audit_record(tenant=tenant, actor=actor, action="catalog.write", target=prepared.memory_id)
    return stored_view(prepared)


def catalog_entry_update(
    *, tenant: Tenant, entry_id: Any, actor: str, if_match: str | None = None, **changes: Any
) -> dict[str, Any]:
    """Edit an entry in place. ``if_match`` must still be its ETag (412 otherwise), checked as a
    compare-and-set: the entry is written only over the exact stored version whose ETag matched
    (``if_seq_no``), re-read (real time) and checked again when it changed in between — so of editors
    holding one valid ETag one succeeds and the others get 412, as for facts."""
    unknown = sorted(set(changes) - set(CATALOG_FIELDS))
    if unknown:
        raise ValidationFailed(f"a catalog entry has no field {unknown[0]}", field=unknown[0])
    found = catalog_entry_fetch(tenant=tenant, entry_id=entry_id)
    entry_id = found["_id"]
    expected = if_match.strip() if if_match is not None else None
    for attempt in range(EDIT_ATTEMPTS):
        hit = store.memory_get_current(tenant_es_client(tenant=tenant), index=found["_index"], memory_id=entry_id)
        if hit is None or hit["_source"].get("tenant_id") != str(tenant.es_id):
            raise NotFound(f"no catalog entry {entry_id}", field="id")
        source = hit["_source"]
        if expected is not None and expected not in (memory_etag(source), "*"):
            raise PreconditionFailed(f"catalog entry {entry_id} changed since it was read (If-Match does not match)")
        merged = {name: changes.get(name, source.get(name)) for name in CATALOG_FIELDS}
        prepared = catalog_prepare(
            tenant_id=str(tenant.es_id), at=source.get("created_at"), external_id=source.get("external_id"), **merged
        )
        prepared = PreparedMemory("catalog", entry_id, prepared.source)  # the same entry, not a new one
        try:
            _store(tenant, prepared, if_version=(hit["_seq_no"], hit["_primary_term"]))
        except ConflictError:
            edit_backoff(attempt)
            continue  # changed since it was read: read it and check the ETag again
        audit_record(tenant=tenant, actor=actor, action="catalog.update", target=entry_id)
        return stored_view(prepared)
    raise Conflict(f"catalog entry {entry_id} kept changing while it was edited; read it again")


def catalog_entry_delete(*, tenant: Tenant, entry_id: Any, actor: str) -> dict[str, Any]:
    """Delete the entry with every copy of its text: in older index generations, and every stored answer
    in the tenant (replayed to retries for 24 hours) that holds its id or text — the POST that created
    it, any subject's recall or ``/turn`` that found it."""
    hit = catalog_entry_fetch(tenant=tenant, entry_id=entry_id)
    entry_id = hit["_id"]
    copies = store.memories_scan(
        tenant_es_client(tenant=tenant),
        memory_types=("catalog",),
        query=queries.ids_within([entry_id], tenant_read_filters(str(tenant.es_id))),
        every_generation=True,
    )
    store.memories_delete(writer_es_client(), [(hit["_index"], entry_id), *((c["_index"], c["_id"]) for c in copies)])
    # Its POST's answer (the tenant's), and every subject's answer that recalled it, whichever token asked.
    idempotency = idempotency_tenant_records_forget(
        tenant_id=str(tenant.es_id),
        subjects=MemorySubject.objects.filter(tenant=tenant).values_list("external_id", flat=True),
        matches=stored_answer_matcher(entry_id, hit["_source"]),
    )
    receipt = forget_receipt(
        deleted={"catalog": [entry_id]}, runs=[], idempotency=idempotency, cache_entries=query_caches_clear()
    )
    audit_record(tenant=tenant, actor=actor, action="catalog.delete", target=entry_id)
    return {"id": entry_id, "type": "catalog", "forgotten": True, "receipt": receipt}
