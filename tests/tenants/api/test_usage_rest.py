"""``GET /api/v1/usage`` through the live server: the tenant's rows and budgets for a tenant token, what
agents' writes and recalls over REST count, the window ``?since=&until=`` and what is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tenants.models import UsageDay
from tenants.usage import llm_budget_state, tenant_budgets_set, usage_llm_record, usage_today
from tests.memory.api.test_rest import _problem, world  # noqa: F401 — the live-server fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_tenant_token_reads_what_its_agents_wrote_and_recalled(world) -> None:  # noqa: F811
    svc, tenant = world["svc"], world["tenant"]
    assert svc("POST", "subjects/alice/episodes", json={"text": "I moved to Lisbon", "session_id": "s"}).ok
    assert svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Lisbon"}).ok
    assert svc("POST", "subjects/bob/facts", json={"text": "Bob lives in Porto"}).ok
    assert svc("POST", "subjects/alice/recall", json={"query": "where does alice live"}).ok
    assert svc("POST", "subjects/alice/recall", json={"query": "lisbon"}).ok
    # The same write again (its external id) is answered as stored: not a second write.
    assert svc("POST", "subjects/bob/facts", json={"text": "Bob swims", "external_id": "swim"}).ok
    assert svc("POST", "subjects/bob/facts", json={"text": "Bob swims", "external_id": "swim"}).ok
    # Reading and listing memories is not a recall (every way in's count: tests/memory/test_recall_ledger.py).
    assert svc("GET", "subjects/alice/memories").ok
    usage_llm_record(tenant_id=tenant.pk, prompt_tokens=1200, completion_tokens=300, requests=1, cost=0.0081)
    tenant_budgets_set(tenant=tenant, actor="test", llm_token_budget=10_000, daily_write_quota=50)
    answer = svc("GET", "usage")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    today = usage_today()
    assert body["tenant"] == tenant.slug
    assert len(body["days"]) == 30 and body["days"][-1]["day"] == today.isoformat()
    assert body["days"][0]["day"] == (today - timedelta(days=29)).isoformat()
    assert body["days"][-1] == {
        "day": today.isoformat(),
        "writes": 4,
        "recalls": 2,
        "documents": None,
        "bytes_stored": None,
        "llm_prompt_tokens": 1200,
        "llm_completion_tokens": 300,
        "llm_tokens": 1500,
        "llm_requests": 1,
        "llm_cost": 0.0081,
    }
    assert body["budgets"] == {
        "llm_token_budget": 10_000,
        "llm_tokens_this_month": 1500,
        "llm_tokens_remaining": 8500,
        "resumes_on": llm_budget_state(tenant=tenant).resumes_on.isoformat(),
        "daily_write_quota": 50,
        "writes_today": 4,
    }


def test_the_window_is_chosen_by_since_and_until(world) -> None:  # noqa: F811
    svc, tenant = world["svc"], world["tenant"]
    today = usage_today()
    UsageDay.objects.create(tenant=tenant, day=today - timedelta(days=40), writes=3)
    start, end = (today - timedelta(days=41)).isoformat(), (today - timedelta(days=39)).isoformat()
    body = svc("GET", f"usage?since={start}&until={end}").json()
    assert [(d["day"], d["writes"]) for d in body["days"]] == [
        (start, 0),
        ((today - timedelta(days=40)).isoformat(), 3),
        (end, 0),
    ]


@pytest.mark.parametrize(
    ("query", "field", "detail"),
    [
        ("since=yesterday", "since", "since must be a date, YYYY-MM-DD"),
        ("until=2026-13-01", "until", "until must be a date, YYYY-MM-DD"),
        ("since=2026-02-02&until=2026-02-01", "until", "until must not be before since"),
        ("since=2024-01-01&until=2026-01-01", "since", "at most 366 days at once"),
        ("from=2026-02-01", "from", "unknown query parameter from"),
        ("until=0001-01-05", "until", "until is too early: give since too"),
        ("tenant=other", "tenant", "unknown query parameter tenant"),
    ],
)
def test_bad_windows_are_refused_clearly(world, query, field, detail) -> None:  # noqa: F811
    body = _problem(world["svc"]("GET", f"usage?{query}"), 400)
    assert body["detail"] == detail and body["errors"][0]["field"] == field


def test_a_subject_token_and_no_token_are_refused(world) -> None:  # noqa: F811
    refused = _problem(world["own"]("GET", "usage"), 403)
    assert refused["detail"] == "only a tenant service token may do this"
    _problem(world["anon"]("GET", "usage"), 401)
