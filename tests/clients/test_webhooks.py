"""Webhook administration through the Python SDK against the live server: an endpoint made (its secret in
that answer only), listed, changed, rotated and removed; its delivery log after a memory write, read page
by page, walked by the iterator and sent again; bad input and another tenant's token refused, changing
nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from atlas_memory import (
    AsyncAtlas,
    Delivery,
    Forbidden,
    NotFound,
    ValidationError,
    Webhook,
    WebhookCreated,
    WebhookSecret,
)

from tenants import services, tokens
from tenants.secrets import secret_decrypt
from tests.webhooks.doc_helpers import python_verifier
from webhooks.delivery import delivery_attempt
from webhooks.models import WebhookEndpoint

from .conftest import FAST

pytestmark = pytest.mark.django_db(transaction=True)

verify = python_verifier()  # the receiver's check exactly as docs/webhooks.md prints it


def _as_listed(created: WebhookCreated) -> Webhook:
    """What get and list answer for a new endpoint: the creation's answer less its secret."""
    return Webhook(**{f.name: getattr(created, f.name) for f in dataclasses.fields(Webhook)})


def test_an_endpoint_is_made_listed_changed_rotated_and_removed(world, atlas, receiver, settings) -> None:
    created = atlas.webhook_create(url=receiver.url, events=["memory.created"], description="crm")
    assert isinstance(created, WebhookCreated) and created.secret.startswith("whsec_")
    assert (created.url, created.events, created.description, created.enabled) == (
        receiver.url,
        ["memory.created"],
        "crm",
        True,
    )
    assert (created.disabled_reason, created.failing_since, created.previous_secret_expires_at) == (None, None, None)
    assert created.secret not in repr(created) and " secret=" not in repr(created)
    assert secret_decrypt(WebhookEndpoint.objects.get(pk=created.id).secret_encrypted) == created.secret
    # The secret was shown once: get and list answer the endpoint without it.
    got = atlas.webhook_get(webhook_id=created.id)
    assert got == _as_listed(created) and got.extra == {}
    assert atlas.webhook_list().webhooks == [_as_listed(created)]

    disabled = atlas.webhook_update(webhook_id=created.id, enabled=False)
    assert (disabled.enabled, disabled.events) == (False, ["memory.created"])
    enabled = atlas.webhook_update(webhook_id=created.id, enabled=True, events=["memory.created", "memory.forgotten"])
    assert (enabled.enabled, enabled.events, enabled.description) == (
        True,
        ["memory.created", "memory.forgotten"],
        "crm",
    )
    assert atlas.webhook_get(webhook_id=created.id) == enabled

    rotated = atlas.webhook_secret_rotate(webhook_id=created.id)
    assert isinstance(rotated, WebhookSecret) and rotated.secret.startswith("whsec_")
    assert rotated.secret != created.secret and rotated.secret not in repr(rotated)
    overlap = timedelta(hours=settings.ATLAS_WEBHOOKS_SECRET_OVERLAP_HOURS)
    assert overlap - timedelta(minutes=5) < rotated.previous_secret_expires_at - datetime.now(UTC) <= overlap
    # The endpoint says until when the previous secret still signs; its secret is never read back.
    after = atlas.webhook_get(webhook_id=created.id)
    assert after.previous_secret_expires_at == rotated.previous_secret_expires_at and after.extra == {}

    assert atlas.webhook_delete(webhook_id=created.id) is None
    with pytest.raises(NotFound):
        atlas.webhook_get(webhook_id=created.id)
    assert atlas.webhook_list().webhooks == []
    assert not WebhookEndpoint.objects.filter(pk=created.id).exists()


def test_a_memory_write_is_delivered_logged_and_sent_again(atlas, receiver) -> None:
    created = atlas.webhook_create(url=receiver.url, events=["memory.created"])
    episode = atlas.episode_write(subject="alice", text="I moved to Lisbon last month")
    (pending,) = atlas.webhook_deliveries(webhook_id=created.id).deliveries
    assert isinstance(pending, Delivery)
    assert (pending.type, pending.subject, pending.status, pending.attempts) == (
        "memory.created",
        "alice",
        "pending",
        0,
    )
    assert (pending.data["memory"]["id"], pending.data["memory"]["text"]) == (episode.id, episode.text)

    delivery_attempt(delivery_id=pending.id)  # the worker's attempt, made here: no worker runs in this test
    page = atlas.webhook_deliveries(webhook_id=created.id)
    (delivered,) = page.deliveries
    assert (delivered.id, delivered.status, delivered.attempts, delivered.last_status_code) == (
        pending.id,
        "delivered",
        1,
        200,
    )
    assert page.next_before is None and isinstance(delivered.finished_at, datetime)
    (first,) = receiver.requests
    assert first.headers["Atlas-Signature"].count("v1=") == 1
    assert verify(secret=created.secret, header=first.headers["Atlas-Signature"], body=first.body)

    # Rotated, then sent again: the same event, signed by the new secret and, during the overlap, the old one.
    rotated = atlas.webhook_secret_rotate(webhook_id=created.id)
    again = atlas.webhook_redeliver(webhook_id=created.id, delivery_id=delivered.id)
    assert (again.event_id, again.status, again.attempts) == (delivered.event_id, "pending", 0)
    assert again.id != delivered.id and again.data == delivered.data
    delivery_attempt(delivery_id=again.id)
    second = receiver.requests[1]
    assert second.headers["Atlas-Event-Id"] == first.headers["Atlas-Event-Id"] == delivered.event_id
    assert second.headers["Atlas-Signature"].count("v1=") == 2
    for secret in (rotated.secret, created.secret):
        assert verify(secret=secret, header=second.headers["Atlas-Signature"], body=second.body)

    newest = atlas.webhook_deliveries(webhook_id=created.id, page_size=1)
    assert [d.id for d in newest.deliveries] == [again.id] and newest.next_before == again.id
    older = atlas.webhook_deliveries(webhook_id=created.id, page_size=1, before=newest.next_before)
    assert [d.id for d in older.deliveries] == [delivered.id] and older.next_before is None


