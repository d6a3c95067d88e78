"""A model per stage (memory/consolidation/ask.py, issue 37 point 4): with ATLAS_LLM_MODEL_EXTRACTION and
ATLAS_LLM_MODEL_JUDGEMENT naming different models, a run asks the extraction model about the new turns
alone, then the judgement model about what it found and the related memories — without the turns — and
applies the judgement's plan as any other; each call is paid at its own model's price, and a budget stops
the run before the first call when both would not fit. The same model for both is one call, as before."""

from __future__ import annotations

from decimal import Decimal

import pytest

from memory.consolidation.ask import ask_tokens_estimate
from memory.consolidation.budget import call_tokens_estimate
from memory.consolidation.gather import consolidation_input_gather
from memory.consolidation.run import consolidation_run
from memory.consolidation.schema import SYSTEM_PROMPT
from memory.models import ConsolidationRun
from memory.services import writes
from tenants.models import UsageDay
from tenants.usage import tenant_budgets_set, usage_today
from tests.fake_llm import Reply, empty_plan, fact
from tests.memory.consolidation.scripted import say, stored, texts, watermark

PRICES = {"small-model": {"input": 0.1, "output": 0.4}, "big-model": {"input": 3.0, "output": 15.0}}


@pytest.fixture
def staged(settings, llm):
    settings.ATLAS_LLM_MODEL_EXTRACTION = "small-model"
    settings.ATLAS_LLM_MODEL_JUDGEMENT = "big-model"
    settings.ATLAS_LLM_PRICES = PRICES
    return llm


def _found(*statements: dict) -> dict:
    return {"statements": list(statements), "procedures": []}


def test_each_stage_asks_its_model_and_the_judgement_never_reads_the_turns(maya, staged) -> None:
    old = writes.fact_write(subject=maya, text="Maya lives in Porto", fact_type="identity")
    moved = say(maya, "We moved to Lisbon last week, the flat is tiny", 0)
    said = "Maya lives in Lisbon"
    staged.script(
        Reply(answer=_found(fact(said, [moved], fact_type="identity")), prompt_tokens=1000, completion_tokens=100),
        Reply(
            answer=empty_plan(
                supersessions=[
                    {"target_fact_ids": [old["id"]], "contradiction": "natural", "fact": fact(said, [moved])}
                ]
            ),
            prompt_tokens=200,
            completion_tokens=50,
        ),
    )
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done", outcome.error
    extraction, judgement = staged.requests
    assert (extraction["model"], judgement["model"]) == ("small-model", "big-model")
    asked, decided = staged.prompts()
    assert set(asked) == {"new_turns_by_session"}  # the turns alone
    assert [t["id"] for s in asked["new_turns_by_session"] for t in s["turns"]] == [moved]
    assert set(decided) == {"candidate_statements", "candidate_procedures", "existing_facts", "existing_playbooks"}
    assert decided["candidate_statements"][0]["text"] == said
    assert "tiny" not in judgement["messages"][-1]["content"]  # the turn's text reached the first stage only
    assert [f["id"] for f in decided["existing_facts"]] == [old["id"]]
    assert texts(stored(maya, include_superseded=False)) == [said]
    run = ConsolidationRun.objects.get(subject=maya)
    assert run.llm_model == "small-model → big-model"
    assert (run.prompt_tokens, run.completion_tokens, run.llm_requests) == (1200, 150, 2)
    # Each call at its own model's price (USD per million tokens): 1000·0.1 + 100·0.4, then 200·3 + 50·15.
    expected = (1000 * 0.1 + 100 * 0.4 + 200 * 3.0 + 50 * 15.0) / 1_000_000
    assert run.cost == pytest.approx(expected)
    ledger = UsageDay.objects.get(tenant=maya.tenant, day=usage_today())
    assert (ledger.llm_prompt_tokens, ledger.llm_completion_tokens) == (1200, 150)
    assert Decimal(str(ledger.llm_cost)) == pytest.approx(Decimal(str(expected)))


def test_a_failed_judgement_writes_nothing_and_both_calls_are_paid(maya, staged, settings) -> None:
    settings.ATLAS_LLM_RETRIES = 0
    turn = say(maya, "I always take the window seat", 0)
    staged.script(_found(fact("Maya prefers window seats", [turn])), Reply(status=500))
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "failed"
    assert [r["model"] for r in staged.requests] == ["small-model", "big-model"]
    assert stored(maya) == [] and watermark(maya) is None  # the window waits for the next run
    run = ConsolidationRun.objects.get(subject=maya)
    assert run.status == "failed" and run.error.startswith("LlmUnavailable")
    assert (run.prompt_tokens, run.llm_requests) == (100, 2)  # the first call's tokens; the failed one's request


def test_the_budget_counts_both_stages_before_the_first_call(maya, staged, settings) -> None:
    settings.ATLAS_LLM_MAX_TOKENS = 100
    turn = say(maya, "I always take the window seat", 0)
    data = consolidation_input_gather(subject=maya, after=None)
    one_call = call_tokens_estimate(system=SYSTEM_PROMPT, user=data.prompt())
    assert ask_tokens_estimate(data, prompt=data.prompt()) > one_call + 100
    # Room for one call, not for both stages: stopped before the first.
    tenant_budgets_set(tenant=maya.tenant, actor="test", llm_token_budget=one_call + 100)
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "skipped"
    assert ConsolidationRun.objects.get(subject=maya).error.startswith("budget reached")
    assert staged.requests == []
    # One model for both: one call, which the same budget allows.
    settings.ATLAS_LLM_MODEL_EXTRACTION = settings.ATLAS_LLM_MODEL_JUDGEMENT = "small-model"
    staged.script(empty_plan(facts=[fact("Maya prefers window seats", [turn])]))
    assert consolidation_run(subject=maya).status == "done"
    assert [r["model"] for r in staged.requests] == ["small-model"]


def test_the_same_model_for_both_stages_is_one_call(maya, llm, settings) -> None:
    settings.ATLAS_LLM_MODEL_EXTRACTION = "fake-model"
    settings.ATLAS_LLM_MODEL_JUDGEMENT = ""  # unset: ATLAS_LLM_MODEL, the same
    turn = say(maya, "I always take the window seat", 0)
    llm.script(empty_plan(facts=[fact("Maya prefers window seats", [turn])]))
    assert consolidation_run(subject=maya).status == "done"
    (request,) = llm.requests
    assert request["model"] == "fake-model" and "existing_facts" in llm.prompts()[0]
    assert ConsolidationRun.objects.get(subject=maya).llm_model == "fake-model"
