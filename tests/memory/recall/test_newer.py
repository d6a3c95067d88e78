"""A newer, not yet consolidated turn reaches the agent next to the fact it may change (memory.recall.newer)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.recall import RecallOptions, memory_recall
from memory.services.writes import episode_write, fact_write, playbook_write

DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def _quiet(settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"


@pytest.fixture
def alice_moved(maya):
    now = datetime.now(UTC)
    said = episode_write(
        subject=maya, text="I live in Berlin, in Kreuzberg near the canal", at=(now - 200 * DAY).isoformat()
    )
    berlin = fact_write(
        subject=maya, text="Maya lives in Berlin", fact_type="identity", source_episodes=[said["id"]],
        at=(now - 199 * DAY).isoformat(),
    )  # fmt: skip
    fact_write(subject=maya, text="Maya's home router is a Fritz!Box 7590", at=(now - 150 * DAY).isoformat())
    playbook_write(
        subject=maya,
        name="find a flat",
        trigger_text="Maya looks for a place to live",
        steps=["Ask which neighbourhoods", "Search the listings", "Book viewings"],
    )
    for n, text in enumerate(
        ("The weather is lovely today", "Can you remind me to call mum?", "I had pasta for lunch")
    ):
        episode_write(subject=maya, text=text, at=(now - (20 - n) * DAY).isoformat())
    moved = episode_write(subject=maya, text="I moved to Lisbon last month, loving the light here", at=now.isoformat())
    return {"berlin": berlin, "moved": moved, "cited": said}


def test_the_newer_turn_stands_next_to_the_fact_it_may_change(maya, alice_moved) -> None:
    result = memory_recall(subject=maya, query="Where does Maya live?", k=5, explain=True)
    ids = [h["id"] for h in result.hits]
    berlin, moved = alice_moved["berlin"]["id"], alice_moved["moved"]["id"]
    assert ids.index(moved) == ids.index(berlin) + 1
    shown = result.hits[ids.index(moved)]
    assert shown["newer_than"] == berlin
    assert shown["explain"]["newer_than"]["fact"] == berlin
    assert shown["explain"]["newer_than"]["why"].startswith("said after the fact was stored")
    # The turn the fact was distilled from is its evidence, never a "newer" statement.
    assert all(h.get("newer_than") is None for h in result.hits if h["id"] != moved)


def test_only_a_newer_turn_is_placed_and_the_lever_switches_it_off(maya, alice_moved) -> None:
    off = memory_recall(subject=maya, query="Where does Maya live?", k=5, options=RecallOptions(newer=False))
    assert all("newer_than" not in h for h in off.hits)
    # As of before the move (a look at history), nothing is placed.
    before = memory_recall(
        subject=maya, query="Where does Maya live?", k=5, as_of=(datetime.now(UTC) - DAY).isoformat()
    )
    assert all("newer_than" not in h for h in before.hits)
