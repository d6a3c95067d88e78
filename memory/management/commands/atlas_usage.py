"""atlas_usage --tenant SLUG [--days N] [--sample] [--json] — a tenant's usage per UTC day and its budgets."""

from __future__ import annotations

import argparse
import json

from memory.services.usage_storage import usage_storage_sample
from tenants.management.base import AtlasCommand
from tenants.selectors import USAGE_MAX_DAYS, tenant_get, usage_days
from tenants.usage import USAGE_COLUMNS, llm_budget_state


def _days(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= USAGE_MAX_DAYS:
        raise argparse.ArgumentTypeError(f"--days must be 1 to {USAGE_MAX_DAYS}")
    return int(value)


class Command(AtlasCommand):
    help = "Show a tenant's usage ledger (writes, recalls, storage, LLM tokens and cost per UTC day) and budgets."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--days", type=_days, default=30, help="the last N UTC days, today included (30)")
        parser.add_argument(
            "--sample", action="store_true", help="sample today's documents and bytes from the engine first"
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, tenant: str, days: int, sample: bool, **options) -> None:
        who = tenant_get(slug=tenant)
        if sample:
            usage_storage_sample(tenant=who)
        rows = usage_days(tenant=who, days=days)
        budget = llm_budget_state(tenant=who)
        budgets = {
            "llm_token_budget": budget.budget,
            "llm_tokens_this_month": budget.used,
            "llm_tokens_remaining": budget.remaining,
            "resumes_on": budget.resumes_on.isoformat(),
            "daily_write_quota": who.daily_write_quota,
        }
        if options["json"]:
            self.stdout.write(json.dumps({"tenant": who.slug, "days": rows, "budgets": budgets}, indent=2))
            return
        self.emit(list(reversed(rows)), as_json=False, columns=USAGE_COLUMNS)
        limit = "no limit" if budget.budget is None else f"{budget.budget}"
        self.stdout.write(f"LLM tokens this month: {budget.used} of {limit}" + _reached(budget))
        quota = who.daily_write_quota
        self.stdout.write(f"daily write quota: {'no limit' if quota is None else quota}")


def _reached(budget) -> str:
    return f" — {budget.message}" if budget.budget is not None and not budget.remaining else ""
