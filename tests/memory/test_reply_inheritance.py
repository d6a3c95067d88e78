"""A reply shares its question's relevance: episodes link to the turn before them, recall lets the
reply inherit part of that turn's fused score (ATLAS_REPLY_INHERITANCE)."""

from __future__ import annotations

import json

import pytest

from memory.portable.lines import memories_import
from memory.recall import memory_recall
from memory.recall.fusion import replies_inherit
from memory.selectors import memory_get
from memory.services.writes import episode_write
from tenants.selectors import subject_get


@pytest.fixture(autouse=True)
def no_usage_recording(settings):
    settings.ATLAS_USAGE_RECORDING = "off"


def _item(memory_id: str, score: float, previous: str | None = None):
    return (memory_id, score, {"_source": {"previous_turn_id": previous} if previous else {}})


def test_a_reply_gains_its_share_of_the_previous_turns_score() -> None:
    fused = [_item("q", 2.0), _item("x", 1.5), _item("r", 0.4, previous="q"), _item("s", 0.3, previous="r")]
    inherited = replies_inherit(fused, 0.5)
    # r: 0.4 + 0.5 · 2.0; s inherits from r's score before inheritance (0.4), not from r's new 1.4.
    assert [(i, round(s, 6)) for i, s, _ in inherited] == [("q", 2.0), ("x", 1.5), ("r", 1.4), ("s", 0.5)]


def test_only_a_question_above_the_average_candidate_passes_anything_on() -> None:
    fused = [_item("x", 1.0), _item("q", -0.5), _item("r", -0.2, previous="q"), _item("o", 0.1, previous="gone")]
    assert [(i, s) for i, s, _ in replies_inherit(fused, 0.5)] == [("x", 1.0), ("o", 0.1), ("r", -0.2), ("q", -0.5)]
    assert replies_inherit(fused, 0.0) is fused


def test_a_turn_records_the_turn_before_it_in_its_session(maya, tom, settings) -> None:
    settings.ATLAS_CONTEXTUAL_EPISODES = False  # the link does not depend on contextual embeddings
    episode_write(subject=tom, session_id="s-1", at="2026-03-02T10:00:00Z", text="Tom's turn")
    episode_write(subject=maya, session_id="s-2", at="2026-03-02T10:00:30Z", text="another session")
    first = episode_write(subject=maya, session_id="s-1", at="2026-03-02T10:01:00Z", text="first turn of s-1")
    second = episode_write(subject=maya, session_id="s-1", at="2026-03-02T10:02:00Z", text="second turn of s-1")
    assert "previous_turn_id" not in first
    assert second["previous_turn_id"] == first["id"]
    assert "embedding_context" not in second
    assert memory_get(subject=maya, memory_id=second["id"])["previous_turn_id"] == first["id"]


def test_an_import_links_each_turn_to_the_one_before_it_in_its_session(tenant) -> None:
    lines = [
        {"id": "a1", "user_id": "ana", "memory_type": "episodic", "session_id": "A", "text": "a one", "days_ago": 3},
        {"id": "b1", "user_id": "ana", "memory_type": "episodic", "session_id": "B", "text": "b one", "days_ago": 3},
        {"id": "a2", "user_id": "ana", "memory_type": "episodic", "session_id": "A", "text": "a two", "days_ago": 3},
        {"id": "n1", "user_id": "ana", "memory_type": "episodic", "text": "no session", "days_ago": 3},
    ]
    report = memories_import(
        tenant=tenant, lines=[json.dumps(line) for line in lines], create_subjects=True, actor="test"
    )
    assert report.errors == []
    ana = subject_get(tenant=tenant, external_id="ana")
    stored = {h["external_id"]: h for h in memory_recall(subject=ana, query="one two session", k=10).hits}
    assert stored["a2"]["previous_turn_id"] == stored["a1"]["id"]
    assert [("previous_turn_id" in stored[i]) for i in ("a1", "b1", "n1")] == [False, False, False]


def test_a_reply_that_only_makes_sense_after_its_question_is_recalled(maya, settings) -> None:
    """Without contextual embeddings, so the reply's own vector knows nothing of the question."""
    settings.ATLAS_CONTEXTUAL_EPISODES = False
    session = {"session_id": "s-trip"}
    episode_write(
        subject=maya,
        at="2026-05-02T18:00:00Z",
        text="For our anniversary: the lakeside cabin near Tahoe, or the spa hotel in downtown Reno?",
        **session,
    )
    reply = episode_write(subject=maya, at="2026-05-02T18:03:00Z", text="The first one, no question.", **session)
    for n, text in enumerate(
        [
            "I booked a table for the anniversary dinner at eight",
            "Reno traffic was awful this morning",
            "The spa voucher from my sister expires in June",
            "Anniversary gift ideas: a watch or a weekend away",
            "We hiked near the lake last weekend and it rained",
            "The hotel in Reno charged a resort fee we did not expect",
        ]
    ):
        episode_write(subject=maya, at=f"2026-05-0{3 + n}T09:00:00Z", text=text)
    query = "Where did Maya decide to stay for the anniversary trip?"

    def rank(share: float) -> int:
        settings.ATLAS_REPLY_INHERITANCE = share
        ids = [h["id"] for h in memory_recall(subject=maya, query=query, k=10).hits]
        return ids.index(reply["id"]) + 1

    # The question itself ranks near the top; the more of its score the reply inherits, the higher it climbs.
    # ([6, 5, 3] with 8-bit weights and before ranking for turns: the 7-bit graph, memory/inference/mpnet.py, puts the
    # reply alone one lower, and the question it answers, a past question, now weighs half (turn priors).)
    assert [rank(share) for share in (0.0, 0.5, 1.0)] == [7, 5, 2]
