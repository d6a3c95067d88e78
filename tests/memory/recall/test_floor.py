"""The relevance floor and small talk's silence (memory.recall.floor, issue 34 point 4)."""

from __future__ import annotations

import pytest

from memory.recall import RecallOptions, memory_recall
from memory.recall.floor import floor_apply
from memory.recall.folding import Lifted
from memory.recall.fusion import Leg
from memory.recall.turn_kind import QUESTION, SMALL_TALK, turn_classify
from memory.services.catalog import catalog_entry_write
from memory.services.writes import episode_write, fact_write


def _hit(memory_id: str, memory_type: str = "episodic", score: float | None = None) -> dict:
    return {"_id": memory_id, "_score": score, "_source": {"memory_type": memory_type}}


def _ranked(*ids: str) -> list:
    return [(memory_id, 1.0 - n / 10, _hit(memory_id)) for n, memory_id in enumerate(ids)]


DENSE = ("dense", Leg(hits=[_hit("a", score=0.81), _hit("b", score=0.7), _hit("c", score=0.62)], weight=3.0))


def test_memories_below_the_floor_and_beyond_the_dense_window_are_dropped_with_the_reason() -> None:
    floored = floor_apply(
        Lifted(ranked=_ranked("a", "b", "c", "d")), legs=[DENSE], text="where do I live", kind=QUESTION,
        floor=0.68, min_score=None,
    )  # fmt: skip
    assert [m for m, _, _ in floored.ranked] == ["a", "b"]
    assert floored.dropped == {
        "c": "below the floor: similarity 0.620 < 0.68",
        "d": "below the floor: beyond the dense leg's window (its lowest 0.620 < 0.68)",
    }
    assert floored.rule == "similarity floor 0.68"


def test_a_lifted_fact_stands_with_its_turns_similarity_and_a_literal_bm25_match_passes() -> None:
    lifted = Lifted(ranked=_ranked("fact", "code"), lifted={"fact": "a"})
    bm25 = ("bm25", Leg(hits=[_hit("code", score=7.5)], weight=0.5))
    floored = floor_apply(lifted, legs=[DENSE, bm25], text="my flight JL44", kind=QUESTION, floor=0.75, min_score=None)
    assert [m for m, _, _ in floored.ranked] == ["fact", "code"]
    plain = floor_apply(lifted, legs=[DENSE, bm25], text="my flight", kind=QUESTION, floor=0.75, min_score=None)
    assert [m for m, _, _ in plain.ranked] == ["fact"]  # without a literal token BM25 vouches for nothing


def test_small_talk_recalls_nothing_and_min_score_replaces_every_floor() -> None:
    lifted = Lifted(ranked=_ranked("a", "b", "c"))
    silent = floor_apply(lifted, legs=[DENSE], text="cheers!", kind=SMALL_TALK, floor=0.0, min_score=None)
    assert silent.ranked == [] and silent.dropped["a"] == "small talk: nothing to recall"
    chosen = floor_apply(lifted, legs=[DENSE], text="cheers!", kind=SMALL_TALK, floor=0.9, min_score=0.85)
    assert [m for m, _, _ in chosen.ranked] == ["a", "b"]
    assert chosen.dropped == {"c": "score 0.800 below min_score 0.85"}


def test_no_dense_leg_no_floor() -> None:
    floored = floor_apply(Lifted(ranked=_ranked("a")), legs=[], text="x", kind=QUESTION, floor=0.9, min_score=None)
    assert [m for m, _, _ in floored.ranked] == ["a"] and floored.rule == "no floor"


@pytest.mark.parametrize("turn", ["Hello again", "hi there", "I'm back", "cheers!", "thanks, that's all"])
def test_greetings_and_thanks_read_as_small_talk(turn: str) -> None:
    assert turn_classify(text=turn) == SMALL_TALK


@pytest.fixture(autouse=True)
def no_usage_recording(settings):
    settings.ATLAS_USAGE_RECORDING = "off"


def test_hello_again_recalls_nothing_and_explains_why(maya) -> None:
    catalog_entry_write(
        tenant=maya.tenant, actor="test", title="Support hours", text="Support is open 9 to 5 on weekdays"
    )
    fact_write(subject=maya, text="Maya is vegetarian")
    said = episode_write(subject=maya, text="Hello! Nice to meet you")
    result = memory_recall(subject=maya, query="Hello again", k=5, explain=True, expect=[said["id"]])
    assert result.hits == [] and result.explain["floor"] == "small talk"
    assert result.explain["expected"][0]["removed_by"] == "floor"
    assert memory_recall(subject=maya, query="Hello again", k=5, min_score=-100).hits  # the caller's own floor
    assert memory_recall(subject=maya, query="Hello again", k=5, options=RecallOptions(floor=False)).hits


def test_a_floor_returns_fewer_than_k(maya, settings) -> None:
    fact = fact_write(subject=maya, text="Maya is allergic to penicillin")
    for text in ("The bus was late again this morning", "I bought a blue umbrella", "Chess club is on Fridays"):
        episode_write(subject=maya, text=text)
    settings.ATLAS_RECALL_FLOOR = 0.0
    everything = memory_recall(subject=maya, query="Which antibiotics must Maya avoid?", k=4).hits
    assert len(everything) == 4
    settings.ATLAS_RECALL_FLOOR = 0.99
    assert memory_recall(subject=maya, query="Which antibiotics must Maya avoid?", k=4).hits == []
    dense = {h["id"]: h["explain"]["legs"]["dense"]["score"] for h in memory_recall(
        subject=maya, query="Which antibiotics must Maya avoid?", k=4, explain=True, options=RecallOptions(floor=False)
    ).hits}  # fmt: skip
    settings.ATLAS_RECALL_FLOOR = dense[fact["id"]] - 0.001
    kept = memory_recall(subject=maya, query="Which antibiotics must Maya avoid?", k=4).hits
    assert [h["id"] for h in kept] == [
        h for h, s in sorted(dense.items(), key=lambda i: -i[1]) if s >= dense[fact["id"]]
    ]


def test_min_score_must_be_a_number(maya) -> None:
    from atlas_site.errors import ValidationFailed

    with pytest.raises(ValidationFailed, match="min_score must be a number"):
        memory_recall(subject=maya, query="x", min_score="high")
