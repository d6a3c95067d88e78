"""Recording that recall returned a fact or playbook: ``use_count`` + 1 and ``last_used_at`` = now, atomically."""

from __future__ import annotations

import logging

from django.conf import settings

from memory.elastic import store
from tenants.selectors import writer_es_client

from .prepare import now

BUMPED_TYPES = ("semantic", "procedural", "archive")

log = logging.getLogger(__name__)


def memories_usage_record(*, targets: list[tuple[str, str]]) -> int:
    """Bump (concrete index, id) pairs; returns how many still existed. Safe to run concurrently."""
    writer = writer_es_client()
    at = now().isoformat()
    return sum(store.memory_usage_bump(writer, index=index, memory_id=memory_id, at=at) for index, memory_id in targets)


def recall_usage_schedule(*, targets: list[tuple[str, str]]) -> None:
    """Schedule the bump of what an agent's recall returned (``RecallResult.targets``), off the request path.

    Only the agents' interfaces (REST, MCP) call this: a person's own searches, an operator's look,
    evaluations and consolidation's neighbour search are not the agent using a memory."""
    if not targets or settings.ATLAS_USAGE_RECORDING == "off":
        return
    from memory.tasks import memories_usage_record_task  # tasks import this module's service

    try:
        memories_usage_record_task.delay([list(t) for t in targets])
    except Exception:  # the bump is best effort; recall has already answered
        log.exception("could not schedule the use-count bump of %d memories", len(targets))
