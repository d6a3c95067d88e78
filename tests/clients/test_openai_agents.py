"""The OpenAI Agents SDK adapters with the real openai-agents package against the live server: AtlasSession
(the Session protocol's semantics, the user's turns as episodes), atlas_recall_tool invoked as the SDK invokes
a tool, and both in a Runner run driven by the SDK's own scripted model (no LLM)."""

from __future__ import annotations

import asyncio
import json

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner
from agents.memory import Session
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from atlas_memory import AsyncAtlas, Forbidden, NotFound, RecallOptions
from atlas_memory.openai_agents import NOTHING_RECALLED, AtlasSession, atlas_recall_tool

from .conftest import FAST

pytestmark = pytest.mark.django_db(transaction=True)

USER_LIST_ITEM = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "I have a cat"}]}
ASSISTANT_ITEM = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Noted.", "annotations": []}],
}
CALL_ITEM = {"type": "function_call", "call_id": "c1", "name": "atlas_recall", "arguments": '{"query": "x"}'}
OUTPUT_ITEM = {"type": "function_call_output", "call_id": "c1", "output": "No memories found."}


async def _invoke(tool: FunctionTool, arguments: dict) -> str:
    """The tool run the way the SDK runs it: on_invoke_tool with a ToolContext and the JSON arguments."""
    raw = json.dumps(arguments)
    context = ToolContext(context=None, tool_name=tool.name, tool_call_id="call-1", tool_arguments=raw)
    return await tool.on_invoke_tool(context, raw)


def test_the_session_keeps_the_users_turns_in_order_and_pops_and_clears(world, atlas) -> None:
    async def agent() -> None:
        async with AsyncAtlas(world.url, world.svc, retry=FAST) as client:
            session = AtlasSession("conv-1", client=client, subject="alice", agent_id="helper")
            other = AtlasSession("conv-2", client=client, subject="alice")
            assert isinstance(session, Session)
            assert await session.get_items() == [] and await session.pop_item() is None
            await session.add_items([])
            await session.add_items(
                [{"content": "I moved to Lisbon", "role": "user"}, ASSISTANT_ITEM, CALL_ITEM, OUTPUT_ITEM]
            )
            await session.add_items([USER_LIST_ITEM, {"role": "system", "content": "be brief"}])
            await session.add_items([{"role": "user", "content": "And a dog"}])
            await other.add_items([{"role": "user", "content": "Elsewhere"}])

            assert await session.get_items() == [
                {"content": "I moved to Lisbon", "role": "user"},
                {"content": "I have a cat", "role": "user"},
                {"content": "And a dog", "role": "user"},
            ]
            assert await session.get_items(limit=2) == [
                {"content": "I have a cat", "role": "user"},
                {"content": "And a dog", "role": "user"},
            ]
            assert await session.get_items(limit=0) == []
            assert await session.pop_item() == {"content": "And a dog", "role": "user"}
            assert [i["content"] for i in await session.get_items()] == ["I moved to Lisbon", "I have a cat"]
            await session.clear_session()
            assert await session.get_items() == [] and await session.pop_item() is None
            assert await other.get_items() == [{"content": "Elsewhere", "role": "user"}]

    asyncio.run(agent())
    assert [(m.text, m.session_id) for m in atlas.memory_list(subject="alice").memories] == [("Elsewhere", "conv-2")]


