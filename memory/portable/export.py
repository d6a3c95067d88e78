"""Exporting memories in the documented format: a header line, then one memory per line, oldest first.

A read: every subject's memories are read with that subject's own key, the catalog with the tenant's.
Ids are kept as they are here (the importer derives its own ids from them and keeps them as external
ids), links (supersedes, superseded_by, source_episodes, proposal_for, previous_turn) name those ids,
and no vector leaves: the importer embeds again with its own models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.utils import timezone

from memory.elastic import queries, store
from memory.scope import SubjectScope, tenant_read_filters
from memory.scoping import filters_parse
from memory.selectors import SHOWN_SCOPE, TYPE_FIELDS
from tenants.models import MemorySubject, Tenant

from . import FORMAT, VERSION

SUBJECT_TYPES = ("episodic", "semantic", "procedural", "archive")
COMMON = ("external_id", "authority", "written_by", "review_state", "proposal_for")
# The type's own fields, as every read answers them; links to other memories are exported under their
# own names (superseded_by as one id, previous_turn), and what is not a read field is added. The dates a
# text names (mentions) are not: the import resolves them again from the text and its time.
KEPT = {
    kind: tuple(f for f in TYPE_FIELDS[kind] if f not in ("superseded_by", "previous_turn_id", "mentions"))
    + (("last_confirmed_at",) if kind == "semantic" else ())
    + (SHOWN_SCOPE if kind == "episodic" else SHOWN_SCOPE[1:] if kind != "catalog" else ())
    for kind in ("episodic", "semantic", "procedural", "catalog")
}


def export_header(*, tenant: Tenant, subject: MemorySubject | None = None) -> dict[str, Any]:
    header = {"format": FORMAT, "version": VERSION, "exported_at": timezone.now().isoformat(), "tenant": tenant.slug}
    if subject is not None:
        header["subject"] = subject.external_id
    return header | {"source": "atlas-memory"}


def memory_exported(hit: dict[str, Any], *, subject_name: str | None) -> dict[str, Any]:
    """One stored memory as an export line (archived facts are facts: the archive is where they live)."""
    source = hit["_source"]
    memory_type = "semantic" if source.get("memory_type") == "archive" else source.get("memory_type")
    record: dict[str, Any] = {"id": hit["_id"], "type": memory_type}
    if subject_name is not None:
        record["subject"] = subject_name
    record |= {"text": source.get("text"), "created_at": source.get("created_at")}
    for name in (*COMMON, *KEPT.get(memory_type, ())):
        value = source.get(name)
        if value is not None and value != []:
            record[name] = value
    if memory_type == "semantic":
        successors = source.get("superseded_by") or []
        successors = successors if isinstance(successors, list) else [successors]
        if successors:  # one successor per fact; a fork older versions left keeps its newest link
            record["superseded_by"] = successors[-1]
    if memory_type == "episodic" and source.get("previous_turn_id"):
        record["previous_turn"] = source["previous_turn_id"]
    if memory_type == "procedural" and not record.get("description"):
        record.pop("description", None)
    if memory_type == "catalog":
        for name in ("authority", "written_by", "review_state", "proposal_for"):
            record.pop(name, None)
    return record


def subject_memories_export(*, subject: MemorySubject, filters: Any = None) -> Iterator[dict[str, Any]]:
    """The subject's memories — every type, replaced and archived facts and pending proposals too —
    oldest first, read a page at a time with the subject's key; ``filters``: only those of a scope
    (memory/scoping.py)."""
    scope = SubjectScope.of(subject)
    query = queries.list_query(filters=[*scope.read_filters(), *filters_parse(filters)], memory_types=None)
    for hit in store.memories_scan(scope.reader(), memory_types=SUBJECT_TYPES, query=query, page=200):
        yield memory_exported(hit, subject_name=subject.external_id)


def catalog_export(*, tenant: Tenant) -> Iterator[dict[str, Any]]:
    from tenants.selectors import tenant_es_client

    query = queries.list_query(filters=tenant_read_filters(str(tenant.es_id)), memory_types=None)
    for hit in store.memories_scan(tenant_es_client(tenant=tenant), memory_types=("catalog",), query=query, page=200):
        yield memory_exported(hit, subject_name=None)


def memories_export(
    *, tenant: Tenant, subject: MemorySubject | None = None, filters: Any = None
) -> Iterator[dict[str, Any]]:
    """The export's lines as objects: the header, then one subject's memories, or (no ``subject``) every
    active subject's in turn and the tenant's catalog. ``filters`` (memory/scoping.py) keeps the memories
    of one scope, checked before the header is made (a bad filter is refused, not half an export); the
    catalog has no scope and is left out then."""
    filters_parse(filters)
    return _export_lines(tenant=tenant, subject=subject, filters=filters)


def _export_lines(*, tenant: Tenant, subject: MemorySubject | None, filters: Any) -> Iterator[dict[str, Any]]:
    yield export_header(tenant=tenant, subject=subject)
    if subject is not None:
        yield from subject_memories_export(subject=subject, filters=filters)
        return
    for each in tenant.subjects.filter(is_active=True).order_by("external_id"):
        yield from subject_memories_export(subject=each, filters=filters)
    if not filters:
        yield from catalog_export(tenant=tenant)


def export_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
