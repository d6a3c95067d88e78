"""Repairing supersessions a crash left half-done (the new fact stored, the old one not yet pointed at it)."""

from __future__ import annotations

import logging

from memory.elastic import store
from memory.elastic.queries import own_documents_filter
from tenants.models import Tenant
from tenants.selectors import tenant_es_client, writer_es_client

log = logging.getLogger(__name__)


def supersessions_reconcile(*, tenant: Tenant) -> list[tuple[str, str]]:
    """Finish every supersession of ``tenant`` whose old fact does not point at its replacement.

    Returns the (old id, new id) links it repaired. Idempotent: the link update
    is an append-if-absent.
    """
    reader = tenant_es_client(tenant=tenant)
    writer = writer_es_client()
    tenant_id = str(tenant.es_id)
    repaired: list[tuple[str, str]] = []
    query = {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"exists": {"field": "supersedes"}}]}}
    for hit in store.memories_scan(reader, memory_types=store.FACT_TYPES_INDICES, query=query):
        new_id, source = hit["_id"], hit["_source"]
        targets = store.memories_fetch(
            reader,
            ids=list(source.get("supersedes") or []),
            memory_types=store.FACT_TYPES_INDICES,
            filters=[own_documents_filter(tenant_id=tenant_id, user_id=source["user_id"])],
        )
        for old_id, old in targets.items():
            links = old["_source"].get("superseded_by") or []
            if new_id in (links if isinstance(links, list) else [links]):
                continue
            store.memory_supersede_link(
                writer,
                index=old["_index"],
                old_id=old_id,
                new_id=new_id,
                at=source["created_at"],
                harsh=source.get("contradiction") == "harsh",
            )
            repaired.append((old_id, new_id))
    if repaired:
        log.warning("repaired %d half-finished supersession(s) in tenant %s", len(repaired), tenant.slug)
    return repaired
