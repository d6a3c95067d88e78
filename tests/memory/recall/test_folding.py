"""Evidence folding: a returned current fact carries the episodes it cites; they take no slot of their own."""

from __future__ import annotations

import pytest

from memory.recall import memory_recall
from memory.recall.folding import EVIDENCE_SHOWN, evidence_fold
from memory.services.writes import episode_write, fact_edit, fact_write


def _hit(memory_id: str, memory_type: str, **source) -> tuple[str, float, dict]:
    return (memory_id, 0.0, {"_id": memory_id, "_source": {"memory_type": memory_type, **source}})


def test_an_episode_a_returned_fact_cites_folds_and_the_next_memory_moves_up() -> None:
    ranked = [
        _hit("e1", "episodic"),
        _hit("e2", "episodic"),
        _hit("f1", "semantic", source_episodes=["e1", "e3"]),
        _hit("e3", "episodic"),
        _hit("f2", "semantic", source_episodes=["e4"]),
        _hit("e4", "episodic"),
        _hit("p1", "procedural"),
    ]
    top, folded = evidence_fold(ranked, 3)
    # e1 folds under f1 → f2 moves into the top 3 (e3 folds too) → e4 folds under f2 → nothing more changes.
    assert [memory_id for memory_id, _, _ in top] == ["e2", "f1", "f2"]
    assert folded == {"e1": "f1", "e3": "f1", "e4": "f2"}


def test_a_superseded_or_retracted_fact_folds_nothing_and_a_fact_beyond_k_folds_nothing() -> None:
    ranked = [
        _hit("e1", "episodic"),
        _hit("old", "semantic", source_episodes=["e1"], superseded_by=["new"]),
        _hit("wrong", "semantic", source_episodes=["e2"], retracted=True),
        _hit("e2", "episodic"),
        _hit("late", "semantic", source_episodes=["e3"]),
        _hit("e3", "episodic"),
    ]
    top, folded = evidence_fold(ranked, 4)
    assert [memory_id for memory_id, _, _ in top] == ["e1", "old", "wrong", "e2"]
    assert folded == {}


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
