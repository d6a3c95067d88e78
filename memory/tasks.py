"""Celery tasks of the memory app (thin: each calls one service). All idempotent and safe to retry."""

from __future__ import annotations

from celery import shared_task

from tenants.models import Tenant

from .services.archive import superseded_facts_archive
from .services.supersession import supersessions_reconcile
from .services.usage import memories_usage_record


@shared_task(name="memory.usage_record", acks_late=True)
def memories_usage_record_task(targets: list[list[str]]) -> int:
    return memories_usage_record(targets=[(index, memory_id) for index, memory_id in targets])


@shared_task(name="memory.supersessions_reconcile", acks_late=True)
def supersessions_reconcile_task() -> dict[str, int]:
    return {t.slug: len(supersessions_reconcile(tenant=t)) for t in Tenant.objects.filter(is_active=True)}


@shared_task(name="memory.archive_superseded", acks_late=True)
def superseded_facts_archive_task() -> dict[str, int]:
    return {t.slug: superseded_facts_archive(tenant=t) for t in Tenant.objects.filter(is_active=True)}
