"""Many memories for one subject, stored cheaply: the write path's documents without their embeddings.

The write path spends ≈ 30 ms per memory in three embedding models; a list, a count or a page does not read
a vector, and the mappings do not require one (a memory without a vector is listed, only never found by a
kNN leg). So these are the documents ``fact_prepare`` builds — ownership from the subject's scope, the same
fields a write stores — bulk-indexed with the service writer key, minus the vector fields. Used by the
pagination tests and benchmarks/dashboard_pages.py (``--deep-memories``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.elastic import store
from memory.scope import SubjectScope
from memory.services.prepare import fact_prepare
from tenants.models import MemorySubject

#: Memories per created_at: three share each instant, so page boundaries fall inside ties (neither 25 nor
#: 200 is a multiple of 3) and the memory_id tie-break decides the order there.
TIE_GROUP = 3
BULK_CHUNK = 1000


def facts_bulk_store(
    *, subject: MemorySubject, count: int, start: datetime = datetime(2024, 1, 1, tzinfo=UTC)
) -> list[str]:
    """Store ``count`` current facts ``bulk fact <n>`` for ``subject``, ``TIE_GROUP`` per second from
    ``start``; returns their ids in the lists' order (created_at desc, memory_id desc)."""
    scope = SubjectScope.of(subject)
    prepared = [
        fact_prepare(
            tenant_id=scope.tenant_id,
            user_id=scope.user_id,
            text=f"bulk fact {n}",
            fact_type="preference",
            at=start + timedelta(seconds=n // TIE_GROUP),
            external_id=f"bulk-{n}",
        )
        for n in range(count)
    ]
    items = [(p.memory_type, p.memory_id, p.source) for p in prepared]
    for begin in range(0, len(items), BULK_CHUNK):
        failures = store.memories_bulk_index(scope.writer(), items[begin : begin + BULK_CHUNK])
        assert not failures, failures[:3]
    ordered = sorted(prepared, key=lambda p: (p.source["created_at"], p.memory_id), reverse=True)
    return [p.memory_id for p in ordered]
