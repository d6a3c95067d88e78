"""Evidence folding: a returned current fact carries the episodes it cites; they take no slot of their own."""

from __future__ import annotations

import pytest

from memory.recall import RecallOptions, memory_recall
from memory.recall.folding import EVIDENCE_SHOWN, Citations, evidence_lift
from memory.services.writes import episode_write, fact_edit, fact_write


def _hit(memory_id: str, memory_type: str, **source) -> tuple[str, float, dict]:
    return (memory_id, 0.0, {"_id": memory_id, "_source": {"memory_type": memory_type, **source}})


def _ids(ranked) -> list[str]:
    return [memory_id for memory_id, _, _ in ranked]


def test_a_fact_takes_the_better_of_its_place_and_its_evidences_and_the_evidence_folds() -> None:
    ranked = [
        _hit("e1", "episodic"),
        _hit("e2", "episodic"),
        _hit("f1", "semantic", source_episodes=["e1", "e3"]),
        _hit("e3", "episodic"),
        _hit("f2", "semantic", source_episodes=["e4"]),
        _hit("e4", "episodic"),
        _hit("p1", "procedural"),
    ]
    lifted = evidence_lift(ranked, Citations())
    # e1 ranks first: f1, which cites it, takes its place; e3 folds under f1; f2 ranks above its e4.
    assert _ids(lifted.ranked) == ["f1", "e2", "f2", "p1"]
    assert lifted.folded == {"e1": "f1", "e3": "f1", "e4": "f2"}
    assert lifted.lifted == {"f1": "e1"}
    assert lifted.ranked[0][1] == ranked[0][1]  # with the turn's score


def test_a_superseded_or_retracted_fact_neither_folds_nor_is_lifted() -> None:
    ranked = [
        _hit("e1", "episodic"),
        _hit("old", "semantic", source_episodes=["e1"], superseded_by=["new"]),
        _hit("wrong", "semantic", source_episodes=["e2"], retracted=True),
        _hit("e2", "episodic"),
    ]
    lifted = evidence_lift(ranked, Citations())
    assert _ids(lifted.ranked) == ["e1", "old", "wrong", "e2"]
    assert (lifted.folded, lifted.lifted, lifted.past) == ({}, {}, {})


def test_facts_the_lookup_found_beyond_the_candidates_are_lifted_and_past_evidence_gives_way() -> None:
    ranked = [_hit("e-old", "episodic"), _hit("e1", "episodic"), _hit("e9", "episodic"), _hit("f-new", "semantic")]
    beyond = _hit("f1", "semantic", source_episodes=["e1"])[2]
    current = ranked[3][2]
    citations = Citations(
        current={"e1": "f1"}, past={"e-old": ("f-old", "f-new")}, facts={"f1": beyond, "f-new": current}
    )
    lifted = evidence_lift(ranked, citations)
    # The old turn gives its place to the current version of the fact it supported, and folds away.
    assert _ids(lifted.ranked) == ["f-new", "f1", "e9"]
    assert lifted.past == {"e-old": ("f-old", "f-new")} and lifted.folded == {"e1": "f1"}
    assert lifted.lifted == {"f-new": "e-old", "f1": "e1"}


def test_a_turn_whose_fact_this_recall_cannot_show_keeps_its_place() -> None:
    ranked = [_hit("e1", "episodic"), _hit("e2", "episodic")]
    lifted = evidence_lift(ranked, Citations(current={"e1": "f-filtered-out"}))
    assert _ids(lifted.ranked) == ["e1", "e2"] and lifted.folded == {}


@pytest.fixture(autouse=True)
def no_usage_recording(settings):
    settings.ATLAS_USAGE_RECORDING = "off"


