"""Webhook endpoints, the events recorded for them and each delivery of an event to an endpoint."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from tenants.models import Tenant


class WebhookEndpoint(models.Model):
    """A tenant admin's URL that receives the events it subscribed to, signed with its secret.

    The secret is Fernet-encrypted (tenants.secrets) and shown once. A rotation keeps the previous secret
    until ``previous_secret_expires_at``: deliveries carry a signature with each meanwhile, so a receiver
    can switch at its own pace. An endpoint that keeps failing is disabled, saying why."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.CharField(max_length=2000)
    events = models.JSONField(default=list)
    description = models.CharField(max_length=200, blank=True)
    secret_encrypted = models.TextField(editable=False)
    previous_secret_encrypted = models.TextField(blank=True, editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    is_enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    # The first failed attempt since the last success: ATLAS_WEBHOOKS_DISABLE_AFTER_HOURS later it is disabled.
    failing_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)

    class Meta:
        ordering = ["tenant", "id"]

    def __str__(self) -> str:
        return f"{self.tenant.slug}: {self.url}"


class WebhookEvent(models.Model):
    """Something that happened to a tenant's memory, as its endpoints receive it. ``id`` is the event id
    receivers de-duplicate by. ``data`` may hold a memory's text (memory.created …): forgetting that
    memory, or its subject, replaces it (webhooks.services.webhook_events_forget)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_events")
    subject = models.CharField(max_length=128, blank=True)  # the subject's external id; "" for none
    memory_id = models.CharField(max_length=128, blank=True, db_index=True)
    type = models.CharField(max_length=40)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["tenant", "subject"], name="webhook_event_subject")]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"


class WebhookDelivery(models.Model):
    """One event to one endpoint: attempted until it succeeds or ATLAS_WEBHOOKS_RETRY_HOURS pass, in the
    order of ``id`` among the endpoint's deliveries for the same subject. Kept ATLAS_WEBHOOKS_KEEP_DAYS."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed", "failed (gave up)"

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    subject = models.CharField(max_length=128, blank=True)  # the event's, for the per-subject order
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # A worker attempting it holds it until then (an attempt that died is taken again after it).
    leased_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_latency_ms = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["endpoint", "subject", "status"], name="webhook_delivery_order"),
            models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → endpoint {self.endpoint_id} ({self.status})"
