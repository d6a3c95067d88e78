"""Celery tasks of the tenants app (thin: each calls one service)."""

from __future__ import annotations

from celery import shared_task

from .services import credentials_reconcile


@shared_task(name="tenants.credentials_reconcile", acks_late=True)
def credentials_reconcile_task() -> dict[str, list[str]]:
    """Repair half-finished credential operations; idempotent, safe to retry."""
    return credentials_reconcile(actor="celery:credentials_reconcile")
