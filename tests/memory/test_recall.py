"""Recall: same-turn visibility, the ranking functions' arithmetic inside Elasticsearch, fusion, validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from atlas_site.errors import NotFound, ValidationFailed
from memory import recall_constants as rc
from memory.elastic import queries, store
from memory.elastic.client import bootstrap_client
from memory.elastic.indices import alias_name
from memory.scope import SubjectScope
from memory.selectors import RecallOptions, _fuse, _merge_indices, _spread_near_duplicates, bm25_weight, memory_recall
from memory.services.writes import episode_write, fact_write, playbook_outcome_record, playbook_write


@pytest.fixture(autouse=True)
def no_usage_recording(settings):
    settings.ATLAS_USAGE_RECORDING = "off"


def test_a_write_is_recalled_in_the_same_turn(maya) -> None:
    episode_write(subject=maya, text="My flight TP1947 to Madrid leaves at 07:40")
    hits = memory_recall(subject=maya, query="TP1947", k=3).hits
    assert hits[0]["text"] == "My flight TP1947 to Madrid leaves at 07:40"
    assert hits[0]["rank"] == 1 and hits[0]["type"] == "episodic"
    assert set(hits[0]) >= {"id", "type", "text", "score", "rank", "created_at", "timestamp", "role"}


def _bm25_scores(subject, text: str, **flags) -> dict[str, float]:
    scope = SubjectScope.of(subject)
    functions = queries.ranking_functions(origin=datetime.now(UTC).isoformat(), **flags)
    types = ("episodic", "semantic", "procedural", "catalog")
    body = queries.bm25_leg(memory_types=types, text=text, filters=scope.read_filters(), functions=functions, size=20)
    response = store.memories_search(scope.reader(), memory_types=types, body=body)
    return {h["_id"]: h["_score"] for h in response["hits"]["hits"]}


ALL_ON = {"decay": True, "use_boost": True, "catalog_prior": True, "outcome": True}
ALL_OFF = {"decay": False, "use_boost": False, "catalog_prior": False, "outcome": False}


def test_decay_boost_prior_and_outcome_match_hand_computed_values(maya) -> None:
    now = datetime.now(UTC)
    recent = episode_write(subject=maya, text="zebra crossing", at=(now - timedelta(days=10)).isoformat())
    old = episode_write(subject=maya, text="zebra crossing", at=(now - timedelta(days=1000)).isoformat())
    used = fact_write(subject=maya, text="zebra crossing")
    from memory.elastic.client import bootstrap_client

    # As if recall had used the fact 99 times (the service bumps one use at a time).
    bootstrap_client().update(index=store.indices_of(("semantic",)), id=used["id"], doc={"use_count": 99}, refresh=True)
    playbook = playbook_write(
        subject=maya, name="zebra crossing", trigger_text="zebra crossing", steps=["look"], text="zebra crossing"
    )
    for _ in range(3):
        playbook_outcome_record(subject=maya, playbook_id=playbook["id"], success=True)
    playbook_outcome_record(subject=maya, playbook_id=playbook["id"], success=False)
    on = _bm25_scores(maya, "zebra crossing", **ALL_ON)
    off = _bm25_scores(maya, "zebra crossing", **ALL_OFF)
    ratios = {key: on[key] / off[key] for key in off}
    assert ratios[recent["id"]] == pytest.approx(1.0, abs=1e-4)  # within the 180-day offset
    assert ratios[old["id"]] == pytest.approx(rc.decay_multiplier(1000), abs=1e-4)
    assert ratios[used["id"]] == pytest.approx(rc.use_boost(99), abs=1e-4)  # last used just now: no decay
    assert ratios[playbook["id"]] == pytest.approx(rc.outcome_multiplier(3, 1) * rc.use_boost(0), abs=1e-4)


def test_catalog_prior(maya) -> None:
    from memory.services.documents import catalog_prepare, embed_into

    scope = SubjectScope.of(maya)
    entry = catalog_prepare(tenant_id=scope.tenant_id, title="Quokka", text="quokka habitat guide")
    embed_into([entry])
    store.memory_index(
        scope.writer(), memory_type="catalog", memory_id=entry.memory_id, source=entry.source, refresh=True
    )
    on = _bm25_scores(maya, "quokka habitat", **ALL_ON)
    off = _bm25_scores(maya, "quokka habitat", **ALL_OFF)
    assert on[entry.memory_id] / off[entry.memory_id] == pytest.approx(rc.CATALOG_PRIOR, abs=1e-4)


def test_fusion_is_reciprocal_rank_with_constant_30() -> None:
    a, b, c = ({"_id": i, "_source": {}} for i in "abc")
    fused = _fuse([[a, b, c], [b, c]])
    assert [(i, round(s, 6)) for i, s, _ in fused] == [
        ("b", round(1 / 32 + 1 / 31, 6)),
        ("c", round(1 / 33 + 1 / 32, 6)),
        ("a", round(1 / 31, 6)),
    ]


def test_both_legs_find_what_each_is_good_at(maya) -> None:
    episode_write(subject=maya, text="The router shows error E1127 after the firmware update")
    episode_write(subject=maya, text="I adore long bicycle rides along the coast on weekends")
    exact = memory_recall(subject=maya, query="E1127", k=1, options=RecallOptions(dense=False)).hits
    assert exact[0]["text"].startswith("The router shows error E1127")
    meaning = memory_recall(subject=maya, query="cycling by the sea", k=1, options=RecallOptions(bm25=False)).hits
    assert meaning[0]["text"].startswith("I adore long bicycle rides")


def test_the_multilingual_leg_finds_a_memory_written_in_another_language(maya) -> None:
    """all-MiniLM-L6-v2 is English-only: an English question about a Spanish memory ranks it below
    English look-alikes. multilingual-e5's leg, searched alone, puts it first."""
    spanish = "Mi hermana Marta se casa el 14 de junio en Valencia, en la Albufera."
    for text in (
        spanish,
        "We booked the hotel in Valencia for the conference in June.",
        "My sister lent me her car for the weekend.",
        "The 14th of June is the deadline for the tax return.",
        "Married couples get a discount at the climbing gym.",
        "I need to buy a present for my colleague's birthday party.",
    ):
        episode_write(subject=maya, text=text)

    def rank(options: RecallOptions) -> int:
        hits = memory_recall(subject=maya, query="When is her sister getting married?", k=6, options=options).hits
        return [h["text"] for h in hits].index(spanish) + 1

    assert rank(RecallOptions(bm25=False, dense=False)) == 1
    assert rank(RecallOptions(bm25=False, multilingual=False)) == 4


