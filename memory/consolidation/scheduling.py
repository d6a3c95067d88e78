"""Which subjects a run is due for, and the fan-out that queues them. The queueing itself is the caller's
(the Celery tasks pass ``enqueue``): nothing here imports the tasks, which import this."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError
from django.db.models import Q
from django.utils import timezone

from memory.elastic import queries, store
from memory.models import ConsolidationState
from tenants.models import MemorySubject, Tenant
from tenants.selectors import tenant_es_client


def subjects_due(*, tenant: Any, min_new: int = 1) -> list[tuple[MemorySubject, int]]:
    """The tenant's active subjects with at least ``min_new`` episodes after their watermark, most first.

    One aggregation over the tenant's episodes newer than the oldest watermark (an upper bound per
    subject), then an exact count for the subjects it names."""
    subjects = {
        str(s.es_id): s for s in MemorySubject.objects.filter(tenant=tenant, is_active=True).select_related("tenant")
    }
    if not subjects:
        return []
    marks = {
        str(es_id): at
        for es_id, at in ConsolidationState.objects.filter(subject__tenant=tenant).values_list(
            "subject__es_id", "watermark_at"
        )
    }
    oldest = None if any(marks.get(u) is None for u in subjects) else min(marks.values())
    reader = tenant_es_client(tenant=tenant)
    tenant_id = str(tenant.es_id)
    bound = store.per_subject_counts(
        reader,
        body=queries.per_subject_counts_body(
            query=queries.episodes_newer_query(tenant_id=tenant_id, after=oldest.isoformat() if oldest else None),
            max_subjects=max(len(subjects), 10),
        ),
    )
    due = []
    for user_id, upper in bound.items():
        subject = subjects.get(user_id)
        if subject is None or upper < min_new:
            continue
        mark = marks.get(user_id)
        count = (
            upper
            if mark is None
            else store.memories_count(
                reader,
                memory_types=("episodic",),
                query=queries.episodes_newer_query(tenant_id=tenant_id, user_id=user_id, after=mark.isoformat()),
            )
        )
        if count >= min_new:
            due.append((subject, count))
    return sorted(due, key=lambda item: (-item[1], item[0].pk))


def consolidation_mark_queued(*, subject: MemorySubject) -> bool:
    """Note that a run of ``subject`` was queued; False when one was queued within the lease period and
    has not started yet (the early check then leaves it)."""
    try:
        ConsolidationState.objects.get_or_create(subject=subject)
    except IntegrityError:
        pass
    now = timezone.now()
    recent = now - timedelta(seconds=settings.ATLAS_CONSOLIDATION_LEASE_SECONDS)
    return bool(
        ConsolidationState.objects.filter(subject=subject)
        .filter(Q(queued_at__isnull=True) | Q(queued_at__lt=recent))
        .update(queued_at=now)
    )


def consolidation_fan_out(*, min_new: int, budget: int, enqueue: Callable[[MemorySubject], Any]) -> dict[str, int]:
    """Queue a run (``enqueue``) for every active subject with at least ``min_new`` new episodes, most
    first, at most ``budget`` in all; a subject already queued and not started yet is left alone.
    Returns the number queued per tenant."""
    queued: dict[str, int] = {}
    for tenant in Tenant.objects.filter(is_active=True):
        if budget <= 0:
            break
        for subject, _count in subjects_due(tenant=tenant, min_new=min_new)[:budget]:
            if consolidation_mark_queued(subject=subject):
                enqueue(subject)
                queued[tenant.slug] = queued.get(tenant.slug, 0) + 1
                budget -= 1
    return queued
