"""Consolidation runs on the memory engine, with the fake LLM server: what a run writes and records, that
a bad answer writes nothing, and that a repeated or resumed run writes nothing twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.consolidation.run import NO_LLM, consolidation_run
from memory.consolidation.schema import PLAN_SCHEMA
from memory.models import ConsolidationRun, ConsolidationState
from memory.recall import memory_recall
from memory.selectors import memory_chain_get, memory_get
from memory.services import writes
from tests.fake_llm import Reply, empty_plan, fact
from tests.memory.consolidation.scripted import T0, run_episode, say, stored, texts, watermark


def test_no_llm_configured_is_recorded_as_skipped_and_changes_nothing(maya, settings) -> None:
    settings.ATLAS_LLM_BASE_URL = ""
    say(maya, "I moved to Lisbon last month", 0)
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "skipped"
    run = ConsolidationRun.objects.get(subject=maya)
    assert (run.status, run.error, run.changes, run.plan) == ("skipped", NO_LLM, {}, None)
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
    assert request["response_format"]["json_schema"]["schema"] == PLAN_SCHEMA
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


def test_the_same_window_twice_writes_the_same_documents(maya, llm) -> None:
    """A redelivered run (the watermark not yet advanced) writes the same ids, confirms nothing twice and
    counts no outcome twice."""
    kept = writes.fact_write(subject=maya, text="Maya drinks her coffee black", confidence=0.8)
    book = writes.playbook_write(
        subject=maya, name="Book a table", trigger_text="restaurant booking", steps=["Call the restaurant"]
    )
    first = say(maya, "Black coffee again this morning, as always. remember: Maya runs on Sundays", 0)
    second = say(maya, "Sunday run done, 10k. Booking by phone worked again.", 1)
    llm.script(
        empty_plan(
            facts=[fact("Maya runs on Sundays", [first, second], fact_type="identity")],
            confirmations=[{"fact_id": kept["id"], "source_episodes": [first]}],
            playbooks=[
                {
                    "name": "Plan a Sunday run",
                    "trigger_text": "weekend running",
                    "description": "",
                    "steps": [
                        {"instruction": "Check the weather", "tool": None},
                        {"instruction": "Run 10k", "tool": None},
                    ],
                    "confidence": 0.8,
                    "source_episodes": [second],
                }
            ],
            outcomes=[{"playbook_id": book["id"], "success": True, "source_episodes": [second]}],
        )
    )
    one = consolidation_run(subject=maya)
    assert one.status == "done", one.error
    snapshot = {m["id"]: m for m in stored(maya) + stored(maya, "procedural")}
    assert snapshot[kept["id"]]["confidence"] == pytest.approx(0.85)
    assert snapshot[book["id"]]["success_count"] == 1
    # The crash this simulates: every write done, the watermark not advanced.
    ConsolidationState.objects.filter(subject=maya).update(watermark_at=None, watermark_id="")
    ConsolidationRun.objects.filter(pk=one.run.pk).update(status="failed")
    two = consolidation_run(subject=maya)
    assert two.status == "done" and two.run.pk == one.run.pk and two.run.attempts == 2
    assert len(llm.requests) == 1  # the stored plan was applied again: no second answer asked for
    again = {m["id"]: m for m in stored(maya) + stored(maya, "procedural")}
    assert again.keys() == snapshot.keys()
    for memory_id, memory in again.items():
        assert memory == snapshot[memory_id]
    assert two.changes == one.changes
    # A fresh run over the same window (the plan re-asked, --since) still writes the same documents.
    three = consolidation_run(subject=maya, since=T0 - timedelta(minutes=1))
    assert three.status == "done" and len(llm.requests) == 2
    assert {m["id"]: m for m in stored(maya) + stored(maya, "procedural")} == snapshot


@pytest.mark.parametrize(
    "reply, error",
    [
        (Reply(content='{"facts": [ {"text": "Maya likes'), "LlmBadAnswer: the LLM's answer is not JSON"),
        (Reply(content='{"facts": []', finish_reason="length"), "LlmBadAnswer: the LLM's answer was cut off"),
        (Reply(answer={"facts": "all of them"}), "LlmBadAnswer: the LLM's answer does not fit the schema"),
        (Reply(status=500), "LlmUnavailable: the LLM at http://127.0.0.1:"),
        (Reply(status=429, headers={"Retry-After": "0"}), "LlmUnavailable: the LLM at http://127.0.0.1:"),
        (Reply(delay=2.0, answer=empty_plan()), "LlmUnavailable: the LLM at http://127.0.0.1:"),
    ],
    ids=["invalid-json", "truncated", "off-schema", "http-500", "http-429", "timeout"],
)
def test_a_bad_or_missing_answer_writes_nothing_and_is_recorded(maya, llm, settings, reply, error) -> None:
    settings.ATLAS_LLM_TIMEOUT = 0.5
    say(maya, "remember: Maya is allergic to cats", 0)
    llm.script(reply)
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "failed"
    run = ConsolidationRun.objects.get(subject=maya)
    assert run.status == "failed" and run.error.startswith(error), run.error
    assert run.plan is None and run.changes == {}
    assert stored(maya) == [] and watermark(maya) is None
    retried = reply.status in (500, 429) or reply.delay
    assert len(llm.requests) == (2 if retried else 1)  # ATLAS_LLM_RETRIES=1: one retry on 5xx/429/timeouts
    if reply.status == 200 and not reply.delay:
        assert (run.prompt_tokens, run.completion_tokens) == (100, 50)
    # The next run tries the same window again, and the failed record stays as it was.
    llm.script(empty_plan(facts=[fact("Maya is allergic to cats", [run_episode(maya)], fact_type="constraint")]))
    settings.ATLAS_LLM_TIMEOUT = 5
    assert consolidation_run(subject=maya).status == "done"
    assert texts(stored(maya)) == ["Maya is allergic to cats"]


def test_a_server_without_structured_output_is_asked_with_the_schema_in_the_prompt(maya, llm) -> None:
    episode = say(maya, "I'm vegetarian since January", 0)
    answer = empty_plan(facts=[fact("Maya is vegetarian", [episode], fact_type="constraint")])
    llm.script(Reply(answer=answer, refuse_schema=True))
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done", outcome.error
    assert ["response_format" in r for r in llm.requests] == [True, False]
    assert "validate against this JSON schema" in llm.requests[1]["messages"][0]["content"]
    assert texts(stored(maya)) == ["Maya is vegetarian"]
    # Known from then on: the next run asks with the prompt at once.
    say(maya, "remember: Maya cycles to work", 1)
    llm.script(Reply(answer=empty_plan(), refuse_schema=True))
    assert consolidation_run(subject=maya).status == "done"
    assert ["response_format" in r for r in llm.requests] == [True, False, False]


def test_writes_that_fail_midway_are_resumed_from_the_stored_plan(maya, llm, monkeypatch) -> None:
    a = say(maya, "remember: Maya speaks Portuguese", 0)
    b = say(maya, "remember: Maya collects stamps", 1)
    llm.script(empty_plan(facts=[fact("Maya speaks Portuguese", [a]), fact("Maya collects stamps", [b])]))
    original = writes.fact_write
    written: list[str] = []

    def second_fails(**kwargs):
        if len(written) == 1:
            raise RuntimeError("the cluster went away")
        stored_fact = original(**kwargs)
        written.append(stored_fact["id"])
        return stored_fact

    monkeypatch.setattr(writes, "fact_write", second_fails)
    failed = consolidation_run(subject=maya)
    assert failed.status == "failed" and failed.error == "writing failed: RuntimeError: the cluster went away"
    assert watermark(maya) is None and failed.run.plan is not None
    monkeypatch.setattr(writes, "fact_write", original)
    resumed = consolidation_run(subject=maya)
    assert resumed.status == "done" and resumed.run.pk == failed.run.pk and resumed.run.attempts == 2
    assert len(llm.requests) == 1  # the stored plan, not a new answer
    facts = stored(maya)
    assert texts(facts) == ["Maya collects stamps", "Maya speaks Portuguese"]
    assert written[0] in [f["id"] for f in facts]  # the fact written before the failure, not a second copy
    assert watermark(maya) == datetime(2026, 3, 2, 9, 1, tzinfo=UTC)