def test_recall_folds_the_turns_under_the_fact_and_without_folding_they_come_back(maya) -> None:
    said = [
        episode_write(
            subject=maya, text="We finally moved to Lisbon, the flat is in Alfama", at="2026-03-01T10:00:00Z"
        ),
        episode_write(subject=maya, text="Lisbon traffic is worse than Porto's", at="2026-03-02T10:00:00Z"),
    ]
    unrelated = episode_write(subject=maya, text="Where is a good place to live with kids in Lisbon?")
    fact = fact_write(
        subject=maya, text="Maya lives in Lisbon", fact_type="identity", source_episodes=[s["id"] for s in said]
    )
    folded = memory_recall(subject=maya, query="Where does Maya live? Lisbon", k=5)
    ids = [h["id"] for h in folded.hits]
    assert fact["id"] in ids and not {s["id"] for s in said} & set(ids)
    assert unrelated["id"] in ids  # nothing cites it: it keeps its place
    hit = folded.hits[ids.index(fact["id"])]
    assert [e["id"] for e in hit["evidence"]] == [said[1]["id"], said[0]["id"]]  # newest first
    assert hit["evidence"][1] == {"id": said[0]["id"], "timestamp": said[0]["timestamp"], "text": said[0]["text"]}
    assert hit["evidence_count"] == 2
    assert [h["rank"] for h in folded.hits] == list(range(1, len(ids) + 1))
    apart = memory_recall(subject=maya, query="Where does Maya live? Lisbon", k=5, fold_evidence=False)
    assert {s["id"] for s in said} <= {h["id"] for h in apart.hits}
    assert not any("evidence" in h for h in apart.hits)


def test_evidence_outside_the_candidates_is_read_and_capped_and_a_replaced_fact_carries_none(maya) -> None:
    said = [
        episode_write(subject=maya, text=f"note {n} about nothing in particular", at=f"2026-01-{n + 1:02d}T09:00:00Z")
        for n in range(EVIDENCE_SHOWN + 2)
    ]
    old = fact_write(subject=maya, text="Maya's locker code is 4417", source_episodes=[s["id"] for s in said])
    hits = memory_recall(subject=maya, query="locker code 4417", k=3, memory_types=["semantic"]).hits
    assert hits[0]["id"] == old["id"]
    assert [e["id"] for e in hits[0]["evidence"]] == [s["id"] for s in reversed(said)][:EVIDENCE_SHOWN]
    assert hits[0]["evidence_count"] == EVIDENCE_SHOWN + 2
    new = fact_edit(subject=maya, memory_id=old["id"], text="Maya's locker code is 9921")
    history = memory_recall(subject=maya, query="locker code", k=5, include_superseded=True).hits
    replaced = next(h for h in history if h["id"] == old["id"])
    assert "evidence" not in replaced and new["id"] in {h["id"] for h in history}


def test_atlas_recall_prints_the_evidence_under_the_fact_and_can_list_it_apart(maya) -> None:
    from io import StringIO

    from django.core.management import call_command

    said = episode_write(subject=maya, text="My flight to Tokyo is JL44", at="2026-05-02T08:00:00Z")
    fact = fact_write(subject=maya, text="Maya flies JL44 to Tokyo", source_episodes=[said["id"]])

    def recall(*flags: str) -> list[str]:
        out = StringIO()
        call_command(
            "atlas_recall", "JL44 Tokyo", "--tenant", maya.tenant.slug, "--subject", "maya", *flags, stdout=out
        )
        return out.getvalue().splitlines()

    folded = recall("--k", "2")
    assert folded[0].split()[3] == fact["id"]
    assert folded[1].split() == ["evidence", "2026-05-02", said["id"], "My", "flight", "to", "Tokyo", "is", "JL44"]
    assert len(folded) == 3  # the fact, its evidence, the summary line
    apart = recall("--k", "2", "--no-fold-evidence")
    assert {line.split()[3] for line in apart[:2]} == {fact["id"], said["id"]}


def test_atlas_recall_explains_and_reports_the_expected(maya) -> None:
    from io import StringIO

    from django.core.management import call_command

    old = fact_write(subject=maya, text="Maya flies from Porto")
    fact_edit(subject=maya, memory_id=old["id"], text="Maya flies from Lisbon")
    out = StringIO()
    call_command(
        "atlas_recall", "where does Maya fly from", "--tenant", maya.tenant.slug, "--subject", "maya",
        "--k", "1", "--explain", "--expect", old["id"], stdout=out,
    )  # fmt: skip
    lines = out.getvalue().splitlines()
    assert lines[1].strip().startswith("why: ") and "fused " in lines[1]
    assert lines[2].startswith(f"expected {old['id']}: removed by filter: replaced by ")