def test_the_multilingual_leg_ranks_by_similarity_alone(maya) -> None:
    """No decay or priors on the multilingual leg: e5's cosines sit in a narrow band, where a factor of
    0.2 for an old turn would outweigh any difference in relevance."""
    old = episode_write(subject=maya, at="2019-01-10T10:00:00Z", text="Mi hermana Marta se casa en junio en Valencia.")
    episode_write(subject=maya, text="We booked the hotel in Valencia for the conference in June.")
    assert rc.decay_multiplier(2790) < 0.25  # what the old turn would be multiplied by
    hits = memory_recall(
        subject=maya, query="When is her sister getting married?", k=2, options=RecallOptions(bm25=False, dense=False)
    ).hits
    assert [h["id"] for h in hits][0] == old["id"]


def test_without_a_multilingual_model_nothing_is_stored_or_searched_for_it(maya, settings) -> None:
    settings.ATLAS_MULTILINGUAL_EMBEDDING_MODEL = ""
    written = episode_write(subject=maya, text="Mi hermana Marta se casa en junio")
    source = bootstrap_client().get(index=alias_name("episodic"), id=written["id"])["_source"]
    assert source["embedding_model"] == "all-MiniLM-L6-v2-int8-onnx"
    assert "embedding_multilingual" not in source
    assert "embedding_multilingual_model" not in source
    with pytest.raises(ValidationFailed) as info:
        memory_recall(subject=maya, query="wedding", options=RecallOptions(bm25=False, dense=False))
    assert info.value.message == "recall needs at least one of the BM25 and dense legs"


