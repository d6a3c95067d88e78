"""``/api/v1/webhooks`` through real HTTP: tenant tokens that may read and write manage endpoints (the secret
in the creation's answer only), read the delivery log with its payloads and send again; every other
token is refused and changes nothing; bad input is a problem naming the field."""

from __future__ import annotations

import uuid

import pytest

from tenants import services, tokens
from tenants.secrets import secret_decrypt
from tests.memory.api.test_rest import Api
from webhooks.delivery import delivery_attempt
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import event_emit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world(atlas_server, atlas_es, receiver):
    tenant = services.tenant_create(slug=f"wh-{uuid.uuid4().hex[:8]}", name="Webhook API", actor="test")
    alice = services.subject_create(tenant=tenant, external_id="alice", actor="test")
    other = services.tenant_create(slug=f"wo-{uuid.uuid4().hex[:8]}", name="Other", actor="test")

    def token(owner, scopes, subject=None):
        return Api(
            atlas_server.url,
            tokens.token_create(tenant=owner, subject=subject, name="t", scopes=scopes, actor="test").secret,
        )

    return {
        "tenant": tenant,
        "admin": token(tenant, "read,write"),
        "reader": token(tenant, "read"),
        "subject": token(tenant, "read,write", subject=alice),
        "other": token(other, "read,write"),
    }


def test_a_tenant_admin_token_manages_endpoints_and_reads_the_log(world, receiver) -> None:
    api = world["admin"]
    created = api("POST", "webhooks", json={"url": receiver.url, "events": ["memory.created"], "description": "crm"})
    assert created.status_code == 201, created.text
    body = created.json()
    endpoint = WebhookEndpoint.objects.get(pk=body["id"])
    assert body["secret"].startswith("whsec_") and secret_decrypt(endpoint.secret_encrypted) == body["secret"]
    assert {k: body[k] for k in ("url", "events", "description", "enabled")} == {
        "url": receiver.url, "events": ["memory.created"], "description": "crm", "enabled": True,
    }  # fmt: skip
    listed = api("GET", "webhooks").json()["webhooks"]
    assert [w["id"] for w in listed] == [endpoint.pk] and "secret" not in listed[0]
    assert "secret" not in api("GET", f"webhooks/{endpoint.pk}").json()

    event = event_emit(tenant=world["tenant"], type="memory.created", subject="alice", data={"memory": {"id": "m"}})
    delivery_attempt(delivery_id=WebhookDelivery.objects.get(event=event).pk)
    log = api("GET", f"webhooks/{endpoint.pk}/deliveries").json()
    (entry,) = log["deliveries"]
    assert log["next_before"] is None
    assert (entry["event_id"], entry["status"], entry["attempts"], entry["last_status_code"]) == (
        str(event.id), "delivered", 1, 200,
    )  # fmt: skip
    assert entry["data"] == {"memory": {"id": "m"}}
    again = api("POST", f"webhooks/{endpoint.pk}/deliveries/{entry['id']}/redeliver")
    assert again.status_code == 202 and again.json()["event_id"] == str(event.id)
    assert again.json()["status"] == "pending"

    rotated = api("POST", f"webhooks/{endpoint.pk}/rotate-secret").json()
    endpoint.refresh_from_db()
    assert secret_decrypt(endpoint.secret_encrypted) == rotated["secret"] != body["secret"]
    patched = api("PATCH", f"webhooks/{endpoint.pk}", json={"enabled": False, "events": ["memory.forgotten"]})
    assert (patched.json()["enabled"], patched.json()["events"]) == (False, ["memory.forgotten"])
    assert api("DELETE", f"webhooks/{endpoint.pk}").status_code == 204
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()


@pytest.mark.parametrize(("who", "status"), [("reader", 403), ("subject", 403), ("other", 404)])
def test_other_tokens_are_refused_and_change_nothing(world, receiver, who, status) -> None:
    endpoint = WebhookEndpoint.objects.create(
        tenant=world["tenant"], url=receiver.url, events=["memory.created"], secret_encrypted="x", created_by="t"
    )
    api = world[who]
    if who != "other":
        refused = api("POST", "webhooks", json={"url": receiver.url, "events": ["memory.created"]})
        assert refused.status_code == 403 and refused.headers["Content-Type"] == "application/problem+json"
    assert api("PATCH", f"webhooks/{endpoint.pk}", json={"enabled": False}).status_code == status
    assert api("DELETE", f"webhooks/{endpoint.pk}").status_code == status
    assert api("POST", f"webhooks/{endpoint.pk}/rotate-secret").status_code == status
    endpoint.refresh_from_db()
    assert (endpoint.is_enabled, endpoint.secret_encrypted) == (True, "x")
    assert WebhookEndpoint.objects.count() == 1
    if who == "other":
        assert api("GET", "webhooks").json() == {"webhooks": []}


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"url": "http://169.254.169.254/", "events": ["memory.created"]}, "url", "url must use https"),
        ({"url": "https://10.0.0.1/", "events": ["memory.created"]}, "url", "url points at a private address"),
        ({"url": "https://hooks.example.com/", "events": ["memory.eaten"]}, "events[0]", "must be one of"),
        ({"url": "https://hooks.example.com/", "events": []}, "events", ""),
        (
            {"url": "https://hooks.example.com/", "events": ["memory.created"], "secret": "mine"},
            "secret",
            "unknown field",
        ),
    ],
)
def test_bad_input_is_a_problem_naming_the_field_and_stores_nothing(world, body, field, message) -> None:
    answer = world["admin"]("POST", "webhooks", json=body)
    assert answer.status_code == 400, answer.text
    (error,) = answer.json()["errors"]
    assert error["field"] == field and error["message"].startswith(message)
    assert not WebhookEndpoint.objects.exists()