def test_the_delivery_log_is_walked_page_after_page_sync_and_async(world, atlas, receiver) -> None:
    created = atlas.webhook_create(url=receiver.url, events=["memory.created"])
    for n in range(5):
        atlas.episode_write(subject="alice", text=f"Turn {n} of the long talk")
    log = atlas.webhook_deliveries(webhook_id=created.id, page_size=100)
    newest_first = [d.id for d in log.deliveries]
    assert len(newest_first) == 5 and newest_first == sorted(newest_first, reverse=True)
    assert log.next_before is None
    # Two a page: only following next_before past the first two pages reaches the oldest ones.
    walked = list(atlas.webhook_deliveries_iter(webhook_id=created.id, page_size=2))
    assert all(isinstance(d, Delivery) for d in walked)
    assert [d.id for d in walked] == newest_first
    assert [d.data["memory"]["text"] for d in walked] == [f"Turn {n} of the long talk" for n in range(4, -1, -1)]

    async def walk() -> list[int]:
        async with AsyncAtlas(world.url, world.svc, retry=FAST) as client:
            return [d.id async for d in client.webhook_deliveries_iter(webhook_id=created.id, page_size=2)]

    assert asyncio.run(walk()) == newest_first


def test_bad_input_is_refused_and_changes_nothing(world, atlas, receiver) -> None:
    with pytest.raises(ValidationError) as plain_http:
        atlas.webhook_create(url="http://hooks.example.com/atlas", events=["memory.created"])
    assert plain_http.value.status == 400 and plain_http.value.fields["url"].startswith("url must use https")
    with pytest.raises(ValidationError) as unknown_event:
        atlas.webhook_create(url=receiver.url, events=["memory.eaten"])
    assert list(unknown_event.value.fields) == ["events[0]"]
    assert not WebhookEndpoint.objects.filter(tenant=world.tenant).exists()

    created = atlas.webhook_create(url=receiver.url, events=["memory.created"])
    with pytest.raises(ValidationError) as nothing_given:
        atlas.webhook_update(webhook_id=created.id)
    assert "at least one" in nothing_given.value.detail
    with pytest.raises(ValidationError):
        atlas.webhook_update(webhook_id=created.id, url="http://hooks.example.com/atlas")
    assert atlas.webhook_get(webhook_id=created.id) == _as_listed(created)
    with world.client(world.ro) as reader, pytest.raises(Forbidden):  # registering one reads what is to come
        reader.webhook_create(url=receiver.url, events=["memory.created"])
    assert atlas.webhook_list().webhooks == [_as_listed(created)]


def test_another_tenants_token_finds_no_endpoint_and_changes_nothing(world, atlas, receiver) -> None:
    created = atlas.webhook_create(url=receiver.url, events=["memory.created"])
    atlas.episode_write(subject="alice", text="I like jazz")
    (delivery,) = atlas.webhook_deliveries(webhook_id=created.id).deliveries
    other = services.tenant_create(slug=f"sdk-o-{uuid.uuid4().hex[:8]}", name="Other", actor="test")
    token = tokens.token_create(tenant=other, name="admin", scopes="read,write", actor="test").secret
    with world.client(token) as stranger:
        for attempt in (
            lambda: stranger.webhook_get(webhook_id=created.id),
            lambda: stranger.webhook_update(webhook_id=created.id, enabled=False),
            lambda: stranger.webhook_secret_rotate(webhook_id=created.id),
            lambda: stranger.webhook_deliveries(webhook_id=created.id),
            lambda: stranger.webhook_redeliver(webhook_id=created.id, delivery_id=delivery.id),
            lambda: stranger.webhook_delete(webhook_id=created.id),
        ):
            with pytest.raises(NotFound) as missing:  # the same 404 as an endpoint that does not exist
                attempt()
            assert missing.value.status == 404
        assert stranger.webhook_list().webhooks == []
    assert atlas.webhook_get(webhook_id=created.id) == _as_listed(created)
    assert secret_decrypt(WebhookEndpoint.objects.get(pk=created.id).secret_encrypted) == created.secret
    assert [d.id for d in atlas.webhook_deliveries(webhook_id=created.id).deliveries] == [delivery.id]


def test_the_async_client_administers_webhooks_too(world, receiver) -> None:
    async def admin() -> None:
        async with AsyncAtlas(world.url, world.svc, retry=FAST) as atlas:
            created = await atlas.webhook_create(url=receiver.url, events=["memory.forgotten"])
            assert created.secret.startswith("whsec_") and created.secret not in repr(created)
            assert (await atlas.webhook_list()).webhooks == [_as_listed(created)]
            changed = await atlas.webhook_update(webhook_id=created.id, description="compliance log")
            assert changed.description == "compliance log"
            rotated = await atlas.webhook_secret_rotate(webhook_id=created.id)
            assert rotated.secret != created.secret and rotated.secret not in repr(rotated)
            assert (await atlas.webhook_deliveries(webhook_id=created.id)).deliveries == []
            assert await atlas.webhook_delete(webhook_id=created.id) is None
            with pytest.raises(NotFound):
                await atlas.webhook_get(webhook_id=created.id)

    asyncio.run(admin())
