"""What became of each consolidation run's proposals, for the tenant's runs chart: how many the LLM
proposed, how many validation and the guards dropped, how many were accepted (applied, or accepted by
the person in review), rejected by the person, and still waiting.

Derived from what the run records (its plan, ``rejected`` and ``changes``) and, for proposals decided in
the review queue after the run finished, from the audit trail's ``proposal.accept`` / ``proposal.reject``
records (their ``written_by`` names the run); no new bookkeeping, no memory text."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from memory.models import ConsolidationRun
from tenants.models import AuditRecord

PLAN_KINDS = ("facts", "supersessions", "confirmations", "playbooks", "refinements", "outcomes")
DECISIONS = {"proposal.accept": "accepted", "proposal.reject": "rejected"}


@dataclass(frozen=True)
class RunOutcome:
    run: ConsolidationRun
    proposed: int
    accepted: int
    rejected: int
    dropped: int
    waiting: int


def _decisions(runs: list[ConsolidationRun]) -> Counter[tuple[str, str]]:
    """(written_by, "accepted" | "rejected") → how many of the runs' proposals were decided so."""
    writers = [f"run:{run.pk}" for run in runs]
    records = AuditRecord.objects.filter(action__in=DECISIONS, detail__written_by__in=writers)
    if runs:
        records = records.filter(tenant_id=runs[0].tenant_id)
    return Counter(
        (detail.get("written_by"), DECISIONS[action]) for action, detail in records.values_list("action", "detail")
    )


def consolidation_runs_outcomes(*, runs: list[ConsolidationRun]) -> list[RunOutcome]:
    """Each run's outcome, in the order given (runs of one tenant)."""
    decided = _decisions(runs)
    out = []
    for run in runs:
        plan, changes = run.plan or {}, run.changes or {}
        dropped = len(run.rejected or [])
        proposed = sum(len(plan.get(kind) or []) for kind in PLAN_KINDS) + dropped
        pending = len(changes.get("pending") or [])
        # Applied as planned (a held run, once approved, too: what the person had rejected is "refused")…
        accepted = sum(len(changes.get(kind) or []) for kind in PLAN_KINDS)
        rejected = len(changes.get("refused") or [])
        if pending:  # …and what waited for the person's review, decided on the audit trail since
            accepted += decided[(f"run:{run.pk}", "accepted")]
            rejected += decided[(f"run:{run.pk}", "rejected")]
        waiting = max(pending - accepted - rejected, 0)
        out.append(RunOutcome(run, proposed, accepted, rejected, dropped, waiting))
    return out
