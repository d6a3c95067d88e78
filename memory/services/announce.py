"""What the memory app tells webhooks (webhooks.services.event_emit), one function per event kind, each
called where its write path has Elasticsearch's acknowledgement. The dependency is one way: webhooks
imports nothing of memory. Event ids derive from what happened (a memory's id and version …), so a
retried write that lands on the same document announces the same event, never a second one.

No text of a forgotten memory is ever announced: memory.forgotten and subject.forgotten carry ids and the
receipt; forgetting also scrubs the text from the events recorded before (webhook_events_forget)."""

from __future__ import annotations

from typing import Any

from memory.elastic.mappings import VECTOR_FIELDS
from tenants.models import MemorySubject
from webhooks import events
from webhooks.services import event_emit, webhook_events_forget

#: Stamped on every document, useless to a receiver (the tenant's and subject's ids are the event's own),
#: and a turn's embedding context: the previous turn's text, which is that turn's to announce (and forget).
HIDDEN_FIELDS = frozenset({"tenant_id", "user_id", "embedding_context", *VECTOR_FIELDS})


def memory_view(memory_id: str, memory_type: str, source: dict[str, Any]) -> dict[str, Any]:
    return {"id": memory_id, "type": memory_type, **{k: v for k, v in source.items() if k not in HIDDEN_FIELDS}}


def memory_stored_announce(*, subject: MemorySubject, memory_id: str, memory_type: str, source: dict[str, Any]) -> None:
    """A memory stored: memory.created, or proposal.created when it waits for the person's review; a fact
    stored over others (``supersedes``) also supersedes them (memory.superseded)."""
    pending = source.get("review_state") == "pending"
    kind = events.PROPOSAL_CREATED if pending else events.MEMORY_CREATED
    event_emit(
        tenant=subject.tenant,
        type=kind,
        subject=subject.external_id,
        memory_id=memory_id,
        key=f"{memory_id}:{source.get('created_at')}",
        data={"proposal" if pending else "memory": memory_view(memory_id, memory_type, source)},
    )
    if not pending and source.get("supersedes"):
        supersession_announce(
            subject=subject,
            old_ids=list(source["supersedes"]),
            new_id=memory_id,
            contradiction=source.get("contradiction") or "natural",
        )


def supersession_announce(*, subject: MemorySubject, old_ids: list[str], new_id: str, contradiction: str) -> None:
    """Facts replaced by ``new_id`` (ids only: the new version's text is in its own memory.created)."""
    for old_id in old_ids:
        event_emit(
            tenant=subject.tenant,
            type=events.MEMORY_SUPERSEDED,
            subject=subject.external_id,
            key=f"{old_id}->{new_id}",
            data={"memory_id": old_id, "superseded_by": new_id, "contradiction": contradiction},
        )


def memory_updated_announce(
    *, subject: MemorySubject, memory_id: str, memory_type: str, source: dict[str, Any], change: str, key: str | None
) -> None:
    """A memory changed in place (``change``: ``steps`` — a playbook's next version —, ``confirmed`` — a
    fact a later conversation confirmed)."""
    event_emit(
        tenant=subject.tenant,
        type=events.MEMORY_UPDATED,
        subject=subject.external_id,
        memory_id=memory_id,
        key=key,
        data={"change": change, "memory": memory_view(memory_id, memory_type, source)},
    )


def proposal_decided_announce(
    *,
    subject: MemorySubject,
    proposal_id: str,
    memory_type: str,
    decision: str,
    replaces: list[str],
    merged: bool = False,
) -> None:
    """A proposal accepted or rejected (ids only; an accepted one's text is what proposal.created showed).
    A rejected proposal's text is scrubbed from its proposal.created event, and so is a ``merged`` one's
    (steps accepted into their playbook: the proposal is gone and its steps are the playbook's, in the
    playbook's memory.updated — so forgetting the playbook, which scrubs the playbook's events, leaves
    none of them in an event of the proposal's)."""
    if decision == "rejected" or merged:
        webhook_events_forget(tenant=subject.tenant, memory_ids=[proposal_id])
    event_emit(
        tenant=subject.tenant,
        type=events.PROPOSAL_DECIDED,
        subject=subject.external_id,
        key=f"{proposal_id}:decided",
        data={"proposal_id": proposal_id, "type": memory_type, "decision": decision, "replaces": replaces},
    )


def memory_forgotten_announce(*, subject: MemorySubject, memory_id: str, memory_type: str, receipt: dict) -> None:
    """One memory forgotten: its id, type and the receipt — never its text, which also leaves every event."""
    webhook_events_forget(tenant=subject.tenant, memory_ids=[memory_id])
    event_emit(
        tenant=subject.tenant,
        type=events.MEMORY_FORGOTTEN,
        subject=subject.external_id,
        data={"memory_id": memory_id, "type": memory_type, "receipt": receipt},
    )


def memories_forgotten_announce(*, subject: MemorySubject, deleted: dict[str, list[str]], receipt: dict) -> None:
    """Memories forgotten together (a filter's, docs/scoping.md): one memory.forgotten each, as forgetting
    them one by one would announce — the receipt is the whole forgetting's — and none of their text stays
    in an event."""
    # dict: an id deleted from two generations of an index is one memory, announced once.
    forgotten = list(
        dict.fromkeys((memory_id, memory_type) for memory_type, ids in deleted.items() for memory_id in ids)
    )
    if not forgotten:
        return
    webhook_events_forget(tenant=subject.tenant, memory_ids=[memory_id for memory_id, _ in forgotten])
    for memory_id, memory_type in forgotten:
        event_emit(
            tenant=subject.tenant,
            type=events.MEMORY_FORGOTTEN,
            subject=subject.external_id,
            data={"memory_id": memory_id, "type": memory_type, "receipt": receipt},
        )


def subject_forgotten_announce(*, subject: MemorySubject, counts: dict[str, int], receipt: dict) -> None:
    """Every memory of a subject forgotten: counts and the receipt; no event keeps any of their text."""
    webhook_events_forget(tenant=subject.tenant, subject=subject.external_id)
    event_emit(
        tenant=subject.tenant,
        type=events.SUBJECT_FORGOTTEN,
        subject=subject.external_id,
        data={"counts": counts, "receipt": receipt},
    )


def consolidation_finished_announce(
    *, subject: MemorySubject, run_id: int, status: str, episodes: int, started_by: str, attempt: int
) -> None:
    """A consolidation run ended (done, failed, or waiting for review): no text (its error may quote one)."""
    event_emit(
        tenant=subject.tenant,
        type=events.CONSOLIDATION_FINISHED,
        subject=subject.external_id,
        key=f"run:{run_id}:{status}:{attempt}",
        data={"run_id": run_id, "status": status, "episodes": episodes, "started_by": started_by},
    )
