"""What consolidation may spend (memory/consolidation/budget.py), with the fake LLM counting its calls: the
tenant's monthly token budget and the per-subject daily cap stop a run before its LLM call (no call, no
write, the watermark stays, the run record says why and when it resumes), a plan already obtained is
applied whole, a subject with nothing new costs no call, and every call's tokens and cost reach the
tenant's usage ledger priced by ATLAS_LLM_PRICES."""

from __future__ import annotations

from decimal import Decimal

import pytest

from memory.consolidation.budget import call_tokens_estimate
from memory.consolidation.gather import consolidation_input_gather
from memory.consolidation.run import _state_watermark, consolidation_run
from memory.consolidation.schema import SYSTEM_PROMPT
from memory.models import ConsolidationRun
from tenants.models import UsageDay
from tenants.usage import llm_budget_state, next_month_start, tenant_budgets_set, usage_today
from tests.fake_llm import Reply, empty_plan, fact
from tests.memory.consolidation.scripted import say, stored, texts, watermark

PRICES = {"fake-model": {"input": 3.0, "output": 15.0}}


@pytest.fixture
def priced(settings, llm):
    settings.ATLAS_LLM_PRICES = PRICES
    settings.ATLAS_LLM_MAX_TOKENS = 100
    return llm


def _ledger(tenant) -> UsageDay | None:
    return UsageDay.objects.filter(tenant=tenant, day=usage_today()).first()


def test_a_subject_with_nothing_new_costs_no_llm_call(maya, priced) -> None:
    outcome = consolidation_run(subject=maya)
    assert (outcome.status, outcome.error) == ("skipped", "skipped: no new episodes")
    assert priced.requests == []
    assert _ledger(maya.tenant) is None


def test_the_budget_stops_a_run_before_its_call_and_it_resumes_when_there_is_room(maya, priced) -> None:
    seats = say(maya, "On flights I always take a window seat", 0)
    tenant_budgets_set(tenant=maya.tenant, actor="test", llm_token_budget=50)
    outcome = consolidation_run(subject=maya)
    resumes = next_month_start(usage_today()).isoformat()
    assert outcome.status == "skipped"
    run = ConsolidationRun.objects.get(subject=maya)
    assert run.status == "skipped" and run.episodes == 1
    assert run.error.startswith(f"budget reached, resumes on {resumes}: 0 of the tenant's 50 LLM tokens this month")
    assert priced.requests == []  # stopped before the call: not a token spent
    assert stored(maya) == [] and watermark(maya) is None
    # With room for the call, the same window is consolidated; its tokens and cost reach the ledger.
    priced.script(empty_plan(facts=[fact("Maya prefers window seats on flights", [seats])]))
    tenant_budgets_set(tenant=maya.tenant, actor="test", llm_token_budget=100_000)
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done", outcome.error
    assert len(priced.requests) == 1
    assert texts(stored(maya)) == ["Maya prefers window seats on flights"]
    cost = (100 * 3.0 + 50 * 15.0) / 1e6
    assert outcome.run.cost == pytest.approx(cost)
    row = _ledger(maya.tenant)
    assert (row.llm_prompt_tokens, row.llm_completion_tokens, row.llm_requests) == (100, 50, 1)
    assert row.llm_cost == Decimal("0.001050")
    assert row.writes == 1  # the turn said; the fact consolidation wrote is paid in tokens, not a write
    assert llm_budget_state(tenant=maya.tenant).used == 150


def test_the_estimate_is_the_prompt_by_length_plus_the_longest_answer(settings) -> None:
    settings.ATLAS_LLM_MAX_TOKENS = 100
    assert call_tokens_estimate(system="x" * 8, user="y" * 5) == 4 + 100


def test_a_plan_obtained_is_applied_whole_even_when_its_call_passed_the_budget(maya, priced) -> None:
    """The call's real tokens (the LLM reports 90,000) pass the budget the estimate fit in: the plan is
    still applied whole — its tokens are spent — and the next run stops before its call."""
    first = say(maya, "I'm vegetarian", 0)
    second = say(maya, "I live in Lisbon", 1)
    tenant_budgets_set(tenant=maya.tenant, actor="test", llm_token_budget=20_000)
    plan = empty_plan(facts=[fact("Maya is vegetarian", [first]), fact("Maya lives in Lisbon", [second])])
    priced.script(Reply(answer=plan, prompt_tokens=90_000, completion_tokens=50))
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done", outcome.error
    assert texts(stored(maya)) == ["Maya is vegetarian", "Maya lives in Lisbon"]
    assert llm_budget_state(tenant=maya.tenant).used == 90_050
    say(maya, "I started running", 2)
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "skipped" and outcome.error.startswith("budget reached, resumes on ")
    assert len(priced.requests) == 1
    assert texts(stored(maya)) == ["Maya is vegetarian", "Maya lives in Lisbon"]


def _next_call_estimate(subject) -> int:
    """The estimate the run makes for ``subject``'s next call (its prompt as the run will gather it)."""
    data = consolidation_input_gather(subject=subject, after=_state_watermark(subject))
    return call_tokens_estimate(system=SYSTEM_PROMPT, user=data.prompt())


def test_the_subject_cap_stops_one_subject_and_not_another(maya, tom, priced, settings) -> None:
    say(maya, "I like tea", 0)
    priced.script(empty_plan())
    assert consolidation_run(subject=maya).status == "done"  # 150 tokens spent today
    say(maya, "I like coffee too", 1)
    say(tom, "I like cocoa", 0)
    settings.ATLAS_CONSOLIDATION_SUBJECT_TOKEN_CAP = 150 + _next_call_estimate(maya) - 1
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "skipped"
    assert outcome.error.startswith("subject token cap reached, resumes tomorrow (UTC): 150 of ")
    assert len(priced.requests) == 1
    settings.ATLAS_CONSOLIDATION_SUBJECT_TOKEN_CAP = _next_call_estimate(tom)  # exactly fits: tom spent none
    assert consolidation_run(subject=tom).status == "done"
    assert len(priced.requests) == 2


def test_a_dry_runs_tokens_reach_the_ledger(maya, priced) -> None:
    """``atlas_consolidate --dry-run`` keeps no run record, but its call is paid for all the same."""
    seats = say(maya, "On flights I always take a window seat", 0)
    priced.script(empty_plan(facts=[fact("Maya prefers window seats on flights", [seats])]))
    outcome = consolidation_run(subject=maya, dry_run=True)
    assert outcome.status == "dry_run" and not ConsolidationRun.objects.filter(subject=maya).exists()
    row = _ledger(maya.tenant)
    assert (row.llm_prompt_tokens, row.llm_completion_tokens, row.llm_requests) == (100, 50, 1)
    assert row.llm_cost == Decimal("0.001050")
    assert stored(maya) == []
