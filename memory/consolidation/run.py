"""A consolidation run, in order (the package's docstring): lease, resume or gather, ask, validate, store
the plan, apply it, advance the watermark; and an operator's approve or discard of a run held for review."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from atlas_site.errors import AtlasError, ValidationFailed
from atlas_site.observability.hooks import consolidation_usage_observed
from memory.authority import OPERATOR, Principal
from memory.inference.llm import llm_configured, stage_models
from memory.models import ConsolidationRun, ConsolidationState
from memory.services.announce import consolidation_finished_announce
from memory.services.consolidation_lease import (
    LeaseLost,
    consolidation_lease_acquire,
    consolidation_lease_release,
    consolidation_lease_renew,
    lease_holder,
)
from memory.services.proposal_keys import window_key_for
from memory.services.review import proposals_decide, proposals_withdraw
from tenants.models import MemorySubject
from tenants.services import audit_record
from tenants.usage import usage_llm_record

from .apply import plan_apply
from .ask import AskFailed, ask_tokens_estimate, plan_ask
from .budget import budget_stop
from .gather import consolidation_input_gather
from .validation import PlanValidator, mass_change_reason

log = logging.getLogger(__name__)
Status = ConsolidationRun.Status
NO_LLM = "no LLM configured: set ATLAS_LLM_BASE_URL and ATLAS_LLM_MODEL (and ATLAS_LLM_API_KEY if it needs one)"


@dataclass
class Outcome:
    """What a run did (or, dry, would do)."""

    status: str
    plan: dict[str, Any] | None = None
    rejected: list[dict[str, Any]] = field(default_factory=list)
    changes: dict[str, list[str]] = field(default_factory=dict)
    run: ConsolidationRun | None = None
    error: str = ""
    episodes: int = 0


def _state_watermark(subject: MemorySubject) -> tuple[datetime, str] | None:
    state = ConsolidationState.objects.filter(subject=subject).first()
    if state is None or state.watermark_at is None:
        return None
    return state.watermark_at, state.watermark_id


def _usage_into(run: ConsolidationRun, usage: Any, *, model: str) -> None:
    """Add one call's tokens and cost to the run record, the tenant's usage ledger and the metrics."""
    cost = usage.cost(model)
    run.prompt_tokens += usage.prompt_tokens
    run.completion_tokens += usage.completion_tokens
    run.llm_requests += usage.requests
    run.cost = round(run.cost + cost, 6)
    _usage_ledgered(run.tenant_id, usage, cost=cost)
    consolidation_usage_observed(
        model=model, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens, cost=cost
    )


def _spent_booked(subject: MemorySubject, run: ConsolidationRun | None, spent: list[tuple[Any, str]]) -> None:
    """Each call's tokens and cost (with the model that answered it): into the run record, the ledger and
    the metrics — or, for a dry run (no record), the ledger alone."""
    for usage, model in spent:
        if run is None:
            _usage_ledgered(subject.tenant_id, usage, cost=usage.cost(model))
        else:
            _usage_into(run, usage, model=model)


def _usage_ledgered(tenant_id: int, usage: Any, *, cost: float) -> None:
    """One call's tokens and cost into the tenant's usage ledger (a dry run's too: it has no run record)."""
    usage_llm_record(
        tenant_id=tenant_id,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        requests=usage.requests,
        cost=cost,
    )


def _finish(run: ConsolidationRun, status: str, started: float, *, error: str = "") -> None:
    run.status = status
    run.error = error[:4000]
    run.duration_ms += int((time.perf_counter() - started) * 1000)
    run.finished_at = timezone.now()
    # An update, never an insert: a record that forgetting deleted meanwhile is not written back.
    run.save(force_update=True)
    if status != Status.SKIPPED:  # a night's "no new episodes" for every subject is no news to an endpoint
        consolidation_finished_announce(
            subject=run.subject, run_id=run.pk, status=status, episodes=run.episodes,
            started_by=run.started_by or "", attempt=run.attempts,
        )  # fmt: skip


def _resumable(subject: MemorySubject, start: tuple[datetime, str] | None) -> ConsolidationRun | None:
    """The subject's unfinished run over the window that starts at the watermark, if any."""
    runs = ConsolidationRun.objects.filter(subject=subject, status__in=[Status.RUNNING, Status.FAILED])
    runs = (
        runs.filter(window_start_at=start[0], window_start_id=start[1])
        if start
        else runs.filter(window_start_at__isnull=True)
    )
    return runs.exclude(plan__isnull=True).order_by("-started_at", "-id").first()


def consolidation_run(
    *,
    subject: MemorySubject,
    owner: str | None = None,
    dry_run: bool = False,
    since: datetime | None = None,
    started_by: str = ConsolidationRun.StartedBy.MANUAL,
) -> Outcome:
    """Consolidate ``subject``'s episodes after its watermark (or after ``since``); see the module doc.

    ``owner``: who takes the lease (a Celery task id, so a redelivery takes its own lease back).
    ``started_by``: nightly, early (the frequent check) or manual (atlas_consolidate), as a run record says.
    ``dry_run``: gather, ask and validate, then return the plan — no lease, no record, no write.
    """
    started = time.perf_counter()
    owner = owner or f"run-{uuid.uuid4().hex[:12]}"
    tenant = subject.tenant
    if not llm_configured():
        if dry_run:
            return Outcome(Status.SKIPPED, error=NO_LLM)
        run = ConsolidationRun.objects.create(
            tenant=tenant, subject=subject, worker=owner, status=Status.SKIPPED, started_by=started_by
        )
        _finish(run, Status.SKIPPED, started, error=NO_LLM)
        return Outcome(Status.SKIPPED, run=run, error=NO_LLM)
    start = (since, "") if since is not None else _state_watermark(subject)
    if dry_run:
        return _plan_fresh(subject=subject, start=start, started=started)
    if not consolidation_lease_acquire(subject=subject, owner=owner):
        holder = lease_holder(subject=subject)
        why = f"another run holds the lease ({holder})" if holder else "the parallel budget is spent"
        return Outcome("busy", error=why)
    try:
        # Holding the lease, no other run of the subject is alive: one still "running" without a plan
        # died before the LLM answered (nothing was written), and is closed as such.
        ConsolidationRun.objects.filter(subject=subject, status=Status.RUNNING, plan__isnull=True).update(
            status=Status.FAILED,
            error="abandoned: its worker stopped before the LLM answered",
            finished_at=timezone.now(),
        )
        run = _resumable(subject, start) if since is None else None
        if run is not None:
            return _resume(subject=subject, run=run, owner=owner, started=started)
        outcome = _plan_fresh(subject=subject, start=start, started=started, owner=owner, started_by=started_by)
        if outcome.run is None or outcome.status != Status.RUNNING:
            return outcome
        return _apply(subject=subject, run=outcome.run, owner=owner, started=started, advance=since is None)
    except LeaseLost as err:  # our lease lapsed while the LLM thought and another run took it over
        return Outcome("busy", error=err.message)
    finally:
        consolidation_lease_release(subject=subject, owner=owner)


def _run_recorded(subject: MemorySubject, owner: str | None, started_by: str, **fields: Any) -> ConsolidationRun:
    return ConsolidationRun.objects.create(
        tenant=subject.tenant, subject=subject, worker=owner, started_by=started_by, **fields
    )


def _skipped(
    subject: MemorySubject,
    owner: str | None,
    started_by: str,
    *,
    window: tuple,
    started: float,
    why: str,
    **fields: Any,
) -> Outcome:
    """A run recorded as skipped (why: its error), over ``window`` (start, end): the watermark stays."""
    run = _run_recorded(subject, owner, started_by, **fields)
    _set_window(run, *window)
    _finish(run, Status.SKIPPED, started, error=why)
    return Outcome(Status.SKIPPED, run=run, error=why, episodes=fields.get("episodes", 0))


def _plan_fresh(
    *,
    subject: MemorySubject,
    start: tuple[datetime, str] | None,
    started: float,
    owner: str | None = None,
    started_by: str = "",
) -> Outcome:
    """Gather, ask, validate; with an ``owner`` (not dry) the run is recorded and its plan stored."""
    dry = owner is None
    run: ConsolidationRun | None = None
    try:
        data = consolidation_input_gather(subject=subject, after=start)
    except AtlasError as err:
        if dry:
            raise
        run = _run_recorded(subject, owner, started_by, attempts=1)
        _finish(run, Status.FAILED, started, error=f"reading the episodes failed: {err.message}")
        return Outcome(Status.FAILED, run=run, error=run.error)
    if not data.episodes:
        if dry:
            return Outcome(Status.SKIPPED, error="skipped: no new episodes")
        return _skipped(
            subject, owner, started_by, window=(start, None), started=started, why="skipped: no new episodes"
        )
    window_key = window_key_for(subject=subject, episode_ids=[e["id"] for e in data.episodes])
    prompt = data.prompt()
    if not dry:
        why = _not_now(subject=subject, window_key=window_key, tokens=ask_tokens_estimate(data, prompt=prompt))
        if why:
            window = (start, data.window_end)
            count = len(data.episodes)
            return _skipped(
                subject,
                owner,
                started_by,
                window=window,
                started=started,
                why=why,
                window_key=window_key,
                episodes=count,
            )
        run = _run_recorded(
            subject,
            owner,
            started_by,
            window_key=window_key,
            episodes=len(data.episodes),
            llm_model=" → ".join(dict.fromkeys(stage_models())),
            attempts=1,
        )
        _set_window(run, start, data.window_end)
        run.save()
        consolidation_lease_renew(subject=subject, owner=owner)
    try:
        answer = plan_ask(data, prompt=prompt)
    except AskFailed as failed:
        err = failed.error
        _spent_booked(subject, run, failed.spent)
        if dry:
            return Outcome(Status.FAILED, error=str(err), episodes=len(data.episodes))
        _finish(run, Status.FAILED, started, error=f"{type(err).__name__}: {err}")
        return Outcome(Status.FAILED, run=run, error=run.error, episodes=len(data.episodes))
    validator = PlanValidator(data, subject=subject, window_key=window_key)
    plan = validator.plan(answer.data, planned_at=timezone.now().isoformat())
    review = mass_change_reason(plan, subject=subject)
    outcome = Outcome(Status.RUNNING, plan=plan, rejected=validator.rejected, episodes=len(data.episodes))
    if dry:
        _spent_booked(subject, None, answer.spent)
        outcome.status = Status.NEEDS_REVIEW if review else "dry_run"
        outcome.error = review or ""
        return outcome
    # Still ours? Forgetting takes the subject's lease over while the LLM thinks: the plan (which may
    # quote the forgotten memories) is then neither stored nor applied.
    consolidation_lease_renew(subject=subject, owner=owner)
    run.llm_model = answer.model[:200]
    _spent_booked(subject, run, answer.spent)
    run.rejected = validator.rejected
    run.plan = plan
    if review:
        run.save(force_update=True)  # the plan is durable before its proposals are written
        held = _hold(subject=subject, run=run)
        _finish(run, Status.NEEDS_REVIEW, started, error=review + held)
        return Outcome(Status.NEEDS_REVIEW, plan=plan, rejected=validator.rejected, run=run, error=run.error)
    run.save(force_update=True)  # the plan is durable before the first write
    outcome.run = run
    return outcome


def _not_now(*, subject: MemorySubject, window_key: str, tokens: int) -> str:
    """Why the LLM is not asked about this window now ("" when it is): the same episodes' plan waits for
    an operator (asking again would cost as much and most likely propose the same), or the call would
    pass the tenant's token budget or the subject's daily cap — checked before the call, so no token is
    spent, nothing is written and the window waits for the next run."""
    waiting = ConsolidationRun.objects.filter(
        subject=subject, window_key=window_key, status=Status.NEEDS_REVIEW
    ).first()
    if waiting is not None:
        return f"skipped: run {waiting.pk} over these episodes waits for review"
    return budget_stop(subject=subject, tokens=tokens)


def _hold(*, subject: MemorySubject, run: ConsolidationRun) -> str:
    """Write a run the mass-change guard stopped as pending proposals — its new facts, supersessions and
    playbooks — so the person sees them in their review queue (memory/services/review.py); the rest of
    the plan waits for the last decision or an operator's ``--approve``. Returns what to add to the
    run's error: how many wait, or why none could be written (the operator's approve still works)."""
    held = {**run.plan, "confirmations": [], "refinements": [], "outcomes": []}
    try:
        changes = plan_apply(subject=subject, plan=held, run_id=run.pk, hold=True)
    except AtlasError as err:
        log.warning("run %s: its proposals could not be written: %s", run.pk, err.message)
        return f"; its proposals could not be written ({err.message}): approve or discard it"
    run.changes = {k: v for k, v in changes.items() if k in ("pending", "gone", "replaced", "refused")}
    return f"; {len(changes.get('pending', []))} proposal(s) wait for the person's review"


def _set_window(run: ConsolidationRun, start: tuple[datetime, str] | None, end: tuple[datetime, str] | None) -> None:
    run.window_start_at, run.window_start_id = start if start else (None, "")
    run.window_end_at, run.window_end_id = end if end else (None, "")


def _resume(*, subject: MemorySubject, run: ConsolidationRun, owner: str, started: float) -> Outcome:
    if run.attempts >= settings.ATLAS_CONSOLIDATION_MAX_ATTEMPTS:
        _finish(run, Status.NEEDS_REVIEW, started, error=f"its writes failed {run.attempts} times: {run.error}")
        return Outcome(Status.NEEDS_REVIEW, plan=run.plan, rejected=run.rejected, run=run, error=run.error)
    log.info("resuming consolidation run %s of %s (attempt %d)", run.pk, subject, run.attempts + 1)
    run.attempts += 1
    run.worker = owner
    run.status = Status.RUNNING
    run.save(update_fields=["attempts", "worker", "status"])
    return _apply(subject=subject, run=run, owner=owner, started=started, advance=True)


def _apply(*, subject: MemorySubject, run: ConsolidationRun, owner: str, started: float, advance: bool) -> Outcome:
    try:
        changes = plan_apply(
            subject=subject,
            plan=run.plan,
            renew=lambda: consolidation_lease_renew(subject=subject, owner=owner),
            run_id=run.pk,
        )
    except LeaseLost as err:
        run.error = err.message
        run.save(update_fields=["error"])
        return Outcome("busy", plan=run.plan, run=run, error=err.message)
    except Exception as err:  # noqa: BLE001 — recorded; the stored plan is applied again by the next run
        log.exception("consolidation run %s of %s failed while writing", run.pk, subject)
        message = err.message if isinstance(err, AtlasError) else f"{type(err).__name__}: {err}"
        _finish(run, Status.FAILED, started, error=f"writing failed: {message}")
        return Outcome(Status.FAILED, plan=run.plan, rejected=run.rejected, run=run, error=run.error)
    with transaction.atomic():
        run.changes = changes
        if advance and run.window_end_at is not None:
            ConsolidationState.objects.filter(subject=subject).update(
                watermark_at=run.window_end_at, watermark_id=run.window_end_id, last_run_at=timezone.now()
            )
        _finish(run, Status.DONE, started)
    return Outcome(Status.DONE, plan=run.plan, rejected=run.rejected, changes=changes, run=run, episodes=run.episodes)


def consolidation_run_approve(*, run: ConsolidationRun, actor: str) -> Outcome:
    """Apply a run that stopped for review (the mass-change guard) as it was planned, once an operator
    has looked at it; only while its window still starts at the subject's watermark."""
    subject = run.subject
    if run.status != Status.NEEDS_REVIEW or not run.plan:
        raise ValidationFailed(f"run {run.pk} is {run.status}, not waiting for review with a plan")
    start = _state_watermark(subject)
    if (run.window_start_at, run.window_start_id) != (start if start else (None, "")):
        raise ValidationFailed(f"run {run.pk}'s window no longer starts at the subject's watermark: run it again")
    owner = f"approve-{uuid.uuid4().hex[:12]}"
    if not consolidation_lease_acquire(subject=subject, owner=owner):
        raise ValidationFailed(f"another consolidation of {subject} is in progress")
    try:
        audit_record(
            tenant=run.tenant, actor=actor, action="consolidation.approve", target=f"{subject}:run:{run.pk}", detail={}
        )
        # What the run holds as proposals becomes current as planned (the plan's writes then find it stored).
        proposals_decide(
            subject=subject,
            decision="accept",
            written_by=f"run:{run.pk}",
            actor=actor,
            reviewer=Principal(
                authority=OPERATOR, written_by=f"operator:{actor}", identity=f"operator:{actor}", may_review=True
            ),
        )
        run.status = Status.RUNNING
        run.attempts += 1
        run.save(update_fields=["status", "attempts"])
        return _apply(subject=subject, run=run, owner=owner, started=time.perf_counter(), advance=True)
    finally:
        consolidation_lease_release(subject=subject, owner=owner)


def consolidation_runs_settle(*, subject: MemorySubject, run_ids: list[int], actor: str) -> None:
    """Finish the runs held for review whose last proposal a decision just decided (``Decided.runs_complete``
    of memory.services.review): the rest of each plan (confirmations, outcomes) is applied and the
    subject's watermark moves on — as ``atlas_consolidate --approve`` would, without the rejected items.
    The interfaces call it right after the decision; a run that cannot be approved now (another run holds
    the lease, the window moved) stays waiting for an operator."""
    runs = ConsolidationRun.objects.filter(pk__in=run_ids, subject=subject, status=Status.NEEDS_REVIEW)
    for run in runs.order_by("pk"):
        try:
            consolidation_run_approve(run=run, actor=actor)
        except ValidationFailed as err:
            log.warning("run %s stays waiting for review after its last proposal: %s", run.pk, err.message)


def consolidation_run_discard(*, run: ConsolidationRun, actor: str) -> ConsolidationRun:
    """Drop the plan of a run that waits for review: the next run of its subject asks the LLM again."""
    if run.status != Status.NEEDS_REVIEW:
        raise ValidationFailed(f"run {run.pk} is {run.status}, not waiting for review")
    audit_record(
        tenant=run.tenant, actor=actor, action="consolidation.discard", target=f"{run.subject}:run:{run.pk}", detail={}
    )
    proposals_withdraw(subject=run.subject, written_by=f"run:{run.pk}")  # the plan goes, its proposals too
    run.status = Status.SKIPPED
    run.error = f"discarded by {actor} (was: {run.error})"[:4000]
    run.save(update_fields=["status", "error"])
    return run
