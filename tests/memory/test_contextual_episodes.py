"""Contextual embeddings for episodes: the vector knows the previous turn and the date; the text stays the turn."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_site.elastic.client import bootstrap_client
from memory.elastic.indices import alias_name
from memory.elastic.mappings import stored_vector
from memory.inference.embeddings import embedding_provider, multilingual_embedding_provider
from memory.recall import RecallOptions, memory_recall
from memory.selectors import memory_get
from memory.services.prepare import embedding_text_of, memory_vectors
from memory.services.writes import episode_write


@pytest.fixture(autouse=True)
def contextual(settings):
    settings.ATLAS_CONTEXTUAL_EPISODES = True
    settings.ATLAS_USAGE_RECORDING = "off"


def test_a_turn_is_embedded_with_the_turn_before_it(maya) -> None:
    episode_write(
        subject=maya,
        session_id="s-print",
        at="2026-03-02T10:00:00Z",
        text="The printer keeps jamming. Should I clean the rollers or reinstall the driver?",
    )
    reply = episode_write(
        subject=maya, session_id="s-print", at="2026-03-02T10:05:00Z", text="Yes, the second one did it!"
    )
    stored = memory_get(subject=maya, memory_id=reply["id"])
    assert stored["text"] == "Yes, the second one did it!"
    assert reply["embedding_context"] == (
        "Monday 02 March 2026. Before: The printer keeps jamming. Should I clean the rollers or reinstall the driver?"
    )
    assert embedding_text_of(reply).endswith("\nNow: Yes, the second one did it!")
    hits = memory_recall(subject=maya, query="what fixed the printer jam?", k=2, options=RecallOptions(bm25=False)).hits
    assert reply["id"] in [h["id"] for h in hits]


def test_the_multilingual_vector_embeds_the_turn_alone(maya) -> None:
    """Only the main model's vector carries the context; the multilingual one is the turn's own words."""
    episode_write(subject=maya, session_id="s-1", at="2026-03-02T10:00:00Z", text="Should I reinstall the driver?")
    reply = episode_write(subject=maya, session_id="s-1", at="2026-03-02T10:05:00Z", text="Yes, that did it!")
    stored = bootstrap_client().get(index=alias_name("episodic"), id=reply["id"])["_source"]["embedding_multilingual"]
    e5 = multilingual_embedding_provider()
    alone, with_context = e5.embed_documents([reply["text"], embedding_text_of(reply)])
    signed = np.frombuffer(bytes.fromhex(stored), dtype=np.int8).astype(float)
    cosine = lambda a, b: float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))  # noqa: E731
    assert cosine(signed, alone) > 0.999
    assert cosine(signed, with_context) < 0.95


def test_turns_of_other_sessions_or_subjects_are_not_context(maya, tom) -> None:
    episode_write(subject=tom, session_id="s-1", at="2026-03-02T10:00:00Z", text="Tom's turn")
    episode_write(subject=maya, session_id="s-2", at="2026-03-02T10:00:00Z", text="another session")
    first = episode_write(subject=maya, session_id="s-1", at="2026-03-02T10:01:00Z", text="first turn of s-1")
    assert "embedding_context" not in first


@pytest.mark.parametrize("blend", [0.0, 0.5, 1.0])
def test_a_contextual_turn_stores_the_blend_of_its_two_vectors(settings, blend: float) -> None:
    settings.ATLAS_CONTEXT_BLEND = blend
    provider = embedding_provider()
    turn = {"memory_type": "episodic", "text": "Yes, the second one did it!", "embedding_context": "Before: jam?"}
    fact = {"memory_type": "semantic", "text": "Maya owns a laser printer"}
    contextual, alone, fact_vector = (
        np.array(v) for v in provider.embed_documents([embedding_text_of(turn), turn["text"], fact["text"]])
    )
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    expected = blend * unit(contextual) + (1 - blend) * unit(alone)
    assert memory_vectors(provider, [turn, fact]) == [
        stored_vector(expected.tolist()),
        stored_vector(fact_vector.tolist()),
    ]


def test_a_turn_that_fills_the_model_by_itself_is_embedded_alone(maya) -> None:
    """Issue 25 point 5: a long turn in a session was embedded twice at the main model's full window (with
    its context and alone: 1.2 s to store). A turn of SELF_CONTAINED_TURN_TOKENS tokens or more is embedded
    once, alone — still linked to the turn before it; one token fewer keeps its context."""
    from memory.services.prepare import SELF_CONTAINED_TURN_TOKENS

    provider = embedding_provider()
    episode_write(subject=maya, session_id="s-long", at="2026-03-02T10:00:00Z", text="Which laptop should I buy?")
    words = ["laptop"] * (SELF_CONTAINED_TURN_TOKENS - 2)  # one token each, plus the two marks
    assert provider.tokens_in(" ".join(words)) == SELF_CONTAINED_TURN_TOKENS
    long = episode_write(subject=maya, session_id="s-long", at="2026-03-02T10:01:00Z", text=" ".join(words))
    assert "embedding_context" not in long and long["previous_turn_id"]
    assert embedding_text_of(long) == long["text"]
    stored = bootstrap_client().get(index=alias_name("episodic"), id=long["id"])["_source"]["embedding"]
    signed = np.frombuffer(bytes.fromhex(stored), dtype=np.int8).astype(float)
    [alone] = provider.embed_documents([long["text"]])
    assert float(np.dot(signed, alone) / (np.linalg.norm(signed) * np.linalg.norm(alone))) > 0.999
    shorter = episode_write(subject=maya, session_id="s-long", at="2026-03-02T10:02:00Z", text=" ".join(words[1:]))
    assert shorter["embedding_context"].startswith("Monday 02 March 2026. Before: laptop laptop")
    # Not the whole 8,000-character turn in another script either: CJK is a token a character.
    cjk = episode_write(subject=maya, session_id="s-long", at="2026-03-02T10:03:00Z", text="漢字仮名交じり文" * 1000)
    assert "embedding_context" not in cjk
