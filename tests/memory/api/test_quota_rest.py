"""A tenant's daily write quota through the live REST API: writes past it answer 429 with a problem and
``Retry-After`` (the seconds to the next UTC midnight) and store nothing — not even a supersession's
claim on the fact it would replace; reads go on; the Python SDK raises QuotaExceeded."""

from __future__ import annotations

import pytest
from atlas_memory import Atlas, QuotaExceeded, RateLimited

from memory import selectors
from tenants.models import UsageDay
from tenants.usage import seconds_to_next_midnight, tenant_budgets_set, usage_today
from tests.memory.api.test_rest import _problem, world  # noqa: F401 — the live-server fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_writes_past_the_quota_answer_429_and_store_nothing(world) -> None:  # noqa: F811
    svc, tenant = world["svc"], world["tenant"]
    tenant_budgets_set(tenant=tenant, actor="test", daily_write_quota=2)
    turn = {"text": "I moved to Lisbon", "session_id": "s", "external_id": "t1"}
    first = svc("POST", "subjects/alice/episodes", json=turn)
    assert first.status_code == 201
    lisbon = svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Lisbon"})
    assert lisbon.status_code == 201
    refused = svc(
        "POST", "subjects/alice/facts", json={"text": "Alice lives in Porto", "supersedes": [lisbon.json()["id"]]}
    )
    body = _problem(refused, 429)
    expected = seconds_to_next_midnight()
    assert expected - 5 <= int(refused.headers["Retry-After"]) <= expected
    assert body["type"] == "urn:atlas-memory:problem:quota_exceeded"
    assert body["detail"] == (
        f"tenant {tenant.slug} has used its daily write quota (2 writes per UTC day); "
        "writes are accepted again after midnight UTC"
    )
    assert body["retry_after"] == int(refused.headers["Retry-After"])
    # Nothing stored, and the fact it would have replaced is not claimed (still current, no successor).
    old = selectors.memory_get(subject=world["alice"], memory_id=lisbon.json()["id"])
    assert (old["status"], old.get("superseded_by") or []) == ("current", [])
    listed = svc("GET", "subjects/alice/memories?types=semantic").json()["memories"]
    assert [m["text"] for m in listed] == ["Alice lives in Lisbon"]
    # The same write again (an episode's external id: a retry after a lost answer) is answered as stored.
    again = svc("POST", "subjects/alice/episodes", json=turn)
    assert (again.status_code, again.json()["id"]) == (201, first.json()["id"])
    for path, payload in [
        ("subjects/bob/episodes", {"text": "hello", "session_id": "s"}),
        ("subjects/bob/playbooks", {"name": "tea", "trigger_text": "tea time", "steps": ["boil water"]}),
    ]:
        _problem(svc("POST", path, json=payload), 429)
    assert UsageDay.objects.get(tenant=tenant, day=usage_today()).writes == 2
    # Reads go on, and a raised quota lets writes in again at once.
    assert svc("POST", "subjects/alice/recall", json={"query": "where does alice live"}).status_code == 200
    tenant_budgets_set(tenant=tenant, actor="test", daily_write_quota=3)
    assert svc("POST", "subjects/bob/episodes", json={"text": "hello", "session_id": "s"}).status_code == 201


def test_the_python_sdk_raises_quota_exceeded_without_retrying_until_midnight(world) -> None:  # noqa: F811
    tenant = world["tenant"]
    tenant_budgets_set(tenant=tenant, actor="test", daily_write_quota=0)
    client = Atlas(world["svc"].base.removesuffix("/api/v1/"), token=world["svc"].session.headers["Authorization"][7:])
    with pytest.raises(QuotaExceeded) as raised:
        client.episode_write(subject="alice", text="hello", session_id="s")
    error = raised.value
    assert isinstance(error, RateLimited) and error.status == 429 and error.code == "quota_exceeded"
    assert error.retry_after is not None and error.retry_after > 0
    assert UsageDay.objects.get(tenant=tenant, day=usage_today()).writes == 0
