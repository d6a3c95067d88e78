"""Ranking for turns: each lever's prior on the fused list, and a repeat of the turn never first."""

from __future__ import annotations

import pytest

from memory.recall import memory_recall
from memory.recall.turn_kind import QUESTION, REQUEST, SMALL_TALK, STATEMENT
from memory.recall.turn_priors import turn_priors_apply
from memory.services.writes import episode_write, fact_write


def _hit(memory_id: str, score: float, memory_type: str, **source) -> tuple[str, float, dict]:
    return (memory_id, score, {"_id": memory_id, "_source": {"memory_type": memory_type, **source}})


@pytest.fixture
def levers(settings):
    settings.ATLAS_TURN_QUESTION_FACT_PRIOR = 2.0
    settings.ATLAS_TURN_OWN_QUESTION_FACT_PRIOR = 1.0  # its own test below
    settings.ATLAS_TURN_REQUEST_PLAYBOOK_PRIOR = 3.0
    settings.ATLAS_TURN_REQUEST_FACT_PRIOR = 1.5
    settings.ATLAS_TURN_ASKED_PRIOR = 0.5
    settings.ATLAS_TURN_STATEMENT_FACT_PRIOR = 1.25
    settings.ATLAS_TURN_REPEAT_JACCARD = 0.6
    return settings


def _ids(ranked) -> list[str]:
    return [memory_id for memory_id, _, _ in ranked]


def test_a_question_favours_current_facts_over_turns(levers) -> None:
    fused = [
        _hit("e1", 5.0, "episodic", text="I moved to Salford last spring"),
        _hit("f1", 4.0, "semantic", fact_type="identity"),
        _hit("old", 4.5, "semantic", fact_type="identity", superseded_by=["f1"]),
        _hit("e2", 0.0, "episodic", text="The weather was awful"),
    ]
    priors: dict[str, float] = {}
    ranked = turn_priors_apply(fused, text="Where do I live?", kind=QUESTION, window=80, priors=priors)
    # floor 0: f1 4 → 8 passes e1 (5); the superseded fact gets no prior.
    assert _ids(ranked) == ["f1", "e1", "old", "e2"]
    assert [score for _, score, _ in ranked] == [8.0, 5.0, 4.5, 0.0]
    assert priors == {"f1": 2.0}


def test_a_request_favours_playbooks_and_constraint_or_preference_facts(levers) -> None:
    fused = [
        _hit("e1", 1.0, "episodic", text="We took the train last time"),
        _hit("world", 0.9, "semantic", fact_type="world"),
        _hit("pref", 0.8, "semantic", fact_type="preference"),
        _hit("p1", 0.5, "procedural"),
        _hit("e2", -1.0, "episodic", text="Fine"),
    ]
    ranked = turn_priors_apply(fused, text="Book me a train to Cardiff", kind=REQUEST, window=80)
    # floor -1: p1 -1 + 3·1.5 = 3.5; pref -1 + 1.5·1.8 = 1.7; e1 2 above the floor stays 1.0; world 0.9.
    assert _ids(ranked) == ["p1", "pref", "e1", "world", "e2"]
    assert ranked[0][1] == pytest.approx(3.5)
    assert ranked[1][1] == pytest.approx(1.7)


def test_a_statement_favours_current_facts_and_small_talk_gets_no_type_prior(levers) -> None:
    fused = [_hit("e1", 2.0, "episodic", text="I live in Leeds"), _hit("f1", 1.8, "semantic", fact_type="identity")]
    fused += [_hit("p1", 0.5, "procedural"), _hit("e0", 0.0, "episodic", text="ok")]
    assert _ids(turn_priors_apply(fused, text="We're moving again", kind=STATEMENT, window=80)) == [
        "f1",
        "e1",
        "p1",
        "e0",
    ]
    assert turn_priors_apply(fused, text="lovely", kind=SMALL_TALK, window=80) == fused


def test_a_turn_that_asked_is_weaker_evidence_than_one_that_stated(levers) -> None:
    fused = [
        _hit("asked", 3.0, "episodic", text="Is May too hot for Lisbon?"),
        _hit("stated", 2.0, "episodic", text="We're going to Lisbon in May"),
        _hit("low", 0.0, "episodic", text="ok"),
    ]
    ranked = turn_priors_apply(fused, text="Lisbon's on", kind=STATEMENT, window=80)
    assert _ids(ranked) == ["stated", "asked", "low"]
    assert ranked[1][1] == pytest.approx(1.5)


