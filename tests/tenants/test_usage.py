"""The usage ledger's services and reads (tenants/usage.py, tenants/selectors.py): counters that lose no
increment when processes race, a daily write quota that admits exactly its number, the monthly token
budget, and the rows a read returns. Racing needs real connections: it runs on SQLite here and on
PostgreSQL in CI's second run (.ci/run DB_SPECIFIC)."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection

from atlas_site.errors import QuotaExceeded, ValidationFailed
from tenants.models import AuditRecord, Tenant, UsageDay
from tenants.selectors import usage_days, usage_range
from tenants.usage import (
    llm_budget_state,
    next_month_start,
    seconds_to_next_midnight,
    tenant_budgets_set,
    usage_llm_record,
    usage_recall_record,
    usage_today,
    usage_write_release,
    usage_write_reserve,
)


def _tenant() -> Tenant:
    return Tenant.objects.create(slug=f"usage-{uuid.uuid4().hex[:8]}", name="Usage")


def _racers(n: int, work) -> list[BaseException]:
    """``work()`` on ``n`` threads released together, each on its own database connection."""
    errors: list[BaseException] = []
    gate = threading.Barrier(n)

    def run() -> None:
        try:
            gate.wait()
            work()
        except BaseException as exc:  # noqa: BLE001 — collected and asserted by the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _today_row(tenant: Tenant) -> UsageDay:
    return UsageDay.objects.get(tenant=tenant, day=usage_today())


def test_racing_counters_lose_no_increment(transactional_db) -> None:
    """Eight processes' worth of connections each count 5 recalls and 5 writes, the day's row not yet
    there: one row, 40 of each (an UPDATE … n = n + 1 per count; the row's insert is raced too)."""
    tenant = _tenant()

    def work() -> None:
        for _ in range(5):
            usage_recall_record(tenant_id=tenant.pk)
            usage_write_reserve(tenant=tenant)

    assert _racers(8, work) == []
    assert UsageDay.objects.filter(tenant=tenant).count() == 1
    row = _today_row(tenant)
    assert (row.recalls, row.writes) == (40, 40)


def test_the_daily_quota_admits_exactly_its_number_however_many_race(transactional_db) -> None:
    """Twelve writers race for a quota of 5: exactly 5 are admitted, 7 get QuotaExceeded (429) whose
    retry_after is the seconds to the next UTC midnight."""
    tenant = _tenant()
    tenant_budgets_set(tenant=tenant, actor="test", daily_write_quota=5)
    errors = _racers(12, lambda: usage_write_reserve(tenant=tenant))
    assert len(errors) == 7 and all(isinstance(e, QuotaExceeded) for e in errors)
    assert _today_row(tenant).writes == 5
    error = errors[0]
    assert (error.status, error.code) == (429, "quota_exceeded")
    assert error.message == (
        f"tenant {tenant.slug} has used its daily write quota (5 writes per UTC day); "
        "writes are accepted again after midnight UTC"
    )
    assert 1 <= error.extensions["retry_after"] <= 86400
    # A reservation given back (nothing was stored) lets one more in, and only one.
    usage_write_release(tenant=tenant)
    usage_write_reserve(tenant=tenant)
    with pytest.raises(QuotaExceeded):
        usage_write_reserve(tenant=tenant)
    assert _today_row(tenant).writes == 5


def test_a_release_never_counts_below_zero(db) -> None:
    tenant = _tenant()
    usage_write_release(tenant=tenant)  # no row yet
    usage_write_reserve(tenant=tenant)
    usage_write_release(tenant=tenant)
    usage_write_release(tenant=tenant)
    assert _today_row(tenant).writes == 0


def test_seconds_to_the_next_utc_midnight() -> None:
    assert seconds_to_next_midnight(now=datetime(2026, 12, 4, 23, 59, 30, tzinfo=UTC)) == 30
    assert seconds_to_next_midnight(now=datetime(2026, 12, 4, 0, 0, 0, tzinfo=UTC)) == 86400
    assert seconds_to_next_midnight(now=datetime(2026, 12, 31, 23, 59, 59, 500000, tzinfo=UTC)) == 1
    assert next_month_start(date(2026, 12, 4)) == date(2027, 1, 1)
    assert next_month_start(date(2027, 1, 31)) == date(2027, 2, 1)


def test_llm_tokens_and_cost_add_up_and_the_budget_counts_this_month_only(db) -> None:
    tenant = _tenant()
    today = usage_today()
    usage_llm_record(tenant_id=tenant.pk, prompt_tokens=1000, completion_tokens=200, requests=1, cost=0.0031)
    usage_llm_record(tenant_id=tenant.pk, prompt_tokens=500, completion_tokens=100, requests=2, cost=0.0015)
    usage_llm_record(tenant_id=tenant.pk, prompt_tokens=0, completion_tokens=0, requests=0, cost=0.0)  # nothing
    # Last month's tokens do not count against this month's budget.
    UsageDay.objects.create(tenant=tenant, day=today.replace(day=1) - timedelta(days=1), llm_prompt_tokens=10**6)
    row = _today_row(tenant)
    assert (row.llm_prompt_tokens, row.llm_completion_tokens, row.llm_requests) == (1500, 300, 3)
    assert row.llm_cost == Decimal("0.004600")
    state = llm_budget_state(tenant=tenant)
    assert (state.budget, state.used, state.remaining) == (None, 1800, None)
    assert state.allows(10**9)
    tenant_budgets_set(tenant=tenant, actor="test", llm_token_budget=2000)
    state = llm_budget_state(tenant=tenant)
    assert (state.budget, state.used, state.remaining) == (2000, 1800, 200)
    assert state.allows(200) and not state.allows(201)
    assert state.message == f"budget reached, resumes on {next_month_start(today).isoformat()}"


def test_budgets_are_set_audited_and_refused_when_wrong(db) -> None:
    tenant = _tenant()
    tenant_budgets_set(tenant=tenant, actor="cli:test", llm_token_budget=5000, daily_write_quota=100)
    tenant.refresh_from_db()
    assert (tenant.llm_token_budget, tenant.daily_write_quota) == (5000, 100)
    audit = AuditRecord.objects.get(tenant=tenant, action="tenant.budgets")
    assert audit.detail == {"llm_token_budget": 5000, "daily_write_quota": 100}
    tenant_budgets_set(tenant=tenant, actor="cli:test", llm_token_budget=5000)  # unchanged: no record
    assert AuditRecord.objects.filter(tenant=tenant, action="tenant.budgets").count() == 1
    with pytest.raises(ValidationFailed, match="daily_write_quota must be a whole number >= 0"):
        tenant_budgets_set(tenant=tenant, actor="cli:test", daily_write_quota=-1)
    tenant_budgets_set(tenant=tenant, actor="cli:test", daily_write_quota=None)
    tenant.refresh_from_db()
    assert (tenant.llm_token_budget, tenant.daily_write_quota) == (5000, None)


def test_usage_rows_cover_every_day_asked_oldest_first(db) -> None:
    tenant = _tenant()
    other = _tenant()
    today = usage_today()
    UsageDay.objects.create(tenant=tenant, day=today - timedelta(days=2), writes=7, documents=12, bytes_stored=3400)
    UsageDay.objects.create(tenant=other, day=today, writes=99)
    usage_recall_record(tenant_id=tenant.pk)
    rows = usage_days(tenant=tenant, days=3)
    assert [r["day"] for r in rows] == [(today - timedelta(days=d)).isoformat() for d in (2, 1, 0)]
    assert [(r["writes"], r["recalls"], r["documents"], r["bytes_stored"]) for r in rows] == [
        (7, 0, 12, 3400),
        (0, 0, None, None),
        (0, 1, None, None),
    ]
    assert rows[0] == {
        "day": (today - timedelta(days=2)).isoformat(),
        "writes": 7,
        "recalls": 0,
        "documents": 12,
        "bytes_stored": 3400,
        "llm_prompt_tokens": 0,
        "llm_completion_tokens": 0,
        "llm_tokens": 0,
        "llm_requests": 0,
        "llm_cost": 0.0,
    }
    assert len(usage_days(tenant=tenant)) == 30
    with pytest.raises(ValidationFailed, match="until must not be before since"):
        usage_range(tenant=tenant, start=today, end=today - timedelta(days=1))
    with pytest.raises(ValidationFailed, match="at most 366 days"):
        usage_range(tenant=tenant, start=today - timedelta(days=366), end=today)
    with pytest.raises(ValidationFailed, match="days must be 1 to 366"):
        usage_days(tenant=tenant, days=0)


def test_deleting_a_tenant_row_takes_its_ledger(db) -> None:
    tenant = _tenant()
    usage_recall_record(tenant_id=tenant.pk)
    tenant.delete()
    assert not UsageDay.objects.filter(tenant_id=tenant.pk).exists()
