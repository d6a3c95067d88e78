"""Delivering events to a real receiver: signed (checked with the documentation's own helpers), retried
with exponential back-off, in order per subject, given up after the retry window, and the endpoint
disabled after failing for ATLAS_WEBHOOKS_DISABLE_AFTER_HOURS."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta

from django.utils import timezone
from prometheus_client import REGISTRY

from tenants.secrets import secret_decrypt
from webhooks import delivery
from webhooks.delivery import deliveries_due, deliveries_run, delivery_attempt
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.selectors import endpoint_view, endpoints_disabled_notice
from webhooks.services import deliveries_cleanup, endpoint_secret_rotate, event_emit

from ..clients.node import node
from .doc_helpers import python_verifier, typescript_as_javascript

DATA = {"memory": {"id": "m1", "type": "semantic", "text": "Alice lives in Lisbon"}}


def _emit(tenant, subject="alice", memory_id="m1"):
    data = {"memory": {**DATA["memory"], "id": memory_id}}
    event = event_emit(tenant=tenant, type="memory.created", subject=subject, memory_id=memory_id, data=data)
    return event, WebhookDelivery.objects.get(event=event)


def test_a_delivery_is_the_documented_body_signed_so_the_documented_helper_verifies_it(
    plain_tenant, endpoint_and_secret, receiver
) -> None:
    _, secret = endpoint_and_secret
    event, sent = _emit(plain_tenant)
    assert delivery_attempt(delivery_id=sent.pk) == "delivered"
    (request,) = receiver.requests
    assert request.path == "/hook"
    body = json.loads(request.body)
    assert body == {
        "id": str(event.id),
        "type": "memory.created",
        "created_at": event.created_at.isoformat().replace("+00:00", "Z"),
        "tenant": plain_tenant.slug,
        "subject": "alice",
        "data": DATA,
    }
    assert request.headers["Atlas-Event-Id"] == str(event.id)
    assert request.headers["Content-Type"] == "application/json"
    header = request.headers["Atlas-Signature"]
    stamp = int(header.split(",")[0].removeprefix("t="))
    verify = python_verifier()
    assert verify(secret=secret, header=header, body=request.body) is True
    assert verify(secret=secret, header=header, body=request.body + b" ") is False
    assert verify(secret="whsec_other", header=header, body=request.body) is False
    assert verify(secret=secret, header=header, body=request.body, now=stamp + 301) is False  # a replay
    sent.refresh_from_db()
    assert (sent.status, sent.attempts, sent.last_status_code) == ("delivered", 1, 200)
    assert sent.last_latency_ms is not None and sent.finished_at is not None


def test_the_documented_typescript_helper_verifies_the_same_delivery(
    plain_tenant, endpoint_and_secret, receiver, tmp_path
) -> None:
    _, secret = endpoint_and_secret
    _, sent = _emit(plain_tenant)
    delivery_attempt(delivery_id=sent.pk)
    (request,) = receiver.requests
    header = request.headers["Atlas-Signature"]
    stamp = int(header.split(",")[0].removeprefix("t="))
    script = tmp_path / "verify.mjs"
    script.write_text(
        typescript_as_javascript()
        + "\nconst [secret, header, body, now] = process.argv.slice(2);\n"
        + "const b = Buffer.from(body, 'base64');\n"
        + "console.log(JSON.stringify([atlasSignatureVerify(secret, header, b, 300, Number(now)),"
        + " atlasSignatureVerify(secret, header, Buffer.concat([b, Buffer.from(' ')]), 300, Number(now)),"
        + " atlasSignatureVerify('whsec_other', header, b, 300, Number(now)),"
        + " atlasSignatureVerify(secret, header, b, 300, Number(now) + 301)]));\n"
    )
    import base64

    answer = subprocess.run(
        [node(), str(script), secret, header, base64.b64encode(request.body).decode(), str(stamp)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout) == [True, False, False, False]


def test_a_rotated_secret_signs_beside_the_new_one_until_the_overlap_ends(
    plain_tenant, endpoint_and_secret, receiver
) -> None:
    endpoint, old = endpoint_and_secret
    new = endpoint_secret_rotate(endpoint=endpoint, actor="test")
    assert new != old
    _, first = _emit(plain_tenant, memory_id="m1")
    delivery_attempt(delivery_id=first.pk)
    header = receiver.requests[0].headers["Atlas-Signature"]
    assert header.count("v1=") == 2
    verify = python_verifier()
    assert verify(secret=new, header=header, body=receiver.requests[0].body)
    assert verify(secret=old, header=header, body=receiver.requests[0].body)
    _, second = _emit(plain_tenant, memory_id="m2")
    later = timezone.now() + timedelta(hours=24, minutes=1)
    delivery_attempt(delivery_id=second.pk, now=later)
    header = receiver.requests[1].headers["Atlas-Signature"]
    assert header.count("v1=") == 1
    assert verify(secret=new, header=header, body=receiver.requests[1].body, now=later.timestamp())
    assert not verify(secret=old, header=header, body=receiver.requests[1].body, now=later.timestamp())


def test_the_secret_is_stored_encrypted_and_never_shown_again(plain_tenant, endpoint_and_secret) -> None:
    endpoint, secret = endpoint_and_secret
    assert secret.startswith("whsec_") and len(secret) > 40
    stored = WebhookEndpoint.objects.get(pk=endpoint.pk)
    assert secret not in stored.secret_encrypted
    assert secret_decrypt(stored.secret_encrypted) == secret
    assert secret not in json.dumps(endpoint_view(stored), default=str)


def _counted(outcome: str) -> float:
    labels = {"type": "memory.created", "outcome": outcome}
    return REGISTRY.get_sample_value("atlas_webhook_deliveries_total", labels) or 0.0


def test_failures_are_retried_with_exponential_back_off_then_delivered(
    plain_tenant, endpoint_and_secret, receiver
) -> None:
    before = {outcome: _counted(outcome) for outcome in ("retry", "delivered")}
    receiver.statuses = [500, 503, 200]
    event, sent = _emit(plain_tenant)
    t0 = timezone.now()
    assert delivery_attempt(delivery_id=sent.pk, now=t0) == "pending"
    sent.refresh_from_db()
    assert (sent.attempts, sent.last_status_code, sent.last_error) == (1, 500, "HTTP 500")
    assert sent.next_attempt_at == t0 + timedelta(seconds=30)
    assert delivery_attempt(delivery_id=sent.pk, now=t0 + timedelta(seconds=29)) == "not_due"
    assert deliveries_due(now=t0 + timedelta(seconds=29)) == []
    assert deliveries_due(now=t0 + timedelta(seconds=30)) == [sent.pk]
    t1 = t0 + timedelta(seconds=30)
    assert delivery_attempt(delivery_id=sent.pk, now=t1) == "pending"
    sent.refresh_from_db()
    assert sent.next_attempt_at == t1 + timedelta(seconds=60)  # doubled
    assert delivery_attempt(delivery_id=sent.pk, now=t1 + timedelta(seconds=60)) == "delivered"
    assert [r.headers["Atlas-Delivery-Attempt"] for r in receiver.requests] == ["1", "2", "3"]
    assert {json.loads(r.body)["id"] for r in receiver.requests} == {str(event.id)}  # at-least-once, one id
    sent.refresh_from_db()
    assert (sent.status, sent.attempts) == ("delivered", 3)
    assert {o: _counted(o) - before[o] for o in before} == {"retry": 2.0, "delivered": 1.0}  # the metrics
    assert WebhookEndpoint.objects.get(pk=sent.endpoint_id).failing_since is None


def test_back_off_doubles_up_to_its_maximum(settings) -> None:
    settings.ATLAS_WEBHOOKS_RETRY_BASE_SECONDS = 30
    settings.ATLAS_WEBHOOKS_RETRY_MAX_SECONDS = 3600
    assert [delivery.backoff_seconds(n) for n in range(1, 10)] == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600]


def test_a_delivery_is_given_up_after_the_retry_window_and_the_failing_endpoint_disabled(
    plain_tenant, endpoint_and_secret, receiver
) -> None:
    endpoint, _ = endpoint_and_secret
    receiver.statuses = [500]
    _, sent = _emit(plain_tenant)
    t0 = timezone.now()
    assert delivery_attempt(delivery_id=sent.pk, now=t0) == "pending"
    assert endpoints_disabled_notice(plain_tenant) == []
    late = t0 + timedelta(hours=24, minutes=5)
    assert delivery_attempt(delivery_id=sent.pk, now=late) == "failed"
    sent.refresh_from_db()
    assert (sent.status, sent.attempts, sent.next_attempt_at) == ("failed", 2, None)
    endpoint.refresh_from_db()
    assert endpoint.is_enabled is False
    assert endpoint.disabled_reason.startswith("failing since ")
    (notice,) = endpoints_disabled_notice(plain_tenant)
    assert notice.startswith(f"Webhook endpoint {endpoint.url} was disabled: failing since ")
    # A disabled endpoint is sent nothing new, and what still waited for it is not attempted.
    assert event_emit(tenant=plain_tenant, type="memory.created", subject="alice", data=DATA) is None
    waiting = WebhookDelivery.objects.create(endpoint=endpoint, event=sent.event, subject="alice")
    assert delivery_attempt(delivery_id=waiting.pk) == "disabled"


def test_deliveries_keep_their_order_per_subject_and_subjects_do_not_wait_for_each_other(
    plain_tenant, endpoint_and_secret, receiver
) -> None:
    receiver.statuses = [500, 200]
    _, a1 = _emit(plain_tenant, subject="alice", memory_id="a1")
    _, a2 = _emit(plain_tenant, subject="alice", memory_id="a2")
    _, b1 = _emit(plain_tenant, subject="bob", memory_id="b1")
    _, a3 = _emit(plain_tenant, subject="alice", memory_id="a3")
    t0 = timezone.now()
    assert deliveries_due(now=t0) == [a1.pk, b1.pk]  # alice's later ones wait behind a1
    assert delivery_attempt(delivery_id=a1.pk, now=t0) == "pending"  # the receiver failed it
    assert delivery_attempt(delivery_id=a2.pk, now=t0) == "waiting"
    assert delivery_attempt(delivery_id=b1.pk, now=t0) == "delivered"
    assert deliveries_run(delivery_id=a1.pk, now=t0 + timedelta(seconds=30)) == ["delivered"] * 3
    ids = [json.loads(r.body)["data"]["memory"]["id"] for r in receiver.requests]
    assert ids == ["a1", "b1", "a1", "a2", "a3"]


def test_deliveries_older_than_the_retention_are_cleaned_up(plain_tenant, endpoint_and_secret) -> None:
    _, old = _emit(plain_tenant, memory_id="old")
    _, new = _emit(plain_tenant, memory_id="new")
    WebhookDelivery.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=31))
    old.event.__class__.objects.filter(pk=old.event_id).update(created_at=timezone.now() - timedelta(days=31))
    assert deliveries_cleanup() == 1
    assert list(WebhookDelivery.objects.values_list("pk", flat=True)) == [new.pk]
    assert not old.event.__class__.objects.filter(pk=old.event_id).exists()


def test_an_event_no_endpoint_wants_is_not_recorded(plain_tenant, endpoint_and_secret) -> None:
    assert event_emit(tenant=plain_tenant, type="proposal.created", subject="alice", data={}) is None
    assert not WebhookDelivery.objects.exists()
