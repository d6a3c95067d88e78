"""The tenant section's webhook pages: an owner adds an endpoint (the secret shown on the next page only),
reads the delivery log with its payload and sends an event again, disables and enables; every tenant page
tells the admins about an endpoint the system disabled; a plain member and another tenant's admin get 404
and change nothing."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tenants import services
from tenants.models import AuditRecord, Person, Tenant
from tenants.secrets import secret_decrypt
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import endpoint_disable, event_emit


def _person(email: str) -> Person:
    return Person.objects.create_user(email=email, password="a long enough password 1")


@pytest.fixture
def people(plain_tenant):
    other = Tenant.objects.create(slug="other-co", name="Other")
    owner, member, stranger = _person("owner@w.test"), _person("member@w.test"), _person("admin@other.test")
    services.membership_add(tenant=plain_tenant, email=owner.email, role="owner", actor="test")
    services.membership_add(tenant=plain_tenant, email=member.email, role="member", actor="test")
    services.membership_add(tenant=other, email=stranger.email, role="admin", actor="test")
    return {"owner": owner, "member": member, "stranger": stranger}


def _u(name: str, slug: str, *args) -> str:
    return reverse(f"tenant:{name}", args=[slug, *args])


def test_an_owner_adds_an_endpoint_and_sees_its_secret_once(client, people, plain_tenant, receiver) -> None:
    client.force_login(people["owner"])
    slug = plain_tenant.slug
    added = client.post(_u("webhooks", slug), {"url": receiver.url, "events": ["memory.created", "subject.forgotten"]})
    assert added.status_code == 302
    endpoint = WebhookEndpoint.objects.get(tenant=plain_tenant)
    assert endpoint.events == ["memory.created", "subject.forgotten"]
    page = client.get(_u("webhooks", slug)).content.decode()
    secret = re.search(r"<code>(whsec_[^<]+)</code>", page).group(1)
    assert secret_decrypt(endpoint.secret_encrypted) == secret
    assert "whsec_" not in client.get(_u("webhooks", slug)).content.decode()  # shown that once
    refused = client.post(_u("webhooks", slug), {"url": "http://169.254.169.254/", "events": ["memory.created"]})
    assert refused.status_code == 400 and "url must use https" in refused.content.decode()
    assert WebhookEndpoint.objects.count() == 1


def test_the_log_shows_payloads_and_sends_again(client, people, plain_tenant, endpoint_and_secret) -> None:
    endpoint, _ = endpoint_and_secret
    event = event_emit(
        tenant=plain_tenant, type="memory.created", subject="alice", data={"memory": {"text": "Alice likes tea"}}
    )
    (first,) = WebhookDelivery.objects.filter(event=event)
    client.force_login(people["owner"])
    page = client.get(_u("webhook", plain_tenant.slug, endpoint.pk)).content.decode()
    assert str(event.id) in page and "Alice likes tea" in page and "Send again" in page
    # The payload quotes a memory: reading it is audited like the support view's reads.
    viewed = AuditRecord.objects.filter(action="webhook.log_view").latest("pk")
    assert (viewed.target, viewed.detail) == (f"webhook:{endpoint.pk}", {"subjects": ["alice"]})
    again = client.post(_u("webhook_redeliver", plain_tenant.slug, endpoint.pk, first.pk))
    assert again.status_code == 302
    assert WebhookDelivery.objects.filter(event=event).count() == 2
    rotated = client.post(_u("webhook_rotate", plain_tenant.slug, endpoint.pk))
    assert rotated.status_code == 302
    page = client.get(rotated["Location"]).content.decode()
    new = re.search(r"<code>(whsec_[^<]+)</code>", page).group(1)
    endpoint.refresh_from_db()
    assert "New signing secret" in page and secret_decrypt(endpoint.secret_encrypted) == new
    client.post(_u("webhook_enabled", plain_tenant.slug, endpoint.pk), {"enabled": "false"})
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).is_enabled is False
    client.post(_u("webhook_enabled", plain_tenant.slug, endpoint.pk), {"enabled": "true"})
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).is_enabled is True


def test_every_tenant_page_tells_the_admins_about_a_disabled_endpoint(
    client, people, plain_tenant, endpoint_and_secret
) -> None:
    endpoint, _ = endpoint_and_secret
    client.force_login(people["owner"])
    assert "was disabled" not in client.get(_u("members", plain_tenant.slug)).content.decode()
    endpoint_disable(endpoint=endpoint, reason="failing since 2026-12-03 10:00 UTC (last: HTTP 500)")
    for page in ("members", "subjects", "tokens", "webhooks"):
        shown = client.get(_u(page, plain_tenant.slug)).content.decode()
        assert (
            f"Webhook endpoint {endpoint.url} was disabled: failing since 2026-12-03 10:00 UTC (last: HTTP 500)."
            in shown
        ), page


@pytest.mark.parametrize("who", ["member", "stranger"])
def test_a_member_or_another_tenants_admin_gets_404_and_changes_nothing(
    client, people, plain_tenant, endpoint_and_secret, who
) -> None:
    endpoint, _ = endpoint_and_secret
    event = event_emit(tenant=plain_tenant, type="memory.created", subject="alice", data={"memory": {"text": "x"}})
    (first,) = WebhookDelivery.objects.filter(event=event)
    client.force_login(people[who])
    slug = plain_tenant.slug
    assert client.get(_u("webhooks", slug)).status_code == 404
    assert client.get(_u("webhook", slug, endpoint.pk)).status_code == 404
    assert client.post(_u("webhook_delete", slug, endpoint.pk)).status_code == 404
    assert client.post(_u("webhook_rotate", slug, endpoint.pk)).status_code == 404
    assert client.post(_u("webhook_redeliver", slug, endpoint.pk, first.pk)).status_code == 404
    assert (
        client.post(_u("webhooks", slug), {"url": "https://a.example.com/", "events": ["memory.created"]}).status_code
        == 404
    )
    assert list(WebhookEndpoint.objects.values_list("pk", flat=True)) == [endpoint.pk]
    assert WebhookDelivery.objects.count() == 1
