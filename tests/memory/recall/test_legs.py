"""When the BM25 leg runs under ATLAS_BM25_LEG=literal: questions naming something literally or asking about time."""

from __future__ import annotations

import pytest

from memory.recall.legs import bm25_leg_searched

ASKS_ABOUT_TIME = [
    "When did Amara bring her new dog home?",
    "  when did Jonah buy the van?",
    "What did Ines do in October?",
    "Where does Ines teach on Tuesdays?",
    "Who came over on saturday?",
    "What did I cook yesterday?",
    "What are we doing tomorrow night?",
    "Which film did we watch tonight?",
    "What did Marcus start two weeks ago?",
    "How many kilometres did I ride last week?",
    "Where are we going next  summer?",
    "What changed this year at work?",
    "What did Priya plan for the previous weekend?",
]
NAMES_SOMETHING_LITERALLY = ["TP1947", "What broke in v2.3.1?", "Why does ERR_TIMEOUT happen?", "Is the VPN down?"]
NATURAL_LANGUAGE = [
    "What breed of dog did Amara adopt?",
    "Who takes care of her pet when she's away?",
    "I may go hiking, what should I pack?",
    "Is there a march against the new road?",
    "What does her brother do at night?",
    "Which week-long course did she like best?",
    "",
]


@pytest.mark.parametrize("query", ASKS_ABOUT_TIME + NAMES_SOMETHING_LITERALLY)
def test_literal_runs_bm25_for_a_question_about_time_or_naming_something_literally(settings, query: str) -> None:
    settings.ATLAS_BM25_LEG = "literal"
    assert bm25_leg_searched(query, dense_legs=True) is True


@pytest.mark.parametrize("query", NATURAL_LANGUAGE)
def test_literal_leaves_a_natural_language_question_to_the_dense_legs(settings, query: str) -> None:
    settings.ATLAS_BM25_LEG = "literal"
    assert bm25_leg_searched(query, dense_legs=True) is False
    # Without a dense leg BM25 is the only judge: it runs whatever the question.
    assert bm25_leg_searched(query, dense_legs=False) is True


@pytest.mark.parametrize("query", NATURAL_LANGUAGE[:2] + ASKS_ABOUT_TIME[:1])
def test_always_runs_bm25_for_every_question(settings, query: str) -> None:
    settings.ATLAS_BM25_LEG = "always"
    assert bm25_leg_searched(query, dense_legs=True) is True


@pytest.mark.django_db
def test_literal_scores_bm25_over_the_dense_legs_candidates_without_searching(maya, settings, monkeypatch) -> None:
    """A natural-language question under `literal`: no BM25 search, yet the BM25 leg judges what the dense
    legs found (memory/recall/lexical.py) — with the leg's weight, its ranking functions, and explain."""
    from memory.elastic import store
    from memory.recall import memory_recall
    from memory.services.writes import episode_write

    settings.ATLAS_BM25_LEG = "literal"
    settings.ATLAS_USAGE_RECORDING = "off"
    named = episode_write(subject=maya, text="Amara transferred to the cardiac unit in spring")
    episode_write(subject=maya, text="My sister works in a hospital ward at night")
    episode_write(subject=maya, text="We visited the old hospital museum")
    bodies: list[dict] = []
    original = store.memories_msearch

    def recording(reader, *, searches, **kwargs):
        bodies.extend(body for _, body in searches)
        return original(reader, searches=searches, **kwargs)

    monkeypatch.setattr(store, "memories_msearch", recording)
    question = "Which hospital unit did Amara move to?"
    pooled = memory_recall(subject=maya, query=question, k=3, explain=True)
    settings.ATLAS_BM25_POOL = False
    dense_only = memory_recall(subject=maya, query=question, k=3, explain=True)
    assert not any("multi_match" in str(body) for body in bodies)  # the engine's BM25 never searched
    assert pooled.legs == ["bm25", "dense", "multilingual"] and dense_only.legs == ["dense", "multilingual"]
    assert "bm25_pool" in pooled.timings_ms and "bm25_pool" not in dense_only.timings_ms
    first = pooled.hits[0]
    assert first["id"] == named["id"]
    bm25 = first["explain"]["legs"]["bm25"]
    assert bm25["rank"] == 1 and bm25["score"] > 0 and bm25["weight"] == settings.ATLAS_ZSCORE_WEIGHT_BM25
    assert pooled.explain["bm25_leg"] == "scored in the app over the other legs' candidates (ATLAS_BM25_POOL)"
    assert "bm25_leg" not in dense_only.explain
