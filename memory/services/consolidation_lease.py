"""Consolidation's subject lease: one run per subject at a time, a crashed worker's lease lapses, and
forgetting takes the leases over so no run writes what it forgets."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from atlas_site.errors import AtlasError
from memory.models import ConsolidationState
from tenants.models import MemorySubject


class LeaseLost(AtlasError):
    """Another worker took over the subject's lease (ours lapsed): stop writing."""


def consolidation_lease_acquire(*, subject: MemorySubject, owner: str) -> bool:
    """Take the subject's lease for ``owner`` unless another holder's lease is still running, or the
    parallel budget (ATLAS_CONSOLIDATION_MAX_PARALLEL live leases) is spent.

    One conditional UPDATE: atomic on SQLite and PostgreSQL alike. The same owner (a redelivered task
    keeps its task id) takes its own lease back at once. The budget is counted just before the update,
    so concurrent acquirers on PostgreSQL can overshoot it by their number; it bounds load, not safety.
    """
    try:
        ConsolidationState.objects.get_or_create(subject=subject)
    except IntegrityError:  # created concurrently
        pass
    now = timezone.now()
    live = Q(lease_expires_at__gt=now) & ~Q(lease_owner=owner)
    with transaction.atomic():
        others = ConsolidationState.objects.filter(live).exclude(subject=subject).count()
        if others >= settings.ATLAS_CONSOLIDATION_MAX_PARALLEL:
            return False
        return (
            ConsolidationState.objects.filter(subject=subject)
            .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now) | Q(lease_owner=owner))
            .update(
                lease_owner=owner,
                lease_expires_at=now + timedelta(seconds=settings.ATLAS_CONSOLIDATION_LEASE_SECONDS),
                queued_at=None,
            )
            == 1
        )


def consolidation_lease_renew(*, subject: MemorySubject, owner: str) -> None:
    expires = timezone.now() + timedelta(seconds=settings.ATLAS_CONSOLIDATION_LEASE_SECONDS)
    if not ConsolidationState.objects.filter(subject=subject, lease_owner=owner).update(lease_expires_at=expires):
        raise LeaseLost(f"the consolidation lease of {subject} was taken over; this run stops")


def consolidation_leases_take_over(*, subjects: QuerySet[MemorySubject], owner: str) -> None:
    """Take the subjects' leases whoever holds them (forgetting): a run in progress loses its lease at its
    next renewal — before it stores a plan and before each write — and stops; none starts until released."""
    ConsolidationState.objects.bulk_create(
        (ConsolidationState(subject_id=pk) for pk in subjects.values_list("pk", flat=True).iterator()),
        ignore_conflicts=True,
        batch_size=500,
    )
    expires = timezone.now() + timedelta(seconds=settings.ATLAS_CONSOLIDATION_LEASE_SECONDS)
    ConsolidationState.objects.filter(subject__in=subjects).update(lease_owner=owner, lease_expires_at=expires)


def consolidation_leases_release(*, subjects: QuerySet[MemorySubject], owner: str) -> None:
    ConsolidationState.objects.filter(subject__in=subjects, lease_owner=owner).update(
        lease_owner="", lease_expires_at=None
    )


def consolidation_lease_release(*, subject: MemorySubject, owner: str) -> None:
    ConsolidationState.objects.filter(subject=subject, lease_owner=owner).update(lease_owner="", lease_expires_at=None)


def lease_holder(*, subject: MemorySubject) -> str | None:
    state = ConsolidationState.objects.filter(subject=subject, lease_expires_at__gt=timezone.now()).first()
    return state.lease_owner if state else None
