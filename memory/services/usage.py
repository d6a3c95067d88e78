"""Recording that recall returned a fact or playbook: ``use_count`` + 1 and ``last_used_at`` = now, atomically."""

from __future__ import annotations

from memory.elastic import store
from tenants.selectors import writer_es_client

from .prepare import now

BUMPED_TYPES = ("semantic", "procedural", "archive")


def memories_usage_record(*, targets: list[tuple[str, str]]) -> int:
    """Bump (concrete index, id) pairs; returns how many still existed. Safe to run concurrently."""
    writer = writer_es_client()
    at = now().isoformat()
    return sum(store.memory_usage_bump(writer, index=index, memory_id=memory_id, at=at) for index, memory_id in targets)
