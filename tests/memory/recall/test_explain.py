"""explain and expect: why each hit ranked where it did, and what kept an expected memory out."""

from __future__ import annotations

import math

import pytest

from atlas_site.elastic.client import bootstrap_client
from memory.elastic import store
from memory.recall import RecallOptions, memory_recall
from memory.services.usage import memories_usage_record
from memory.services.writes import episode_write, fact_edit, fact_write

BM25_ONLY = dict(dense=False, multilingual=False, crosslingual=False, rerank=False)


@pytest.fixture(autouse=True)
def no_usage_recording(settings):
    settings.ATLAS_USAGE_RECORDING = "off"


def test_without_explain_the_answer_is_as_small_as_before(maya) -> None:
    fact_write(subject=maya, text="Maya keeps bees on her roof")
    result = memory_recall(subject=maya, query="bees", k=3)
    assert result.explain is None and not any("explain" in hit for hit in result.hits)


def test_each_hit_shows_its_legs_fusion_and_multipliers(maya) -> None:
    fact = fact_write(subject=maya, text="Maya keeps bees on her roof in Lisbon")
    said = episode_write(subject=maya, text="the bees swarmed again", at="2023-06-01T10:00:00Z")
    result = memory_recall(subject=maya, query="bees on the roof", k=5, explain=True)
    assert set(result.explain) == {"filters", "fusion", "turn_kind", "floor"}
    assert result.explain["turn_kind"] == "statement"  # "bees on the roof": no prior of its kind
    assert result.explain["filters"][1:] == [
        "types: episodic, semantic, procedural, catalog",
        "current facts only: replaced versions hidden",
    ]
    assert result.explain["fusion"]["method"] in ("zscore", "rrf")
    for hit in result.hits:
        why = hit["explain"]
        assert list(why["legs"]) == result.legs
        judged = [leg["contribution"] for leg in why["legs"].values() if leg["contribution"] is not None]
        assert math.isclose(sum(judged), why["fused_score"], abs_tol=1e-5)
        assert why["folded"] == []
    by_id = {hit["id"]: hit["explain"] for hit in result.hits}
    assert by_id[fact["id"]]["multipliers"] == {"use": 1.0}  # never used: no decay on last use, no boost
    assert 0 < by_id[said["id"]]["multipliers"]["decay"] < 1  # three years old, beyond the 180-day offset


def test_the_multipliers_are_the_ones_the_engine_applied(maya) -> None:
    """The BM25 leg's score is relevance × the ranking functions (queries.ranking_functions: score_mode and
    boost_mode multiply); with the functions off, the same search gives relevance alone, so the ratio of
    the two raw scores must be the product of the multipliers explain computes in the app."""
    old = episode_write(subject=maya, text="hedgehog in the garden again", at="2022-01-15T10:00:00Z")
    fact = fact_write(subject=maya, text="Maya feeds the hedgehog in the garden")
    memories_usage_record(targets=[(store.indices_of(("semantic",)), fact["id"])] * 30)
    bootstrap_client().indices.refresh(index=store.indices_of(("semantic",)))
    on = memory_recall(subject=maya, query="hedgehog garden", k=5, explain=True, options=RecallOptions(**BM25_ONLY))
    off = memory_recall(
        subject=maya,
        query="hedgehog garden",
        k=5,
        explain=True,
        options=RecallOptions(**BM25_ONLY, decay=False, use_boost=False, catalog_prior=False, outcome=False),
    )
    raw_off = {h["id"]: h["explain"]["legs"]["bm25"]["score"] for h in off.hits}
    for hit in on.hits:
        if hit["id"] not in (old["id"], fact["id"]):
            continue
        product = math.prod(hit["explain"]["multipliers"].values())
        assert math.isclose(hit["explain"]["legs"]["bm25"]["score"], raw_off[hit["id"]] * product, rel_tol=1e-4)
    assert {h["id"]: h["explain"]["multipliers"] for h in off.hits}[fact["id"]] == {}
    assert {h["id"]: h["explain"]["multipliers"] for h in on.hits}[fact["id"]]["use"] > 1


def test_expect_says_where_a_missing_memory_stood_and_what_removed_it(maya, tom) -> None:
    said = episode_write(subject=maya, text="I moved to Lisbon in March")
    old = fact_write(subject=maya, text="Maya lives in Porto", fact_type="identity")
    new = fact_edit(subject=maya, memory_id=old["id"], text="Maya lives in Lisbon")
    fact_write(subject=maya, text="Maya lives near the river", fact_type="identity", source_episodes=[said["id"]])
    fillers = [fact_write(subject=maya, text=f"Maya likes Lisbon tram line {n}") for n in range(6)]
    toms = fact_write(subject=tom, text="Tom lives in Lisbon")
    expect = [old["id"], said["id"], fillers[-1]["id"], "no-such-memory", toms["id"], new["id"]]
    result = memory_recall(subject=maya, query="where does Maya live in Lisbon", k=2, expect=expect)
    assert not any("explain" in hit for hit in result.hits)  # expect alone explains the expected only
    report = {entry["id"]: entry for entry in result.explain["expected"]}
    assert report[old["id"]]["removed_by"] == "filter"
    assert report[old["id"]]["detail"].startswith(f"replaced by {new['id']}")
    assert report[said["id"]]["removed_by"] in ("fold", "rank")
    if report[said["id"]]["removed_by"] == "fold":
        assert report[said["id"]]["detail"].startswith("folded under the fact ")
    assert report[fillers[-1]["id"]]["removed_by"] == "rank" and report[fillers[-1]["id"]]["fused_rank"] > 2
    assert set(report[fillers[-1]["id"]]["legs"]) == set(result.legs)
    assert report["no-such-memory"]["removed_by"] == "not found"
    assert report[toms["id"]] == {
        "id": toms["id"],
        "removed_by": "not found",
        "detail": "no memory with this id that this subject may read",
    }
    returned = [hit["id"] for hit in result.hits]
    if new["id"] in returned:
        assert report[new["id"]]["rank"] == returned.index(new["id"]) + 1


def test_expect_names_the_fact_type_and_the_days(maya) -> None:
    playbook_like = fact_write(subject=maya, text="Maya prefers aisle seats", fact_type="preference")
    early = fact_write(subject=maya, text="Maya's seat on the 2024 flight was 12C", at="2024-05-01T00:00:00Z")
    result = memory_recall(
        subject=maya,
        query="seat",
        k=3,
        fact_type="identity",
        since="2025-01-01T00:00:00Z",
        expect=[playbook_like["id"], early["id"]],
    )
    report = {entry["id"]: entry["detail"] for entry in result.explain["expected"]}
    assert report[playbook_like["id"]] == "its fact_type is preference, not identity"
    assert report[early["id"]] == "its fact_type is world, not identity"
    assert "fact_type: identity" in result.explain["filters"]
