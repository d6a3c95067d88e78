"""What consolidation tests say and read: turns of a conversation, the subject's stored memories, the
watermark, a scripted mass change, and a run held for review (no LLM needed: the review tests of each
interface use it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from memory.consolidation.apply import plan_apply
from memory.models import ConsolidationRun, ConsolidationState
from memory.selectors import memory_list
from memory.services import writes
from tests.fake_llm import empty_plan, fact

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def say(subject, text: str, minutes: int, session: str = "s1") -> str:
    return writes.episode_write(subject=subject, text=text, session_id=session, at=T0 + timedelta(minutes=minutes))[
        "id"
    ]


def stored(subject, memory_type: str = "semantic", include_superseded: bool = True) -> list[dict]:
    return memory_list(
        subject=subject, memory_types=[memory_type], include_superseded=include_superseded, page_size=200
    )["memories"]


def texts(memories) -> list[str]:
    return sorted(m["text"] for m in memories)


def watermark(subject):
    state = ConsolidationState.objects.filter(subject=subject).first()
    return state.watermark_at if state else None


def run_episode(subject) -> str:
    return stored(subject, "episodic")[0]["id"]


def mass_change_scripted(subject, llm, settings, *, facts: int, replaced: int, free: int) -> list[dict]:
    """``facts`` facts of ``subject``, and the LLM scripted to replace the first ``replaced`` of them — over
    the mass-change guard's share (30 %) once more than ``free`` are replaced."""
    settings.ATLAS_CONSOLIDATION_MAX_CHANGE_SHARE = 0.3
    settings.ATLAS_CONSOLIDATION_MAX_CHANGE_FREE = free
    settings.ATLAS_CONSOLIDATION_RELATED_K = 20
    stored = [
        writes.fact_write(subject=subject, text=f"Maya's fact number {n}: likes colour {n}") for n in range(facts)
    ]
    episode = say(subject, "every colour I said I like is wrong, I dislike them all", 0)
    replacing = [
        {"target_fact_ids": [f["id"]], "contradiction": "natural", "fact": fact(f"Maya dislikes colour {n}", [episode])}
        for n, f in enumerate(stored[:replaced])
    ]
    llm.script(empty_plan(supersessions=replacing))
    return stored


def held_run(subject, *texts: str) -> tuple[ConsolidationRun, list[str]]:
    """A run the mass-change guard held for review, as consolidation_run leaves it: its plan (one new fact
    per text) stored, and those facts waiting in the person's queue as the run's proposals (their ids)."""
    episode = say(subject, " ".join(texts), 0)
    run = ConsolidationRun.objects.create(
        tenant=subject.tenant, subject=subject, worker="test", status=ConsolidationRun.Status.NEEDS_REVIEW
    )
    window = f"held-{run.pk}"
    facts = [{"key": f"{window}:fact:{n}", **fact(text, [episode])} for n, text in enumerate(texts)]
    run.plan = {"window_key": window, "planned_at": timezone.now().isoformat(), **empty_plan(facts=facts)}
    run.changes = plan_apply(subject=subject, plan=run.plan, run_id=run.pk, hold=True)
    run.save()
    return run, run.changes["pending"]
