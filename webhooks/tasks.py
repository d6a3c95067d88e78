"""Celery tasks of the webhooks app (thin: each calls one service). Idempotent and safe to retry: an
attempt is leased, a delivered or given-up delivery is never attempted again."""

from __future__ import annotations

from celery import shared_task

from .delivery import CHAIN_LIMIT, deliveries_due, deliveries_run, subject_next
from .services import deliveries_cleanup, deliveries_schedule


@shared_task(name="webhooks.deliver", acks_late=True)
def delivery_task(delivery_id: int) -> list[str]:
    outcomes = deliveries_run(delivery_id=delivery_id)
    if len(outcomes) >= CHAIN_LIMIT and outcomes[-1] in ("delivered", "failed"):
        follow = subject_next(delivery_id)
        if follow is not None:
            deliveries_schedule([follow])  # a long backlog goes on in a new task, not one endless one
    return outcomes


@shared_task(name="webhooks.deliveries_due", acks_late=True)
def deliveries_due_task() -> int:
    due = deliveries_due()
    deliveries_schedule(due)
    return len(due)


@shared_task(name="webhooks.deliveries_cleanup", acks_late=True)
def deliveries_cleanup_task() -> int:
    return deliveries_cleanup()
