"""Attempting deliveries: in order per subject, signed, to a checked address, retried with exponential
back-off until ATLAS_WEBHOOKS_RETRY_HOURS after the event; an endpoint failing for
ATLAS_WEBHOOKS_DISABLE_AFTER_HOURS is disabled.

Order: a delivery waits while an earlier delivery (lower id) of the same endpoint and subject is still
pending; when one succeeds or is given up, the next of that subject is attempted at once. Several workers
may hold one delivery's message (a redelivered task, the sweep): a lease (one conditional UPDATE) lets
one attempt at a time, and a receiver de-duplicates by the event id (at-least-once).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from atlas_site.echo import shortened
from atlas_site.errors import ValidationFailed
from atlas_site.observability import metrics as m
from tenants.secrets import secret_decrypt

from . import transport
from .models import WebhookDelivery, WebhookEndpoint
from .safety import AddressRefused, Resolver, address_choose, url_check
from .services import endpoint_disable
from .signing import HEADER, signature_header

log = logging.getLogger(__name__)

Status = WebhookDelivery.Status
#: Deliveries of one subject attempted one after another by one task, before it hands on to a new task.
CHAIN_LIMIT = 50
USER_AGENT = "Atlas-Memory-Webhooks/1"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    status_code: int | None = None
    latency_ms: int | None = None
    error: str = ""


def event_body(delivery: WebhookDelivery) -> bytes:
    """The JSON body, made from the event as it is now (a forgotten memory's text is gone from it)."""
    event = delivery.event
    payload = {
        "id": str(event.id),
        "type": event.type,
        "created_at": event.created_at.isoformat().replace("+00:00", "Z"),
        "tenant": delivery.endpoint.tenant.slug,
        "subject": event.subject or None,
        "data": event.data,
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def signing_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The current secret, and the previous one while a rotation's overlap lasts."""
    secrets = [secret_decrypt(endpoint.secret_encrypted)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret_encrypted and expires is not None and expires > now:
        secrets.append(secret_decrypt(endpoint.previous_secret_encrypted))
    return secrets


def backoff_seconds(attempts: int) -> float:
    """The wait after the ``attempts``-th failed attempt: base, 2×base, 4×base … up to the maximum."""
    base, cap = settings.ATLAS_WEBHOOKS_RETRY_BASE_SECONDS, settings.ATLAS_WEBHOOKS_RETRY_MAX_SECONDS
    return min(cap, base * 2 ** min(attempts - 1, 30))


def _send(delivery: WebhookDelivery, now: datetime, resolve: Resolver | None) -> Outcome:
    endpoint = delivery.endpoint
    body = event_body(delivery)
    stamp = int(now.timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        HEADER: signature_header(secrets_signing=signing_secrets(endpoint, now), timestamp=stamp, body=body),
        "Atlas-Event-Id": str(delivery.event_id),
        "Atlas-Event-Type": delivery.event.type,
        "Atlas-Delivery-Attempt": str(delivery.attempts + 1),
    }
    try:
        target = url_check(endpoint.url)
        address = address_choose(target, resolve=resolve)
        answer = transport.post(
            target=target,
            address=address,
            body=body,
            headers=headers,
            timeout=settings.ATLAS_WEBHOOKS_TIMEOUT_SECONDS,
            max_response_bytes=settings.ATLAS_WEBHOOKS_MAX_RESPONSE_BYTES,
        )
    except AddressRefused as exc:
        return Outcome(False, error=f"refused: {exc}")
    except ValidationFailed as exc:  # the rules changed since it was registered (ATLAS_WEBHOOKS_ALLOW_LOOPBACK)
        return Outcome(False, error=f"refused: {exc.message}")
    except Exception as exc:  # the endpoint's failure, whatever its kind, is a failed attempt to retry
        detail = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return Outcome(False, error=shortened(f"{type(exc).__name__}: {detail}", 280))
    if 200 <= answer.status < 300:
        return Outcome(True, answer.status, answer.latency_ms)
    why = "a redirect (not followed)" if 300 <= answer.status < 400 else f"HTTP {answer.status}"
    return Outcome(False, answer.status, answer.latency_ms, error=why)


def _lease(delivery: WebhookDelivery, now: datetime) -> bool:
    hold = timedelta(seconds=settings.ATLAS_WEBHOOKS_TIMEOUT_SECONDS + 30)
    return bool(
        WebhookDelivery.objects.filter(pk=delivery.pk, status=Status.PENDING)
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .update(leased_until=now + hold)
    )


def _record(delivery: WebhookDelivery, outcome: Outcome, now: datetime) -> str:
    """Keep the attempt's outcome on the delivery and its endpoint; the delivery's status after it."""
    delivery.attempts += 1
    delivery.last_status_code = outcome.status_code
    delivery.last_latency_ms = outcome.latency_ms
    delivery.last_error = outcome.error[:300]
    delivery.leased_until = None
    endpoint = delivery.endpoint
    if outcome.ok:
        delivery.status, delivery.finished_at, delivery.next_attempt_at = Status.DELIVERED, now, None
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=None)
        m.WEBHOOK_DELIVERIES.labels(delivery.event.type, "delivered").inc()
    else:
        retry_at = now + timedelta(seconds=backoff_seconds(delivery.attempts))
        give_up_at = delivery.event.created_at + timedelta(hours=settings.ATLAS_WEBHOOKS_RETRY_HOURS)
        if retry_at > give_up_at:
            delivery.status, delivery.finished_at, delivery.next_attempt_at = Status.FAILED, now, None
            m.WEBHOOK_DELIVERIES.labels(delivery.event.type, "gave_up").inc()
        else:
            delivery.next_attempt_at = retry_at
            m.WEBHOOK_DELIVERIES.labels(delivery.event.type, "retry").inc()
        _endpoint_failed(endpoint, outcome, now)
    if outcome.latency_ms is not None:
        m.WEBHOOK_LATENCY.observe(outcome.latency_ms / 1000)
    delivery.save()
    return delivery.status


def _endpoint_failed(endpoint: WebhookEndpoint, outcome: Outcome, now: datetime) -> None:
    WebhookEndpoint.objects.filter(pk=endpoint.pk, failing_since__isnull=True).update(failing_since=now)
    endpoint.refresh_from_db(fields=["failing_since", "is_enabled"])
    limit = timedelta(hours=settings.ATLAS_WEBHOOKS_DISABLE_AFTER_HOURS)
    if endpoint.is_enabled and endpoint.failing_since is not None and now - endpoint.failing_since >= limit:
        since = endpoint.failing_since.strftime("%Y-%m-%d %H:%M UTC")
        endpoint_disable(endpoint=endpoint, reason=f"failing since {since} (last: {outcome.error or 'no answer'})")
        log.warning(
            "webhook endpoint %s of tenant %s disabled: failing since %s", endpoint.pk, endpoint.tenant_id, since
        )


def _earlier_pending(delivery: WebhookDelivery) -> bool:
    return WebhookDelivery.objects.filter(
        endpoint_id=delivery.endpoint_id, subject=delivery.subject, status=Status.PENDING, id__lt=delivery.pk
    ).exists()


def delivery_attempt(*, delivery_id: int, now: datetime | None = None, resolve: Resolver | None = None) -> str:
    """Attempt one delivery if it is due and nothing earlier of its subject waits: what became of it
    (``delivered``, ``pending`` — to be retried —, ``failed`` — given up), or why it was not attempted
    (``gone``, ``disabled``, ``not_due``, ``waiting``, ``leased``)."""
    now = now or timezone.now()
    delivery = WebhookDelivery.objects.select_related("endpoint__tenant", "event").filter(pk=delivery_id).first()
    if delivery is None:
        return "gone"
    if delivery.status != Status.PENDING:
        return delivery.status
    if not delivery.endpoint.is_enabled:
        return "disabled"
    if delivery.next_attempt_at is not None and delivery.next_attempt_at > now:
        return "not_due"
    if _earlier_pending(delivery):
        return "waiting"
    if not _lease(delivery, now):
        return "leased"
    return _record(delivery, _send(delivery, now, resolve), now)


def subject_next(delivery_id: int) -> int | None:
    """The next pending delivery of the same endpoint and subject, after ``delivery_id``."""
    delivery = WebhookDelivery.objects.filter(pk=delivery_id).only("endpoint_id", "subject").first()
    if delivery is None:
        return None
    return (
        WebhookDelivery.objects.filter(
            endpoint_id=delivery.endpoint_id, subject=delivery.subject, status=Status.PENDING, id__gt=delivery_id
        )
        .order_by("id")
        .values_list("id", flat=True)
        .first()
    )


def deliveries_run(*, delivery_id: int, now: datetime | None = None, resolve: Resolver | None = None) -> list[str]:
    """Attempt ``delivery_id`` and, while each one finishes (delivered or given up), the next of its
    subject on that endpoint — up to CHAIN_LIMIT; what became of each."""
    outcomes: list[str] = []
    current: int | None = delivery_id
    while current is not None and len(outcomes) < CHAIN_LIMIT:
        outcome = delivery_attempt(delivery_id=current, now=now, resolve=resolve)
        outcomes.append(outcome)
        if outcome not in (Status.DELIVERED, Status.FAILED):
            break
        current = subject_next(current)
    return outcomes


def deliveries_due(*, now: datetime | None = None, limit: int = 500) -> list[int]:
    """The deliveries to attempt now: of each endpoint's subjects, the earliest pending delivery, when it
    is due (a later one waits behind it anyway)."""
    now = now or timezone.now()
    pending = (
        WebhookDelivery.objects.filter(status=Status.PENDING, endpoint__is_enabled=True)
        .order_by("id")
        .values_list("id", "endpoint_id", "subject", "next_attempt_at", "leased_until")
    )
    heads: dict[tuple[int, str], int] = {}
    due: list[int] = []
    for pk, endpoint_id, subject, next_at, leased in pending.iterator():
        if (endpoint_id, subject) in heads:
            continue
        heads[(endpoint_id, subject)] = pk
        if (next_at is None or next_at <= now) and (leased is None or leased < now):
            due.append(pk)
            if len(due) >= limit:
                break
    return due
