"""Celery tasks of the memory app (thin: each calls one service), and the scheduling the interfaces ask
for. All idempotent and safe to retry. Services never import this module: what a service decides to
queue, the task or interface that called it queues (consolidation's fan-out takes ``enqueue``)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from tenants.models import MemorySubject, Tenant
from tenants.usage import usage_recall_record

from .consolidation.run import consolidation_run
from .consolidation.scheduling import consolidation_fan_out
from .services.archive import superseded_facts_archive
from .services.retention import episodes_retention_apply
from .services.supersession import supersessions_reconcile
from .services.usage import memories_usage_record
from .services.usage_storage import usage_storage_sample_all

log = logging.getLogger(__name__)


@shared_task(name="memory.usage_record", acks_late=True)
def memories_usage_record_task(targets: list[list[str]]) -> int:
    return memories_usage_record(targets=[(index, memory_id) for index, memory_id in targets])


def recall_usage_schedule(*, subject: MemorySubject, targets: list[tuple[str, str]], agent_use: bool) -> None:
    """Count one recall of ``subject`` in the tenant's usage ledger (one SQL update), and, when an agent
    recalled (``agent_use``), schedule the bump of what it returned (``RecallResult.targets``) off the
    request path.

    Every way in calls this once per recall it serves, and only the interface that served it: REST and MCP
    (an agent, ``agent_use=True``), the dashboard's search, the support pages' search (tenant admins,
    operators) and ``atlas_recall`` (``agent_use=False``: a person's or operator's look is a recall the
    ledger counts, but not the agent using a memory, so no use count moves). Evaluations and
    consolidation's neighbour search are the service's own work, not recalls: they never call it."""
    usage_recall_record(tenant_id=subject.tenant_id)
    if not agent_use or not targets or settings.ATLAS_USAGE_RECORDING == "off":
        return
    try:
        memories_usage_record_task.delay([list(t) for t in targets])
    except Exception:  # the bump is best effort; recall has already answered
        log.exception("could not schedule the use-count bump of %d memories", len(targets))


@shared_task(name="memory.supersessions_reconcile", acks_late=True)
def supersessions_reconcile_task() -> dict[str, int]:
    return {t.slug: len(supersessions_reconcile(tenant=t)) for t in Tenant.objects.filter(is_active=True)}


@shared_task(name="memory.archive_superseded", acks_late=True)
def superseded_facts_archive_task() -> dict[str, int]:
    return {t.slug: superseded_facts_archive(tenant=t) for t in Tenant.objects.filter(is_active=True)}


@shared_task(name="memory.consolidate_subject", bind=True, acks_late=True, max_retries=10)
def consolidation_subject_task(self, subject_id: int, started_by: str = "nightly") -> dict[str, object]:
    """One subject's run. The task id owns the subject's lease, so a redelivered message (same id)
    takes its own lease back and resumes; a run refused because another holds it retries later.
    ``started_by``: the check that queued it, nightly or early (the run record says so)."""
    subject = MemorySubject.objects.select_related("tenant").filter(pk=subject_id, is_active=True).first()
    if subject is None or not subject.tenant.is_active:
        return {"status": "gone"}
    outcome = consolidation_run(subject=subject, owner=self.request.id, started_by=started_by)
    if outcome.status == "busy":
        if self.request.retries >= self.max_retries:  # the next nightly or early check queues it again
            return {"status": "busy", "run": None, "error": outcome.error}
        raise self.retry(countdown=settings.ATLAS_CONSOLIDATION_RETRY_SECONDS)
    # No error text: it may quote the subject's memories, and the result backend keeps what a task returns
    # beyond forgetting's reach (the run record holds it, where forgetting finds it).
    return {"status": str(outcome.status), "run": outcome.run.pk if outcome.run else None}


def _consolidation_enqueue(subject: MemorySubject) -> None:
    consolidation_subject_task.delay(subject.pk)


def _consolidation_enqueue_early(subject: MemorySubject) -> None:
    consolidation_subject_task.delay(subject.pk, "early")


@shared_task(name="memory.consolidation_nightly", acks_late=True)
def consolidation_nightly_task() -> dict[str, int]:
    return consolidation_fan_out(
        min_new=1, budget=settings.ATLAS_CONSOLIDATION_NIGHTLY_MAX_SUBJECTS, enqueue=_consolidation_enqueue
    )


@shared_task(name="memory.consolidation_early", acks_late=True)
def consolidation_early_task() -> dict[str, int]:
    """Frequent and cheap: one aggregation per tenant; queues the subjects past the early threshold."""
    from memory.inference.llm import llm_configured

    if settings.ATLAS_CONSOLIDATION_EARLY_EPISODES <= 0 or not llm_configured():
        return {}
    return consolidation_fan_out(
        min_new=settings.ATLAS_CONSOLIDATION_EARLY_EPISODES,
        budget=settings.ATLAS_CONSOLIDATION_NIGHTLY_MAX_SUBJECTS,
        enqueue=_consolidation_enqueue_early,
    )


@shared_task(name="memory.episode_retention", acks_late=True)
def episodes_retention_task() -> dict[str, int]:
    return {
        t.slug: episodes_retention_apply(tenant=t, actor="beat:episode_retention")
        for t in Tenant.objects.filter(is_active=True, episode_retention_days__isnull=False)
    }


@shared_task(name="memory.usage_storage_sample", acks_late=True)
def usage_storage_sample_task() -> dict[str, int]:
    """The usage ledger's daily storage sample of every active tenant (idempotent: the day's last wins)."""
    return usage_storage_sample_all()
