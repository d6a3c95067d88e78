"""Deciding proposals in service-level tests: as the person (or another principal), naming the version
the test read — as the dashboard, REST and MCP name the version they showed — and then, as they do,
approving the consolidation run a decision completed (``Decided.runs_complete``). Each helper returns
what the interface shows."""

from __future__ import annotations

from typing import Any

from memory.authority import Principal
from memory.consolidation.run import consolidation_runs_settle
from memory.selectors import memory_get, proposal_hits
from memory.services.review import Decided, proposal_accept, proposal_reject, proposals_decide

PERSON_REVIEWER = Principal(
    authority="person", written_by="person:1", identity="person:1", may_review=True, is_person=True
)
#: An agent's token without the review scope: it may write, never decide.
AGENT_WRITER = Principal(authority="agent", written_by="token:svc", identity="token:1")


def version_of(subject: Any, proposal_id: str) -> str:
    return memory_get(subject=subject, memory_id=proposal_id).get("version", '"decided"')


def settled(subject: Any, decided: Decided, actor: str) -> dict[str, Any]:
    consolidation_runs_settle(subject=subject, run_ids=decided.runs_complete, actor=actor)
    return decided.shown


def accept(subject: Any, proposal_id: str, *, reviewer: Principal = PERSON_REVIEWER, **kwargs: Any) -> dict[str, Any]:
    version = kwargs.pop("version", None) or version_of(subject, proposal_id)
    kwargs.setdefault("actor", "person:1")
    decided = proposal_accept(subject=subject, proposal_id=proposal_id, reviewer=reviewer, version=version, **kwargs)
    return settled(subject, decided, kwargs["actor"])


def reject(subject: Any, proposal_id: str, *, reviewer: Principal = PERSON_REVIEWER, **kwargs: Any) -> dict[str, Any]:
    version = kwargs.pop("version", None) or version_of(subject, proposal_id)
    kwargs.setdefault("actor", "person:1")
    decided = proposal_reject(subject=subject, proposal_id=proposal_id, reviewer=reviewer, version=version, **kwargs)
    return settled(subject, decided, kwargs["actor"])


def decide_all(
    subject: Any, decision: str, written_by: str, *, reviewer: Principal = PERSON_REVIEWER, **kwargs: Any
) -> dict[str, Any]:
    """Every proposal of ``written_by`` as a page shows them now, decided at once."""
    shown = {
        hit["_id"]: version_of(subject, hit["_id"])
        for hit in proposal_hits(subject=subject, written_by=written_by, limit=500)
    }
    kwargs.setdefault("actor", "person:1")
    decided = proposals_decide(
        subject=subject, decision=decision, written_by=written_by, reviewer=reviewer, shown=shown, **kwargs
    )
    return settled(subject, decided, kwargs["actor"])
