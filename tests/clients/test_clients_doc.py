"""docs/clients.md's adapter examples, run as printed against the live server (its URL and token swapped in;
the OpenAI Agents example's model swapped for the SDK's scripted model: no LLM)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from agents import set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
PLACEHOLDER = '"http://127.0.0.1:8000", "atlas_…"'

pytestmark = pytest.mark.django_db(transaction=True)


def _example(heading: str) -> str:
    section = DOC.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert PLACEHOLDER in example
    return example


def _run(example: str, world, **names: object) -> list[str]:
    runnable = example.replace(PLACEHOLDER, f"{world.url!r}, {world.svc!r}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(runnable, str(DOC), "exec"), dict(names))  # noqa: S102 - the doc's own code
    return printed.getvalue().splitlines()


def test_the_langgraph_example_runs_as_printed(world) -> None:
    assert _run(_example("LangGraph"), world) == [
        "{'likes': ['figs', 'pizza'], 'allergic_to': 'peanuts'}",
        "[(('alice', 'preferences'), 'food')]",
        "Anything without peanuts",
    ]


def test_the_langchain_example_runs_as_printed(world, atlas) -> None:
    assert _run(_example("LangChain"), world) == ["['We fly to Porto in May']", "episodic We fly to Porto in May"]
    assert atlas.memory_list(subject="alice").memories == []  # cleared


@pytest.fixture
def no_tracing():
    """The SDK traces every run to OpenAI by default; here there is nowhere to send the spans."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def test_the_openai_agents_example_runs_as_printed(world, atlas, no_tracing) -> None:
    fact = atlas.fact_write(subject="alice", text="Alice is allergic to peanuts", fact_type="constraint")
    question = "Which snack should I pack for the hike?"
    scripted = ScriptedModel(
        [
            [function_call("atlas_recall", {"query": question}, call_id="call-1")],
            [assistant_message("Dried figs: no peanuts in them.")],
        ]
    )
    example = _example("OpenAI Agents SDK")
    assert 'model="gpt-4.1-mini"' in example
    printed = _run(example.replace('model="gpt-4.1-mini"', "model=scripted"), world, scripted=scripted)
    assert printed == ["Dried figs: no peanuts in them.", f"[{{'content': {question!r}, 'role': 'user'}}]"]
    recalled = next(i for i in scripted.calls[1].input if i.get("type") == "function_call_output")
    assert recalled["output"] == f"1. [semantic, {fact.created_at:%Y-%m-%d}] Alice is allergic to peanuts"
    assert [m.text for m in atlas.memory_list(subject="alice").memories] == ["Alice is allergic to peanuts"]
