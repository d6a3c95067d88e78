"""The Python SDK against a live server: uvicorn on a free port, the embedded Elasticsearch, real tokens."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from atlas_memory import Atlas, Retry

from tenants import services, tokens
from tenants.models import ApiKeyCredential
from tests.webhooks.receiver import Receiver, receiver_start

#: Retries quick enough for a test, long enough for the server's Retry-After of 1-2 s.
FAST = Retry(attempts=5, total_seconds=20, backoff=0.05, max_wait=0.5)


@dataclass
class World:
    url: str
    tenant: object
    svc: str  # a tenant token: read, write, forget
    ro: str  # a tenant token: read
    own: str  # alice's own token: read, write

    def client(self, token: str | None = None, *, retry: Retry = FAST) -> Atlas:
        return Atlas(self.url, token or self.svc, retry=retry, timeout=60)


@pytest.fixture
def world(atlas_server, atlas_es, transactional_db) -> World:
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"sdk-{uuid.uuid4().hex[:8]}", name="SDK tests", actor="test")
    alice = services.subject_create(tenant=tenant, external_id="alice", actor="test")
    services.subject_create(tenant=tenant, external_id="bob", actor="test")
    return World(
        url=atlas_server.url,
        tenant=tenant,
        svc=tokens.token_create(tenant=tenant, name="svc", scopes="read,write,forget", actor="test").secret,
        ro=tokens.token_create(tenant=tenant, name="ro", scopes="read", actor="test").secret,
        own=tokens.token_create(tenant=tenant, subject=alice, name="alice", scopes="read,write", actor="test").secret,
    )


@pytest.fixture
def atlas(world):
    with world.client() as client:
        yield client


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    """A webhook receiver on loopback, which the live server (a thread of this process, so the same
    settings) may deliver to while ATLAS_WEBHOOKS_ALLOW_LOOPBACK is on."""
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = True
    started = receiver_start(Receiver())
    yield started
    started.server.shutdown()
    started.server.server_close()