def test_a_past_turn_repeating_the_turn_is_never_first(levers, settings) -> None:
    settings.ATLAS_TURN_ASKED_PRIOR = 1.0  # only the rule: it still must not be first
    fused = [
        _hit("same", 9.0, "episodic", text="Which vet is Biscuit registered with?"),
        _hit("e1", 2.0, "episodic", text="Biscuit limps"),
        _hit("f1", 1.0, "semantic", fact_type="world"),
    ]
    ranked = turn_priors_apply(fused, text="which vet is Biscuit registered with", kind=STATEMENT, window=80)
    assert _ids(ranked) == ["e1", "same", "f1"]


def test_only_the_window_is_rescored_and_the_rest_keeps_its_order(levers) -> None:
    fused = [_hit("e1", 3.0, "episodic", text="hello there"), _hit("e2", 2.0, "episodic", text="fine")]
    fused += [_hit("f1", 1.0, "semantic", fact_type="identity"), _hit("f2", 0.5, "semantic", fact_type="identity")]
    ranked = turn_priors_apply(fused, text="Where do I live?", kind=QUESTION, window=3)
    # floor 0.5 over the whole list: f1 0.5 + 2·0.5 = 1.5 stays below e2; f2, beyond the window, is untouched.
    assert _ids(ranked) == ["e1", "e2", "f1", "f2"]
    assert ranked[2][1] == pytest.approx(1.5)
    assert ranked[3] == fused[3]


def test_a_question_in_the_first_person_gives_current_facts_its_own_prior(levers) -> None:
    levers.ATLAS_TURN_QUESTION_FACT_PRIOR = 1.0
    levers.ATLAS_TURN_OWN_QUESTION_FACT_PRIOR = 3.0
    fused = [
        _hit("e1", 2.0, "episodic", text="We moved to Salford last spring"),
        _hit("f1", 1.0, "semantic", fact_type="identity"),
        _hit("e2", 0.0, "episodic", text="The weather was awful"),
    ]
    priors: dict[str, float] = {}
    own = turn_priors_apply(fused, text="Where do I live?", kind=QUESTION, window=80, priors=priors)
    # floor 0: f1 1 → 3 passes e1 (2) for the user's question about themselves ...
    assert _ids(own) == ["f1", "e1", "e2"] and priors == {"f1": 3.0}
    # ... and not for a question about someone by name, nor for a request in the first person.
    assert turn_priors_apply(fused, text="Where does Kofi live?", kind=QUESTION, window=80) == fused
    assert _ids(turn_priors_apply(fused, text="Book my usual table", kind=REQUEST, window=80)) == ["e1", "f1", "e2"]


def test_levers_at_one_change_nothing(settings) -> None:
    for name in ("QUESTION_FACT", "OWN_QUESTION_FACT", "STATEMENT_FACT", "REQUEST_PLAYBOOK", "REQUEST_FACT", "ASKED"):
        setattr(settings, f"ATLAS_TURN_{name}_PRIOR", 1.0)
    settings.ATLAS_TURN_REPEAT_JACCARD = 0.0
    fused = [_hit("e1", 3.0, "episodic", text="Where do I live?"), _hit("f1", 1.0, "semantic", fact_type="identity")]
    assert turn_priors_apply(fused, text="Where do I live?", kind=QUESTION, window=80) == fused
    assert turn_priors_apply([], text="x", kind=QUESTION, window=80) == []


def test_recall_ranks_a_turn_by_its_kind_and_explains_the_prior(maya, levers) -> None:
    """The issue's failure, end to end: the same question asked in an earlier session was the nearest text
    and came first; with turn ranking the current fact does, and explain names the prior it got."""
    levers.ATLAS_USAGE_RECORDING = "off"
    asked = episode_write(subject=maya, text="Where do I live these days?", at="2026-11-01T10:00:00Z")
    said = episode_write(subject=maya, text="We moved to Lisbon in March", at="2026-03-01T10:00:00Z")
    fact = fact_write(subject=maya, text="Maya lives in Lisbon", fact_type="identity", source_episodes=[said["id"]])
    result = memory_recall(subject=maya, query="where do I live these days?", k=3, explain=True)
    ids = [hit["id"] for hit in result.hits]
    assert ids[0] == fact["id"]
    assert asked["id"] in ids[1:]  # demoted, not hidden
    assert said["id"] not in ids  # folded under the fact as its evidence
    assert result.explain["turn_kind"] == QUESTION
    why = {hit["id"]: hit["explain"] for hit in result.hits}
    assert why[fact["id"]]["turn_prior"] == 2.0
    assert why[asked["id"]]["turn_prior"] == 0.5  # it asked