def test_types_selection_and_timings(maya) -> None:
    episode_write(subject=maya, text="pineapple pizza is great")
    fact_write(subject=maya, text="Maya likes pineapple pizza")
    result = memory_recall(subject=maya, query="pineapple pizza", k=5, memory_types=["semantic"])
    assert [h["type"] for h in result.hits] == ["semantic"]
    assert set(result.timings_ms) == {"embed", "search", "fusion", "total"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "query must be a non-empty string"),
        ({"query": None}, "query must be a non-empty string"),
        ({"query": "x" * 2001}, "query is longer than 2000 characters"),
        ({"query": "ok", "k": 0}, "k must be an integer from 1 to 50"),
        ({"query": "ok", "k": "5"}, "k must be an integer from 1 to 50"),
        ({"query": "ok", "memory_types": ["dreams"]}, "unknown memory type(s)"),
        ({"query": "ok", "as_of": "last tuesday"}, "as_of must be an ISO 8601 date-time"),
    ],
)
def test_bad_recall_input_is_refused(maya, kwargs, message) -> None:
    with pytest.raises(ValidationFailed) as info:
        memory_recall(subject=maya, **kwargs)
    assert info.value.message.startswith(message)


def test_deactivated_subject_cannot_recall(maya) -> None:
    from tenants.services import subject_deactivate

    subject_deactivate(subject=maya, actor="test")
    maya.refresh_from_db()
    with pytest.raises(NotFound):
        memory_recall(subject=maya, query="anything")


def test_per_index_knn_hits_merge_by_score_and_cut_to_the_window() -> None:
    def response(*scored):
        return {"hits": {"hits": [{"_id": i, "_score": s} for i, s in scored]}}

    merged = _merge_indices([response(("e1", 0.9), ("e2", 0.5)), response(("f1", 0.7), ("f2", 0.5)), response()], 3)
    assert [h["_id"] for h in merged] == ["e1", "f1", "e2"]  # a tie keeps the earlier index first


@pytest.mark.parametrize(
    ("query", "literal"),
    [
        ("what flight is Maya on, JL44?", True),
        ("firmware v2.3.1 keeps crashing", True),
        ("RT-AX88U reset", True),
        ("ERR_TIMEOUT again", True),
        ("my VPN is down", True),
        ("is there anything he can't eat?", False),
        ("my co-worker's e-mail", False),
        ("where did we move last spring", False),
    ],
)
def test_bm25_keeps_its_full_weight_only_for_literal_queries(settings, query: str, literal: bool) -> None:
    settings.ATLAS_RRF_WEIGHT_BM25 = 1.0
    settings.ATLAS_RRF_WEIGHT_BM25_NATURAL = 0.67
    assert bm25_weight(query) == (1.0 if literal else 0.67)


def test_near_duplicates_move_below_the_distinct_memories() -> None:
    def item(memory_id: str, text: str):
        return (memory_id, 0.0, {"_source": {"text": text}})

    fused = [
        item("a", "Maya's router reboots every night at 3am"),
        item("b", "Maya's router reboots every night at 3 am"),
        item("c", "Maya prefers aisle seats on long flights"),
        item("d", "the router reboots every night at 3am"),
    ]
    assert [i[0] for i in _spread_near_duplicates(fused, 0.6)] == ["a", "c", "b", "d"]
    assert [i[0] for i in _spread_near_duplicates(fused, 0.95)] == ["a", "b", "c", "d"]
    assert _spread_near_duplicates(fused, 0.0) is fused