def _position(hits: list[dict], memory_id: str) -> int | None:
    return next((h["rank"] for h in hits if h["id"] == memory_id), None)


def test_a_turn_that_ranks_lifts_the_fact_citing_it_into_its_place(maya) -> None:
    """Issue 34 point 1: for a request, the turn outranks the durable fact that cites it."""
    turn = episode_write(subject=maya, text="I'm vegetarian, so restaurant tips need to fit that")
    for text in ("My flat is near the river, ten minutes from the station", "I love long dinners with friends"):
        episode_write(subject=maya, text=text)
    fact = fact_write(subject=maya, text="Maya is vegetarian", fact_type="constraint", source_episodes=[turn["id"]])
    query = "Can you suggest a restaurant for dinner near home?"
    apart = memory_recall(subject=maya, query=query, k=10, fold_evidence=False, options=RecallOptions(floor=False)).hits
    assert _position(apart, turn["id"]) < _position(apart, fact["id"])  # the situation the issue reports
    lifted = memory_recall(subject=maya, query=query, k=10, explain=True, expect=[turn["id"]])
    assert _position(lifted.hits, fact["id"]) == _position(apart, turn["id"])  # the turn's place
    assert _position(lifted.hits, turn["id"]) is None
    hit = next(h for h in lifted.hits if h["id"] == fact["id"])
    assert [e["id"] for e in hit["evidence"]] == [turn["id"]]
    assert hit["explain"]["lifted_by"] == {
        "turn": turn["id"],
        "turn_fused_rank": hit["explain"]["lifted_by"]["turn_fused_rank"],
        "why": "lifted by its evidence",
    }
    assert hit["explain"]["folded"] == [turn["id"]]
    assert lifted.explain["expected"][0]["removed_by"] == "fold"


def test_a_turn_only_a_replaced_version_cites_gives_its_place_to_the_correction(maya) -> None:
    """Issue 34 point 2: after a harsh correction the old turn never stands above the current version."""
    said = episode_write(subject=maya, text="My cat is called Miso")
    episode_write(subject=maya, text="I need a new recipe for tonight, something quick")
    old = fact_write(subject=maya, text="Maya's cat is called Miso", fact_type="identity", source_episodes=[said["id"]])
    new = fact_write(
        subject=maya, text="Maya's cat is called Mochi", fact_type="identity", supersedes=[old["id"]],
        contradiction="harsh",
    )  # fmt: skip
    for query in ("what should I cook tonight for me and my cat?", "what is my cat called?"):
        apart = memory_recall(subject=maya, query=query, k=5, fold_evidence=False).hits
        assert _position(apart, said["id"]) is not None  # without folding the old turn still ranks
        result = memory_recall(subject=maya, query=query, k=5, explain=True, expect=[said["id"]])
        ids = [h["id"] for h in result.hits]
        assert said["id"] not in ids and new["id"] in ids, (query, ids)
        assert _position(result.hits, new["id"]) <= _position(apart, said["id"])
        why = result.explain["expected"][0]
        assert why["removed_by"] == "fold" and f"replaced version {old['id']}" in why["detail"]
    hit = next(h for h in result.hits if h["id"] == new["id"])
    assert hit["explain"]["past_evidence_folded"] == [said["id"]]
    assert "evidence" not in hit  # what the old turn said is not evidence of the correction


def test_with_include_superseded_the_replaced_version_and_its_turn_are_history(maya) -> None:
    said = episode_write(subject=maya, text="My cat is called Miso")
    old = fact_write(subject=maya, text="Maya's cat is called Miso", source_episodes=[said["id"]])
    fact_write(subject=maya, text="Maya's cat is called Mochi", supersedes=[old["id"]], contradiction="harsh")
    history = memory_recall(subject=maya, query="cat called Miso", k=5, include_superseded=True).hits
    assert {old["id"], said["id"]} <= {h["id"] for h in history}
