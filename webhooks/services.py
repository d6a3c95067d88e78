"""Webhook writes: recording events (``event_emit``, the one way the memory app announces a change),
managing endpoints and their secrets, sending a delivery again, and forgetting what events held.

At-least-once starts here. The memory app emits after Elasticsearch acknowledged its write; the event and
one delivery per subscribed endpoint are then recorded in one database transaction, and the first attempt
is queued when it commits (a lost queue message is found by the beat sweep: webhooks.tasks). When the
event cannot be recorded the write's caller gets a 503 — the memory is stored — and the event id is
derived from what happened (the memory's id and version …), so the caller's retry, which lands on the
same document (Idempotency-Key, derived ids), records the very event it missed instead of a second one.
Events are recorded only for tenants with an endpoint that wants them.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from atlas_site.echo import names_listed
from atlas_site.errors import DependencyUnavailable, ValidationFailed
from atlas_site.observability import metrics as m
from tenants.models import Tenant
from tenants.secrets import secret_encrypt
from tenants.services import audit_record

from .events import EVENT_TYPES
from .models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from .safety import url_check
from .signing import secret_generate

log = logging.getLogger(__name__)

MAX_ENDPOINTS_PER_TENANT = 20
MAX_DESCRIPTION_CHARS = 200
#: Event ids derived from what happened (uuid5): the same happening is the same event.
EVENT_NAMESPACE = uuid.UUID("1b0f7f43-54a4-4b8e-9d42-6d1f9b3c7a10")
DELIVER_TASK = "webhooks.deliver"


def deliveries_schedule(ids: list[int]) -> None:
    """Queue the first attempt of each delivery. Best effort: a message the broker refused or lost is
    attempted by the next sweep (webhooks.deliveries_due), so the delivery itself is never lost."""
    # By the task's name (services import no tasks); finalising the app first prepares the embedded
    # broker's folders (atlas_site.celery), which sending by name alone would not.
    current_app.finalize(auto=True)
    for delivery_id in ids:
        try:
            current_app.send_task(DELIVER_TASK, args=[delivery_id])
        except Exception:
            log.warning("could not queue webhook delivery %s; the sweep will attempt it", delivery_id, exc_info=True)


def event_emit(
    *, tenant: Tenant, type: str, data: dict[str, Any], subject: str = "", memory_id: str = "", key: str | None = None
) -> WebhookEvent | None:
    """Record that ``type`` happened (``data`` as its endpoints receive it) with a delivery to each enabled
    endpoint of ``tenant`` that subscribed to it, and queue them once the transaction commits. ``key``
    names the happening (the event id derives from it: emitting it again records nothing new); without
    it every call is a new event. None when no endpoint wants it. Raises DependencyUnavailable when the
    database refuses the record (see the module's docstring)."""
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown webhook event type {type!r}")
    try:
        endpoints = [e for e in WebhookEndpoint.objects.filter(tenant=tenant, is_enabled=True) if type in e.events]
        if not endpoints:
            return None
        event_id = uuid.uuid5(EVENT_NAMESPACE, f"{tenant.es_id}:{type}:{key}") if key else uuid.uuid4()
        with transaction.atomic():
            event, created = WebhookEvent.objects.get_or_create(
                id=event_id,
                defaults={"tenant": tenant, "type": type, "subject": subject, "memory_id": memory_id, "data": data},
            )
            if not created:
                return event
            deliveries = WebhookDelivery.objects.bulk_create(
                [WebhookDelivery(endpoint=e, event=event, subject=subject) for e in endpoints]
            )
            ids = [d.pk for d in deliveries]
            transaction.on_commit(lambda: deliveries_schedule(ids))
    except DatabaseError as exc:
        log.error("webhook event %s of tenant %s could not be recorded: %s", type, tenant.slug, exc)
        raise DependencyUnavailable(
            "the change was stored, but its webhook event could not be recorded: retry the request "
            "(with the same Idempotency-Key) to record it"
        ) from exc
    m.WEBHOOK_EVENTS.labels(type).inc()
    return event


def webhook_events_forget(*, tenant: Tenant, subject: str | None = None, memory_ids: list[str] | None = None) -> int:
    """Forgetting reaches the events: the ``data`` of the events about the forgotten memories (or about
    every memory of ``subject``, or of the whole tenant when both are None) is replaced by the memory's
    id alone, so no text outlives the memory here — nor in a delivery still to come, whose body is made
    from the event when it is sent. Returns how many events were scrubbed."""
    events = WebhookEvent.objects.filter(tenant=tenant).exclude(data={})
    if memory_ids is not None:
        events = events.filter(memory_id__in=memory_ids)
    elif subject is not None:
        events = events.filter(subject=subject)
    scrubbed = 0
    for event in events.only("id", "memory_id", "data"):
        kept = {"forgotten": True, **({"memory": {"id": event.memory_id}} if event.memory_id else {})}
        if event.data != kept and _holds_text(event.data):
            WebhookEvent.objects.filter(pk=event.pk).update(data=kept)
            scrubbed += 1
    return scrubbed


def _holds_text(data: Any) -> bool:
    """Whether an event's data may quote a memory: it carries a memory (or a proposal) view."""
    return isinstance(data, dict) and ("memory" in data or "proposal" in data) and data.get("forgotten") is not True


# ------------------------------------------------------------------------------------ endpoints
def _events_check(events: Any) -> list[str]:
    if isinstance(events, str):
        events = [e.strip() for e in events.split(",") if e.strip()]
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise ValidationFailed(f"events must be a list of some of: {', '.join(EVENT_TYPES)}", field="events")
    unknown = [e for e in events if e not in EVENT_TYPES]
    if unknown:
        raise ValidationFailed(
            f"unknown event {names_listed(unknown)}; the events are {', '.join(EVENT_TYPES)}", field="events"
        )
    return [e for e in EVENT_TYPES if e in events]


def _description_check(description: Any) -> str:
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_CHARS:
        raise ValidationFailed(
            f"description must be text of at most {MAX_DESCRIPTION_CHARS} characters", field="description"
        )
    return description


def endpoint_create(
    *, tenant: Tenant, url: Any, events: Any, actor: str, description: Any = ""
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; returns it and its signing secret — the only time the secret is given out
    (it is stored encrypted)."""
    url_check(url)
    chosen = _events_check(events)
    description = _description_check(description)
    if WebhookEndpoint.objects.filter(tenant=tenant).count() >= MAX_ENDPOINTS_PER_TENANT:
        raise ValidationFailed(f"a tenant has at most {MAX_ENDPOINTS_PER_TENANT} webhook endpoints", field="url")
    secret = secret_generate()
    endpoint = WebhookEndpoint.objects.create(
        tenant=tenant,
        url=url,
        events=chosen,
        description=description,
        secret_encrypted=secret_encrypt(secret),
        created_by=actor[:200],
    )
    audit_record(
        tenant=tenant, actor=actor, action="webhook.create", target=f"webhook:{endpoint.pk}",
        detail={"url": url, "events": chosen},
    )  # fmt: skip
    return endpoint, secret


def endpoint_update(
    *,
    endpoint: WebhookEndpoint,
    actor: str,
    url: Any = None,
    events: Any = None,
    description: Any = None,
    enabled: Any = None,
) -> WebhookEndpoint:
    """Change what is given (None: unchanged). Enabling a disabled endpoint clears why it was disabled and
    queues its deliveries that still wait (one given up stays given up: send it again)."""
    changed: dict[str, Any] = {}
    if url is not None:
        url_check(url)
        endpoint.url = changed["url"] = url
    if events is not None:
        endpoint.events = changed["events"] = _events_check(events)
    if description is not None:
        endpoint.description = _description_check(description)
    if enabled is not None:
        if not isinstance(enabled, bool):
            raise ValidationFailed("enabled must be true or false", field="enabled")
        if enabled and not endpoint.is_enabled:
            endpoint.disabled_reason, endpoint.disabled_at, endpoint.failing_since = "", None, None
        elif not enabled and endpoint.is_enabled:
            endpoint.disabled_reason, endpoint.disabled_at = f"disabled by {actor}"[:300], timezone.now()
        endpoint.is_enabled = changed["enabled"] = enabled
    endpoint.save()
    audit_record(
        tenant=endpoint.tenant, actor=actor, action="webhook.update", target=f"webhook:{endpoint.pk}", detail=changed
    )
    if changed.get("enabled"):
        waiting = WebhookDelivery.objects.filter(endpoint=endpoint, status=WebhookDelivery.Status.PENDING)
        ids = list(waiting.order_by("id").values_list("id", flat=True)[:100])
        transaction.on_commit(lambda: deliveries_schedule(ids))
    return endpoint


def endpoint_disable(*, endpoint: WebhookEndpoint, reason: str) -> None:
    """Disabled by the system (it kept failing): its admins see ``reason`` on every tenant page."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk, is_enabled=True).update(
        is_enabled=False, disabled_reason=reason[:300], disabled_at=timezone.now()
    )
    audit_record(
        tenant=endpoint.tenant, actor="system:webhooks", action="webhook.disable", target=f"webhook:{endpoint.pk}",
        detail={"reason": reason[:300]},
    )  # fmt: skip


def endpoint_delete(*, endpoint: WebhookEndpoint, actor: str) -> None:
    audit_record(
        tenant=endpoint.tenant, actor=actor, action="webhook.delete", target=f"webhook:{endpoint.pk}",
        detail={"url": endpoint.url},
    )  # fmt: skip
    endpoint.delete()


def endpoint_secret_rotate(*, endpoint: WebhookEndpoint, actor: str) -> str:
    """A new signing secret (returned, shown once); the old one keeps signing beside it for
    ATLAS_WEBHOOKS_SECRET_OVERLAP_HOURS, so receivers can switch without losing a delivery."""
    secret = secret_generate()
    endpoint.previous_secret_encrypted = endpoint.secret_encrypted
    endpoint.previous_secret_expires_at = timezone.now() + timedelta(hours=settings.ATLAS_WEBHOOKS_SECRET_OVERLAP_HOURS)
    endpoint.secret_encrypted = secret_encrypt(secret)
    endpoint.save(update_fields=["secret_encrypted", "previous_secret_encrypted", "previous_secret_expires_at"])
    audit_record(tenant=endpoint.tenant, actor=actor, action="webhook.rotate", target=f"webhook:{endpoint.pk}")
    return secret


def delivery_redeliver(*, delivery: WebhookDelivery, actor: str) -> WebhookDelivery:
    """Send an event again ("send again"): a new delivery of the same event (same id: receivers that saw
    it de-duplicate), queued behind the endpoint's other deliveries for the subject."""
    endpoint = delivery.endpoint
    if not endpoint.is_enabled:
        raise ValidationFailed("the endpoint is disabled: enable it first", field="delivery")
    again = WebhookDelivery.objects.create(endpoint=endpoint, event=delivery.event, subject=delivery.subject)
    audit_record(
        tenant=endpoint.tenant, actor=actor, action="webhook.redeliver", target=f"webhook:{endpoint.pk}",
        detail={"event": str(delivery.event_id), "delivery": again.pk},
    )  # fmt: skip
    transaction.on_commit(lambda: deliveries_schedule([again.pk]))
    return again


def deliveries_cleanup(*, now: Any = None) -> int:
    """Delete deliveries older than ATLAS_WEBHOOKS_KEEP_DAYS, and the events none is left for."""
    before = (now or timezone.now()) - timedelta(days=settings.ATLAS_WEBHOOKS_KEEP_DAYS)
    deleted, _ = WebhookDelivery.objects.filter(created_at__lt=before).delete()
    WebhookEvent.objects.filter(created_at__lt=before, deliveries__isnull=True).delete()
    return deleted


def deliveries_viewed(*, endpoint: WebhookEndpoint, deliveries: list[dict[str, Any]], actor: str) -> None:
    """Someone read an endpoint's delivery log with its payloads (an event's data may quote a memory, as
    the support view does): audited like every support read, naming the subjects whose events were shown."""
    subjects = sorted({d["subject"] for d in deliveries if d.get("subject") and d.get("data")})
    if subjects:
        audit_record(
            tenant=endpoint.tenant,
            actor=actor,
            action="webhook.log_view",
            target=f"webhook:{endpoint.pk}",
            detail={"subjects": subjects},
        )
