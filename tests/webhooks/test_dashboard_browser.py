"""A tenant owner adds a webhook endpoint in a real browser, copies its secret (shown once), sees the delivery
log with "send again", and sees the notice when the system disabled the endpoint. Every page axe-clean."""

from __future__ import annotations

import re
import uuid

import pytest

from tenants import services
from tenants.models import Tenant
from tenants.secrets import secret_decrypt
from tests.browser import person_create, person_login
from webhooks.delivery import delivery_attempt
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import endpoint_disable, event_emit

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a long enough password 1"


def _look(page, axe_clean, screenshot, name: str) -> None:
    page.wait_for_load_state()
    axe_clean(page)
    screenshot(page, name)


def test_an_owner_adds_an_endpoint_and_reads_its_log(page, axe_clean, screenshot, receiver) -> None:
    tenant = Tenant.objects.create(slug=f"hooks-{uuid.uuid4().hex[:6]}", name="Hooks Co")
    person_create("owner@hooks.test", PASSWORD)
    services.membership_add(tenant=tenant, email="owner@hooks.test", role="owner", actor="test")
    person_login(page, "owner@hooks.test", PASSWORD)
    page.goto(f"/tenant/{tenant.slug}/webhooks/")
    _look(page, axe_clean, screenshot, "tenant-webhooks")
    page.get_by_label("URL").fill(receiver.url)
    page.get_by_label("memory.created").check()
    page.get_by_label("memory.forgotten").check()
    page.get_by_role("button", name="Add endpoint").click()
    page.wait_for_load_state()
    secret = re.search(r"whsec_\S+", page.locator("pre code").inner_text()).group(0)
    endpoint = WebhookEndpoint.objects.get(tenant=tenant)
    assert secret_decrypt(endpoint.secret_encrypted) == secret
    assert endpoint.events == ["memory.created", "memory.forgotten"]
    _look(page, axe_clean, screenshot, "tenant-webhooks-added")

    event = event_emit(tenant=tenant, type="memory.created", subject="alice", data={"memory": {"text": "Hi"}})
    delivery_attempt(delivery_id=WebhookDelivery.objects.get(event=event).pk)
    page.get_by_role("link", name=receiver.url).click()
    page.wait_for_load_state()
    assert str(event.id) in page.content() and "delivered" in page.content()
    _look(page, axe_clean, screenshot, "tenant-webhook-log")
    page.get_by_role("button", name="Send again").click()
    page.wait_for_load_state()
    assert WebhookDelivery.objects.filter(event=event).count() == 2

    endpoint_disable(endpoint=endpoint, reason="failing since 2026-12-03 10:00 UTC (last: HTTP 500)")
    page.goto(f"/tenant/{tenant.slug}/members/")
    notice = page.get_by_role("alert")
    assert notice.inner_text().startswith(f"Webhook endpoint {receiver.url} was disabled: failing since")
    _look(page, axe_clean, screenshot, "tenant-webhook-disabled-notice")
