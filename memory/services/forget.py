"""Forgetting: a real, complete deletion — one memory, all of a subject's, or a whole tenant's.

The audit record (who, what, how many) goes to the SQL database, never into a
recall corpus, and never carries the forgotten text.
"""

from __future__ import annotations

from typing import Any

from atlas_site.errors import NotFound, ValidationFailed
from memory.elastic import store
from memory.elastic.indices import MEMORY_TYPES
from memory.elastic.queries import own_documents_filter
from memory.scope import SubjectScope
from tenants.models import MemorySubject, Tenant
from tenants.selectors import tenant_es_client, writer_es_client
from tenants.services import audit_record

from .languages import non_english_census

ALL_INDICES = tuple(MEMORY_TYPES)
OWNED_INDICES = tuple(t for t in MEMORY_TYPES if t != "catalog")


def memory_forget(*, subject: MemorySubject, memory_id: Any, actor: str) -> dict[str, Any]:
    """Delete one of the subject's memories (a shared catalog entry is not theirs to forget)."""
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise ValidationFailed("memory_id is required", field="memory_id")
    scope = SubjectScope.of(subject)
    found = store.memories_fetch(
        scope.reader(), ids=[memory_id], memory_types=OWNED_INDICES, filters=scope.read_filters()
    )
    hit = found.get(memory_id)
    if hit is None or hit["_source"].get("user_id") != scope.user_id:
        raise NotFound(f"no memory {memory_id} for this user", field="memory_id")
    memory_id = hit["_id"]
    store.memories_delete(scope.writer(), [(hit["_index"], memory_id)])
    memory_type = hit["_source"].get("memory_type")
    audit_record(
        tenant=subject.tenant,
        actor=actor,
        action="memory.forget",
        target=f"{subject}:{memory_id}",
        detail={"memory_type": memory_type},
    )
    return {"id": memory_id, "type": memory_type, "forgotten": True}


def _delete_all(reader, writer, query: dict[str, Any], memory_types: tuple[str, ...]) -> dict[str, int]:
    """Scan and delete until nothing matches (a write racing the scan is caught by the next pass)."""
    counts: dict[str, int] = {}
    for _ in range(10):
        targets = [
            (hit["_index"], hit["_id"], hit["_source"].get("memory_type", "?"))
            for hit in store.memories_scan(reader, memory_types=memory_types, query=query)
        ]
        if not targets:
            return counts
        store.memories_delete(writer, [(index, memory_id) for index, memory_id, _ in targets])
        for _, _, memory_type in targets:
            counts[memory_type] = counts.get(memory_type, 0) + 1
    raise RuntimeError("memories kept appearing while forgetting; try again")


def subject_memories_forget(*, subject: MemorySubject, actor: str) -> dict[str, int]:
    """Delete every memory of the subject in every index, the archive included."""
    scope = SubjectScope.of(subject)
    query = own_documents_filter(tenant_id=scope.tenant_id, user_id=scope.user_id)
    counts = _delete_all(scope.reader(), scope.writer(), query, OWNED_INDICES)
    non_english_census(tenant=subject.tenant, subjects=[subject])  # forgotten, so not remembered as written
    audit_record(
        tenant=subject.tenant,
        actor=actor,
        action="memory.forget_subject",
        target=str(subject),
        detail={"deleted": counts},
    )
    return counts


def tenant_memories_forget(*, tenant: Tenant, actor: str) -> dict[str, int]:
    """Delete every memory of the tenant, its catalog included (before deactivating it: that revokes its key)."""
    reader = tenant_es_client(tenant=tenant)
    query = {"term": {"tenant_id": str(tenant.es_id)}}
    counts = _delete_all(reader, writer_es_client(), query, ALL_INDICES)
    non_english_census(tenant=tenant)
    audit_record(
        tenant=tenant, actor=actor, action="memory.forget_tenant", target=tenant.slug, detail={"deleted": counts}
    )
    return counts
