"""Celery tasks of the tenants app (thin: each calls one service)."""

from __future__ import annotations

from celery import shared_task

from atlas_site.idempotency import idempotency_records_purge

from .services import credentials_reconcile


@shared_task(name="tenants.credentials_reconcile", acks_late=True)
def credentials_reconcile_task() -> dict[str, list[str]]:
    """Repair half-finished credential operations; idempotent, safe to retry."""
    return credentials_reconcile(actor="celery:credentials_reconcile")


@shared_task(name="tenants.idempotency_purge", acks_late=True)
def idempotency_purge_task() -> int:
    """Delete lapsed Idempotency-Key records from the database (Redis expires its own)."""
    return idempotency_records_purge()
