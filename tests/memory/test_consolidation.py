"""Consolidation on the memory engine, with the fake LLM server: what a run writes, what it refuses, and
that a repeated or resumed run writes nothing twice."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from memory.models import ConsolidationRun, ConsolidationState
from memory.selectors import memory_chain_get, memory_get, memory_list, memory_recall
from memory.services import consolidation as job
from memory.services import writes
from memory.services.consolidation import consolidation_run
from tests.fake_llm import FakeLlm, Reply, empty_plan, fact

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def llm(settings):
    fake = FakeLlm().start()
    settings.ATLAS_LLM_BASE_URL = fake.base_url
    settings.ATLAS_LLM_MODEL = "fake-model"
    settings.ATLAS_LLM_API_KEY = "sk-test-fake-key"
    settings.ATLAS_LLM_RETRIES = 1
    settings.ATLAS_LLM_BACKOFF = 0.01
    settings.ATLAS_LLM_TIMEOUT = 5
    settings.ATLAS_LLM_PRICE_PROMPT = 2.0
    settings.ATLAS_LLM_PRICE_COMPLETION = 8.0
    settings.ATLAS_USAGE_RECORDING = "off"
    yield fake
    fake.stop()


def say(subject, text: str, minutes: int, session: str = "s1") -> str:
    return writes.episode_write(subject=subject, text=text, session_id=session, at=T0 + timedelta(minutes=minutes))["id"]


def stored(subject, memory_type: str = "semantic", include_superseded: bool = True) -> list[dict]:
    return memory_list(subject=subject, memory_types=[memory_type], include_superseded=include_superseded, page_size=200)[
        "memories"
    ]


def texts(memories) -> list[str]:
    return sorted(m["text"] for m in memories)


def watermark(subject):
    state = ConsolidationState.objects.filter(subject=subject).first()
    return state.watermark_at if state else None


def test_no_llm_configured_is_recorded_as_skipped_and_changes_nothing(maya, settings) -> None:
    settings.ATLAS_LLM_BASE_URL = ""
    say(maya, "I moved to Lisbon last month", 0)
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "skipped"
    run = ConsolidationRun.objects.get(subject=maya)
    assert (run.status, run.error, run.changes, run.plan) == ("skipped", "skipped: no LLM configured", {}, None)
    assert stored(maya) == [] and stored(maya, "procedural") == []
    assert not ConsolidationState.objects.filter(subject=maya).exists()


def test_a_scripted_conversation_becomes_facts_recall_finds(maya, llm) -> None:
    porto = writes.fact_write(subject=maya, text="Maya lives in Porto", fact_type="identity", confidence=0.9)
    moved = say(maya, "I moved to Lisbon last month, the flat is near the river", 0)
    seats = say(maya, "On flights I always take a window seat, aisles make me anxious", 1)
    llm.script(
        empty_plan(
            facts=[fact("Maya prefers window seats on flights", [seats])],
            supersessions=[
                {
                    "target_fact_ids": [porto["id"]],
                    "contradiction": "natural",
                    "fact": fact("Maya lives in Lisbon", [moved], fact_type="identity"),
                }
            ],
        )
    )
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done", outcome.error
    # What was sent: structured output with the plan schema, the new turns and the related fact.
    request = llm.requests[0]
    assert request["model"] == "fake-model"
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["schema"] == job.PLAN_SCHEMA
    assert llm.headers[0]["Authorization"] == "Bearer sk-test-fake-key"
    prompt = llm.prompts()[0]
    assert [t["id"] for t in prompt["new_turns_by_session"][0]["turns"]] == [moved, seats]
    assert prompt["new_turns_by_session"][0]["turns"][1]["previous_turn"]["id"] == moved
    assert porto["id"] in [f["id"] for f in prompt["existing_facts"]]
    # The run record.
    run = outcome.run
    run.refresh_from_db()
    assert run.status == "done" and run.episodes == 2 and run.llm_model == "fake-model"
    assert (run.prompt_tokens, run.completion_tokens, run.llm_requests) == (100, 50, 1)
    assert run.cost == pytest.approx((100 * 2.0 + 50 * 8.0) / 1e6)
    assert run.change_counts() == {"facts": 1, "supersessions": 1, "superseded": 1}
    assert run.changes["superseded"] == [porto["id"]]
    assert watermark(maya) == datetime(2026, 3, 2, 9, 1, tzinfo=UTC)
    # Recall finds the new facts; the superseded one is hidden, its chain visible.
    lives = memory_recall(subject=maya, query="which city does Maya live in?", k=3, memory_types=["semantic"])
    assert [h["text"] for h in lives.hits] == ["Maya lives in Lisbon", "Maya prefers window seats on flights"]
    seat = memory_recall(subject=maya, query="aisle or window seat?", k=1, memory_types=["semantic"])
    assert seat.hits[0]["text"] == "Maya prefers window seats on flights"
    assert seat.hits[0]["source_episodes"] == [seats]
    chain = memory_chain_get(subject=maya, memory_id=porto["id"])
    assert [m["text"] for m in chain] == ["Maya lives in Porto", "Maya lives in Lisbon"]
    assert memory_get(subject=maya, memory_id=porto["id"])["superseded_by"] == [run.changes["supersessions"][0]]
    # Nothing new: the next run asks nothing and is recorded as skipped.
    again = consolidation_run(subject=maya)
    assert (again.status, again.error, len(llm.requests)) == ("skipped", "skipped: no new episodes", 1)
