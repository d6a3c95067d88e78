"""The tenant's budgets and usage in a real browser: the owner sets the monthly LLM token budget and the
daily write quota in Settings, reads the Usage page's charts, table and budget state, and the Job runs page says
when a spent budget resumes. Axe-clean and screenshotted."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.models import ConsolidationRun
from tenants.models import AuditRecord, MemorySubject, Tenant, UsageDay
from tenants.usage import next_month_start, usage_llm_record, usage_today
from tests.browser import person_login
from tests.tenants.test_tenant_dashboard_browser import PASSWORD, _look, tenants  # noqa: F401 — the fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_owner_sets_budgets_and_reads_usage(page, axe_clean, screenshot, tenants) -> None:  # noqa: F811
    mine = tenants["mine"]
    today = usage_today()
    usage_llm_record(tenant_id=mine.pk, prompt_tokens=4000, completion_tokens=1000, requests=2, cost=0.0123)
    UsageDay.objects.create(tenant=mine, day=today - timedelta(days=3), recalls=9, documents=42, bytes_stored=65536)
    person_login(page, "owner@acme.test", PASSWORD)
    page.goto(f"/tenant/{mine.slug}/settings/")
    page.get_by_label("Monthly LLM token budget").fill("5000")
    page.get_by_label("Daily write quota").fill("2")
    page.get_by_role("button", name="Save").click()
    page.wait_for_load_state()
    mine = Tenant.objects.get(pk=mine.pk)
    assert (mine.llm_token_budget, mine.daily_write_quota) == (5000, 2)
    assert AuditRecord.objects.get(tenant=mine, action="tenant.budgets").detail == {
        "llm_token_budget": 5000,
        "daily_write_quota": 2,
    }
    page.get_by_role("navigation", name="Tenant sections").get_by_role("link", name="Usage").click()
    resumes = next_month_start(today).isoformat()
    # The fixture wrote a fact and its correction for this tenant: the ledger counted them today.
    writes_today = UsageDay.objects.get(tenant=mine, day=today).writes
    assert page.locator("#llm-budget").inner_text() == f"5000 of 5000 — budget reached, resumes on {resumes}"
    assert page.locator("#write-quota").inner_text().startswith(f"{writes_today} of 2")
    rows = page.get_by_role("table", name="Usage per UTC day, newest first").locator("tbody tr")
    assert rows.count() == 30
    assert rows.nth(0).inner_text().split("\t") == [
        today.isoformat(), str(writes_today), "0", "—", "—", "4000", "1000", "0.0123",
    ]  # fmt: skip
    assert rows.nth(3).inner_text().split("\t") == [
        (today - timedelta(days=3)).isoformat(), "0", "9", "42", "65536", "0", "0", "0.0000",
    ]  # fmt: skip
    # The charts (server-side SVG, memory/dashboard/pictures/charts.py), each with its numbers as a table.
    for title in (
        "Writes and recalls per day, the last 30 days (UTC)",
        "LLM tokens this month, running total against the budget",
    ):
        assert page.get_by_text(f"The numbers of “{title}”").is_visible()
    _look(page, axe_clean, screenshot, "tenant-usage")
    subject = MemorySubject.objects.filter(tenant=mine).first()
    ConsolidationRun.objects.create(
        tenant=mine, subject=subject, status="skipped", error=f"budget reached, resumes on {resumes}: 5000 of 5000"
    )
    page.get_by_role("navigation", name="Tenant sections").get_by_role("link", name="Job runs").click()
    assert page.locator("#llm-budget").inner_text() == (
        f"LLM tokens this month: 5000 of 5000 — budget reached, resumes on {resumes}: runs are recorded as "
        "skipped until then (usage)."
    )
    assert page.get_by_role("cell", name=f"budget reached, resumes on {resumes}: 5000 of 5000").is_visible()
    _look(page, axe_clean, screenshot, "tenant-jobs-budget")
