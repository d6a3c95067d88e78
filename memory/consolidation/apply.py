"""Applying a stored plan through the ordinary write services, one function per kind of item; safe to
repeat (derived ids, per-run event ids) and speaking with the authority ``consolidation``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from atlas_site.errors import Conflict, NotFound
from memory.authority import CONSOLIDATION, is_pending
from memory.services import writes
from memory.services.proposal_keys import proposal_key
from memory.services.review import rejected_keys
from tenants.models import MemorySubject

#: What plan_apply reports, in this order (the kinds that stayed empty are left out).
CHANGE_KINDS = (
    "facts",
    "supersessions",
    "superseded",
    "confirmations",
    "playbooks",
    "refinements",
    "outcomes",
    "gone",
    "replaced",
    "pending",
    "refused",
)


def _events(window_key: str) -> dict[str, str]:
    return {"confirm": f"{window_key}:confirm", "outcome": f"{window_key}:outcome", "refine": f"{window_key}:refine"}


@dataclass
class _Application:
    """One application of a plan: for whom, as whom, and what it changed so far."""

    subject: MemorySubject
    at: str
    events: dict[str, str]
    writer: dict[str, str]
    hold: bool
    renew: Callable[[], Any] | None
    refused: set[str]
    changes: dict[str, list[str]] = field(default_factory=lambda: {kind: [] for kind in CHANGE_KINDS})

    @property
    def by_run(self) -> dict[str, Any]:
        return {**self.writer, "review": self.hold}

    def rejected(self, memory_type: str, item: dict[str, Any]) -> bool:
        """Whether the person rejected this item in the queue (a run held for review is applied after they
        decided): it stays out, listed under ``refused``."""
        if proposal_key(memory_type, item) in self.refused:
            self.changes["refused"].append(item["key"])
            return True
        return False

    def step(self, gone_id: str, write: Callable[[], Any]) -> Any:
        """One write; what was forgotten meanwhile is ``gone``, what was replaced meanwhile ``replaced``."""
        try:
            result = write()
        except NotFound:
            self.changes["gone"].append(gone_id)
            return None
        except Conflict as conflict:
            self.changes["replaced"].append(f"{gone_id}: {conflict.message}")
            return None
        if self.renew is not None:
            self.renew()
        return result


def plan_apply(
    *, subject: MemorySubject, plan: dict[str, Any], renew: Any = None, run_id: Any = None, hold: bool = False
) -> dict[str, list[str]]:
    """Write ``plan`` through the write services; safe to repeat: every document id is derived from its
    item's key, and every update carries the run's event id (applied once). An item whose fact,
    playbook or episodes were forgotten since the plan was made is skipped (listed under ``gone``); a
    supersession of a fact something else replaced since (a person's edit, an agent) is skipped too —
    a fact has one successor — and listed under ``replaced`` with the reason, naming the newest version.

    What it writes speaks with the authority ``consolidation`` (``written_by`` run:``run_id``): under the
    tenant's review mode its facts and playbooks wait as pending proposals, and a supersession of a fact
    the person wrote is always one (writes.fact_store). ``hold``: every one of them is a proposal.
    An item the person rejected before is left out (``refused``)."""
    name = f"run:{run_id}" if run_id is not None else "run"
    app = _Application(
        subject=subject,
        at=plan["planned_at"],
        events=_events(plan["window_key"]),
        writer={"authority": CONSOLIDATION, "written_by": name, "writer_id": name},
        hold=hold,
        renew=renew,
        refused=rejected_keys(subject=subject),
    )
    # One refresh per index, with its last write: the run's documents become searchable together.
    _created_apply(app, plan["facts"], memory_type="semantic", kind="facts", write=_fact_write)
    _supersessions_apply(app, plan["supersessions"])
    _updates_apply(app, plan["confirmations"], kind="confirmations", target="fact_id", write=_fact_confirm)
    _created_apply(app, plan["playbooks"], memory_type="procedural", kind="playbooks", write=_playbook_write)
    _updates_apply(app, plan["refinements"], kind="refinements", target="playbook_id", write=_playbook_refine)
    _updates_apply(app, plan["outcomes"], kind="outcomes", target="playbook_id", write=_playbook_outcome)
    return {k: v for k, v in app.changes.items() if v}


def _created_apply(
    app: _Application, items: list[dict[str, Any]], *, memory_type: str, kind: str, write: Callable[..., Any]
) -> None:
    """New facts or playbooks: each stored current (``kind``) or as a pending proposal; the last one
    refreshes the index."""
    for n, item in enumerate(items):
        if app.rejected(memory_type, item):
            continue
        written = app.step(item["key"], lambda item=item, n=n: write(app, item, refresh=n == len(items) - 1))
        if written:
            app.changes["pending" if is_pending(written) else kind].append(written["id"])


def _updates_apply(
    app: _Application, items: list[dict[str, Any]], *, kind: str, target: str, write: Callable[..., Any]
) -> None:
    """Updates of stored facts or playbooks (the ``target`` field names one), each applied once per run."""
    for n, item in enumerate(items):
        if app.step(item[target], lambda item=item, n=n: write(app, item, n)):
            app.changes[kind].append(item[target])


def _supersessions_apply(app: _Application, items: list[dict[str, Any]]) -> None:
    for item in items:
        if app.rejected("semantic", item):
            continue
        written = app.step(
            item["key"],
            lambda item=item: writes.fact_write(
                subject=app.subject,
                text=item["text"],
                fact_type=item["fact_type"],
                confidence=item["confidence"],
                source_episodes=item["source_episodes"],
                supersedes=item["targets"],
                contradiction=item["contradiction"],
                at=app.at,
                derived_key=item["key"],
                applied_event=app.events["confirm"],
                **item.get("scope", {}),
                **app.by_run,
            ),
        )
        if written and is_pending(written):
            app.changes["pending"].append(written["id"])
        elif written:
            app.changes["supersessions"].append(written["id"])
            app.changes["superseded"] += item["targets"]


def _fact_write(app: _Application, fact: dict[str, Any], *, refresh: bool) -> Any:
    return writes.fact_write(
        subject=app.subject,
        text=fact["text"],
        fact_type=fact["fact_type"],
        confidence=fact["confidence"],
        source_episodes=fact["source_episodes"],
        at=app.at,
        refresh=refresh,
        derived_key=fact["key"],
        applied_event=app.events["confirm"],
        **fact.get("scope", {}),  # the scope of the episodes it was distilled from (validation.scope_ok)
        **app.by_run,
    )


def _playbook_write(app: _Application, item: dict[str, Any], *, refresh: bool) -> Any:
    return writes.playbook_write(
        subject=app.subject,
        name=item["name"],
        trigger_text=item["trigger_text"],
        description=item["description"] or None,
        steps=item["steps"],
        at=app.at,
        refresh=refresh,
        derived_key=item["key"],
        **item.get("scope", {}),
        **app.by_run,
    )


def _fact_confirm(app: _Application, item: dict[str, Any], _n: int) -> Any:
    confirmed = writes.fact_confirm(
        subject=app.subject,
        fact_id=item["fact_id"],
        source_episodes=item["source_episodes"],
        boost=settings.ATLAS_CONSOLIDATION_CONFIRM_BOOST,
        event_id=app.events["confirm"],
    )
    return confirmed or True


def _playbook_refine(app: _Application, item: dict[str, Any], _n: int) -> Any:
    return writes.playbook_outcome_record(
        subject=app.subject,
        playbook_id=item["playbook_id"],
        success=None,
        refined_steps=item["steps"],
        event_id=app.events["refine"],
        **app.writer,
    )


def _playbook_outcome(app: _Application, item: dict[str, Any], n: int) -> Any:
    return writes.playbook_outcome_record(
        subject=app.subject,
        playbook_id=item["playbook_id"],
        success=item["success"],
        event_id=f"{app.events['outcome']}:{n}",
    )