def test_the_recall_tool_answers_the_hits_as_text_when_the_sdk_invokes_it(world, atlas) -> None:
    fact = atlas.fact_write(subject="alice", text="Alice lives in Lisbon", fact_type="identity")
    atlas.fact_write(subject="bob", text="Bob lives in Oslo")
    line = f"1. [semantic, {fact.created_at:%Y-%m-%d}] Alice lives in Lisbon"

    async def agent() -> tuple[str, str, str, str]:
        async with AsyncAtlas(world.url, world.svc, retry=FAST) as client:
            awaited = atlas_recall_tool(client, subject="alice", k=1)
            in_thread = atlas_recall_tool(atlas, subject="alice", k=1, name="recall_alice")
            facts_only = atlas_recall_tool(client, subject="alice", options=RecallOptions(types=["episodic"]))
            assert (awaited.name, in_thread.name) == ("atlas_recall", "recall_alice")
            assert awaited.params_json_schema["required"] == ["query"]
            return (
                await _invoke(awaited, {"query": "where does alice live?"}),
                await _invoke(in_thread, {"query": "where does alice live?"}),
                await _invoke(facts_only, {"query": "where does alice live?"}),
                await _invoke(awaited, {"query": "hi"}),
            )

    awaited, in_thread, episodes_only, small_talk = asyncio.run(agent())
    assert awaited == in_thread == line
    assert episodes_only == NOTHING_RECALLED  # alice has no episodes
    assert small_talk == NOTHING_RECALLED  # recall answers nothing for small talk


def test_a_runner_run_uses_the_tool_and_keeps_the_users_turns_in_the_session(world, atlas) -> None:
    fact = atlas.fact_write(subject="alice", text="Alice lives in Lisbon")
    model = ScriptedModel(
        [
            [function_call("atlas_recall", {"query": "where do I live?"}, call_id="call-1")],
            [assistant_message("You live in Lisbon.")],
            [assistant_message("You asked where you live.")],
        ]
    )

    async def agent() -> tuple[str, str, list]:
        async with AsyncAtlas(world.url, world.svc, retry=FAST) as client:
            helper = Agent(name="helper", model=model, tools=[atlas_recall_tool(client, subject="alice")])
            session = AtlasSession("conv", client=client, subject="alice")
            config = RunConfig(tracing_disabled=True)
            first = await Runner.run(helper, "where do I live?", session=session, run_config=config)
            second = await Runner.run(helper, "what did I ask?", session=session, run_config=config)
            return first.final_output, second.final_output, await session.get_items()

    first, second, stored = asyncio.run(agent())
    assert (first, second) == ("You live in Lisbon.", "You asked where you live.")
    tool_output = next(i for i in model.calls[1].input if i.get("type") == "function_call_output")
    assert tool_output["output"] == f"1. [semantic, {fact.created_at:%Y-%m-%d}] Alice lives in Lisbon"
    assert stored == [{"content": "where do I live?", "role": "user"}, {"content": "what did I ask?", "role": "user"}]
    # The second run's model saw the session's history (the user's turn) before the new input.
    assert model.calls[2].input == stored


def test_a_subjects_session_and_tool_never_reach_another_subject(world, atlas) -> None:
    atlas.episode_write(subject="bob", text="Bob's secret turn", session_id="conv")
    atlas.fact_write(subject="bob", text="Bob's locker code is 4711")

    async def agent() -> str:
        async with AsyncAtlas(world.url, world.own, retry=FAST) as own:
            alices = AtlasSession("conv", client=own, subject="alice")
            await alices.add_items([{"role": "user", "content": "Alice's turn"}])
            assert await alices.get_items() == [{"content": "Alice's turn", "role": "user"}]
            bobs = AtlasSession("conv", client=own, subject="bob")
            with pytest.raises(NotFound):
                await bobs.get_items()
            with pytest.raises(NotFound):
                await bobs.add_items([{"role": "user", "content": "into bob's session"}])
            with pytest.raises(Forbidden):  # popping forgets, and alice's token has no forget scope
                await alices.pop_item()
            return await _invoke(atlas_recall_tool(own, subject="bob"), {"query": "locker code"})

    answered = asyncio.run(agent())
    assert "4711" not in answered and answered == "An error occurred while running the tool. Please try again."
    assert sorted(m.text for m in atlas.memory_list(subject="bob").memories) == [
        "Bob's locker code is 4711",
        "Bob's secret turn",
    ]
    assert [m.text for m in atlas.memory_list(subject="alice").memories] == ["Alice's turn"]
