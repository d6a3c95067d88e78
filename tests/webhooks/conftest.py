"""Fixtures for the webhook tests: a live receiver on loopback (ATLAS_WEBHOOKS_ALLOW_LOOPBACK on, as in
development), a tenant, and an endpoint of it pointing at the receiver."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tenants.models import Tenant
from webhooks.services import endpoint_create

from .receiver import Receiver, receiver_start


@pytest.fixture
def loopback(settings):
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = True
    return settings


@pytest.fixture
def receiver(loopback) -> Iterator[Receiver]:
    started = receiver_start(Receiver())
    yield started
    started.server.shutdown()
    started.server.server_close()


@pytest.fixture
def plain_tenant(db) -> Tenant:
    """A tenant row alone (no Elasticsearch keys): enough for endpoints, events and deliveries."""
    return Tenant.objects.create(slug=f"w-{uuid.uuid4().hex[:8]}", name="Webhook tests")


@pytest.fixture
def endpoint_and_secret(plain_tenant, receiver):
    return endpoint_create(
        tenant=plain_tenant, url=receiver.url, events=["memory.created", "memory.forgotten"], actor="test"
    )
