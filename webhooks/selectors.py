"""Webhook reads: a tenant's endpoints, their delivery logs, and the notice of a disabled endpoint."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from atlas_site.errors import NotFound
from tenants.models import Tenant

from .models import WebhookDelivery, WebhookEndpoint


def endpoint_get(*, tenant: Tenant, endpoint_id: Any) -> WebhookEndpoint:
    """One of ``tenant``'s endpoints; another tenant's is the same 404 as a missing one."""
    pk = int(endpoint_id) if isinstance(endpoint_id, int | str) and str(endpoint_id).isdigit() else None
    endpoint = WebhookEndpoint.objects.select_related("tenant").filter(tenant=tenant, pk=pk).first() if pk else None
    if endpoint is None:
        raise NotFound(f"no webhook endpoint {endpoint_id} in this tenant", field="webhook")
    return endpoint


def endpoints_list(*, tenant: Tenant) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(tenant=tenant).order_by("id")


def deliveries_list(*, endpoint: WebhookEndpoint, limit: int = 50, before: int | None = None) -> list[WebhookDelivery]:
    """The endpoint's deliveries, newest first (``before``: older than that delivery id)."""
    deliveries = WebhookDelivery.objects.filter(endpoint=endpoint).select_related("event")
    if before is not None:
        deliveries = deliveries.filter(pk__lt=before)
    return list(deliveries.order_by("-id")[:limit])


def delivery_get(*, endpoint: WebhookEndpoint, delivery_id: Any) -> WebhookDelivery:
    pk = int(delivery_id) if str(delivery_id).isdigit() else None
    delivery = (
        WebhookDelivery.objects.select_related("event", "endpoint__tenant").filter(endpoint=endpoint, pk=pk).first()
        if pk
        else None
    )
    if delivery is None:
        raise NotFound(f"no delivery {delivery_id} of this endpoint", field="delivery")
    return delivery


def endpoint_view(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """An endpoint as interfaces show it: never a secret."""
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "events": list(endpoint.events),
        "description": endpoint.description,
        "enabled": endpoint.is_enabled,
        "disabled_reason": endpoint.disabled_reason or None,
        "failing_since": endpoint.failing_since,
        "previous_secret_expires_at": endpoint.previous_secret_expires_at,
        "created_at": endpoint.created_at,
    }


def delivery_view(delivery: WebhookDelivery, *, payload: bool) -> dict[str, Any]:
    """A delivery as the log shows it; ``payload`` (the event's data, which may quote a memory) only for
    those who may read the tenant's memories."""
    view: dict[str, Any] = {
        "id": delivery.pk,
        "event_id": str(delivery.event_id),
        "type": delivery.event.type,
        "subject": delivery.subject or None,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "next_attempt_at": delivery.next_attempt_at,
        "last_status_code": delivery.last_status_code,
        "last_latency_ms": delivery.last_latency_ms,
        "last_error": delivery.last_error or None,
        "created_at": delivery.created_at,
        "finished_at": delivery.finished_at,
    }
    if payload:
        view["data"] = delivery.event.data
    return view


def endpoints_disabled_notice(tenant: Tenant) -> list[str]:
    """What the tenant section tells its admins about endpoints the system disabled."""
    disabled = WebhookEndpoint.objects.filter(tenant=tenant, is_enabled=False).exclude(
        disabled_reason__startswith="disabled by"
    )
    return [
        f"Webhook endpoint {e.url} was disabled: {e.disabled_reason}. Fix it, then enable it on the Webhooks page."
        for e in disabled.order_by("id")
    ]
