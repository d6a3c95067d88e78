"""Consolidation keeps the scope: a fact distilled from one agent's episodes carries that agent's scope; a
fact citing episodes of different scopes is refused unless the tenant merges scopes, and then carries what
they share. The model sees each turn's scope (and each stored fact's)."""

from __future__ import annotations

from datetime import timedelta

from memory.consolidation.run import consolidation_run
from memory.selectors import memory_list
from memory.services import writes
from tenants.services import tenant_consolidation_merge_scopes_set
from tests.fake_llm import empty_plan, fact
from tests.memory.consolidation.scripted import T0


def _said(subject, text: str, minutes: int, **scope) -> str:
    return writes.episode_write(subject=subject, text=text, at=T0 + timedelta(minutes=minutes), **scope)["id"]


PLANNER = {"agent_id": "planner", "app_id": "web", "metadata": {"project": "apollo", "priority": 2}}
CODER = {"agent_id": "coder", "app_id": "web", "metadata": {"project": "apollo", "priority": 5}}


def _facts(subject) -> dict[str, dict]:
    return {m["text"]: m for m in memory_list(subject=subject, memory_types=["semantic"])["memories"]}


def _scope(memory: dict) -> dict:
    return {k: memory[k] for k in ("agent_id", "app_id", "run_id", "metadata") if k in memory}


def _scripted(maya, llm):
    planner = _said(maya, "For the apollo launch I want the checklist every Monday", 0, **PLANNER)
    coder = _said(maya, "Apollo builds must run the integration tests first", 1, **CODER)
    llm.script(
        empty_plan(
            facts=[
                fact("Maya wants the apollo checklist every Monday", [planner]),
                fact("Apollo builds run the integration tests first", [coder]),
                fact("Maya runs the apollo launch", [planner, coder]),
            ]
        )
    )
    return planner, coder


def test_each_fact_carries_its_episodes_scope_and_a_mix_is_refused(maya, llm):
    planner, coder = _scripted(maya, llm)
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done", outcome.error
    turns = llm.prompts()[0]["new_turns_by_session"][0]["turns"]
    assert [t["scope"] for t in turns] == [PLANNER, CODER]
    facts = _facts(maya)
    assert sorted(facts) == [
        "Apollo builds run the integration tests first",
        "Maya wants the apollo checklist every Monday",
    ]
    assert _scope(facts["Maya wants the apollo checklist every Monday"]) == PLANNER
    assert _scope(facts["Apollo builds run the integration tests first"]) == CODER
    run = outcome.run
    run.refresh_from_db()
    assert [(r["kind"], r["reason"]) for r in run.rejected] == [
        ("fact", "cites episodes of different scopes (agent, app, run or metadata): not merged")
    ]


def test_a_tenant_that_merges_scopes_gets_one_fact_with_what_they_share(maya, llm):
    tenant_consolidation_merge_scopes_set(tenant=maya.tenant, merge=True, actor="test")
    maya.tenant.refresh_from_db()
    _scripted(maya, llm)
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done", outcome.error
    assert _scope(_facts(maya)["Maya runs the apollo launch"]) == {"app_id": "web", "metadata": {"project": "apollo"}}


def test_a_filter_finds_what_one_agent_taught(maya, llm):
    _scripted(maya, llm)
    consolidation_run(subject=maya)
    found = memory_list(subject=maya, memory_types=["semantic"], filters={"agent_id": "planner"})["memories"]
    assert [m["text"] for m in found] == ["Maya wants the apollo checklist every Monday"]
