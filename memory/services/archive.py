"""Nightly: move superseded facts out of the hot semantic index into the archive (same id, same source)."""

from __future__ import annotations

from memory.elastic import store
from tenants.models import Tenant
from tenants.selectors import tenant_es_client, writer_es_client


def superseded_facts_archive(*, tenant: Tenant) -> int:
    """Copy each superseded fact to the archive, then delete it from the hot index; returns how many moved.

    Copy first, delete second: a crash in between leaves the fact in both, and
    the next run finishes the move (indexing the same id again is harmless).
    """
    reader = tenant_es_client(tenant=tenant)
    writer = writer_es_client()
    query = {"bool": {"filter": [{"term": {"tenant_id": str(tenant.es_id)}}, {"exists": {"field": "superseded_by"}}]}}
    hits = list(store.memories_scan(reader, memory_types=("semantic",), query=query, include_embedding=True))
    if not hits:
        return 0
    failures = store.memories_bulk_index(
        writer, [("archive", hit["_id"], {**hit["_source"], "memory_type": "archive"}) for hit in hits]
    )
    if failures:
        raise RuntimeError(f"could not archive {len(failures)} fact(s): {failures[:3]}")
    store.memories_delete(writer, [(hit["_index"], hit["_id"]) for hit in hits])
    return len(hits)
