"""The wiring with a real Celery worker process: an event recorded here is delivered by the worker (its
first attempt queued when the transaction commits), to a live receiver — at least once, signed."""

from __future__ import annotations

import json
import time

import pytest
from django.db import transaction

from webhooks.models import WebhookDelivery
from webhooks.services import event_emit

from ..atlas_site.test_celery_worker import worker  # noqa: F401 (the worker process fixture)
from .doc_helpers import python_verifier


@pytest.fixture
def loopback_env(monkeypatch):
    """The worker reads its settings from the environment it starts with."""
    monkeypatch.setenv("ATLAS_WEBHOOKS_ALLOW_LOOPBACK", "true")


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_delivers_an_event_at_least_once(
    loopback_env,
    endpoint_and_secret,
    plain_tenant,
    receiver,
    worker,  # noqa: F811 (the imported fixture)
) -> None:
    _, secret = endpoint_and_secret
    with transaction.atomic():
        event = event_emit(tenant=plain_tenant, type="memory.created", subject="alice", data={"memory": {"id": "m"}})
        assert receiver.requests == []  # queued only once the transaction commits
    delivery = WebhookDelivery.objects.get(event=event)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        delivery.refresh_from_db()
        if delivery.status != "pending":
            break
        time.sleep(0.5)
    assert delivery.status == "delivered", (delivery.status, delivery.last_error)
    assert {json.loads(r.body)["id"] for r in receiver.requests} == {str(event.id)}
    request = receiver.requests[0]
    assert python_verifier()(secret=secret, header=request.headers["Atlas-Signature"], body=request.body)
