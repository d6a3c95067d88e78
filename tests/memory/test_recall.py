"""Recall: same-turn visibility, the ranking functions' arithmetic inside Elasticsearch, fusion, validation."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from atlas_site.elastic.client import bootstrap_client
from atlas_site.errors import NotFound, ValidationFailed
from memory import recall_constants as rc
from memory.elastic import queries, store
from memory.elastic.indices import alias_name
from memory.recall import Leg, RecallOptions, fuse, memory_recall
from memory.recall.fusion import bm25_weight, leg_weight, merge_indices, near_duplicates_spread
from memory.scope import SubjectScope
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
    from atlas_site.elastic.client import bootstrap_client

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
    from memory.services.prepare import catalog_prepare, embed_into

    scope = SubjectScope.of(maya)
    entry = catalog_prepare(tenant_id=scope.tenant_id, title="Quokka", text="quokka habitat guide")
    embed_into([entry])
    store.memory_index(
        scope.writer(), memory_type="catalog", memory_id=entry.memory_id, source=entry.source, refresh=True
    )
    on = _bm25_scores(maya, "quokka habitat", **ALL_ON)
    off = _bm25_scores(maya, "quokka habitat", **ALL_OFF)
    assert on[entry.memory_id] / off[entry.memory_id] == pytest.approx(rc.CATALOG_PRIOR, abs=1e-4)


def _hit(memory_id: str, score: float = 0.0, text: str = "") -> dict:
    return {"_id": memory_id, "_score": score, "_source": {"text": text}}


def _ids(fused) -> list[str]:
    return [memory_id for memory_id, _, _ in fused]


def test_rank_fusion_is_reciprocal_rank_with_constant_30() -> None:
    a, b, c = (_hit(i) for i in "abc")
    fused = fuse([Leg([a, b, c], 1.0), Leg([b, c], 1.0)], method="rrf", language_aware=False)
    assert [(i, round(s, 6)) for i, s, _ in fused] == [
        ("b", round(1 / 32 + 1 / 31, 6)),
        ("c", round(1 / 33 + 1 / 32, 6)),
        ("a", round(1 / 31, 6)),
    ]


def test_score_fusion_sums_weighted_standardised_scores() -> None:
    # Leg one: scores 3, 2, 1 → z = +1.2247, 0, −1.2247. Leg two (weight 2): 0.9, 0.5 → z = +1, −1; it
    # did not return "a", which therefore counts as its lowest z (−1).
    legs = [Leg([_hit("a", 3.0), _hit("b", 2.0), _hit("c", 1.0)], 1.0), Leg([_hit("c", 0.9), _hit("b", 0.5)], 2.0)]
    fused = fuse(legs, method="zscore", language_aware=False)
    z = 1.5**0.5
    assert [(i, round(s, 6)) for i, s, _ in fused] == [
        ("c", round(-z + 2.0, 6)),
        ("a", round(z - 2.0, 6)),
        ("b", round(0.0 - 2.0, 6)),
    ]


def test_score_fusion_keeps_the_margin_rank_fusion_throws_away() -> None:
    """One leg is sure (its first memory far ahead), the other barely prefers another one: RRF sees a
    tie and breaks it by id, score fusion follows the sure leg either way round."""

    def leg(*scored: tuple[str, float]) -> Leg:
        return Leg([_hit(i, s) for i, s in scored], 1.0)

    unsure = leg(("x", 0.80), ("y", 0.79), ("f1", 0.2), ("f2", 0.1))
    sure_of_y = leg(("y", 9.0), ("x", 1.0), ("f1", 0.9), ("f2", 0.8))
    assert _ids(fuse([unsure, sure_of_y], method="rrf", language_aware=False))[0] == "x"  # tie, id order
    assert _ids(fuse([unsure, sure_of_y], method="zscore", language_aware=False))[0] == "y"


def test_a_leg_with_equal_scores_or_no_hits_adds_nothing_to_the_order() -> None:
    legs = [Leg([_hit("a", 1.0), _hit("b", 2.0)], 1.0), Leg([_hit("a", 5.0), _hit("b", 5.0)], 1.0), Leg([], 1.0)]
    assert _ids(fuse(legs, method="zscore", language_aware=False)) == ["b", "a"]


@pytest.mark.parametrize("method", ["zscore", "rrf"])
def test_a_memory_the_english_legs_cannot_read_is_judged_by_the_multilingual_leg(method: str) -> None:
    """The Spanish memory is the multilingual leg's best hit but absent from both English legs: without
    language-aware fusion the English legs' favourite outranks it; with it, it ranks first."""
    spanish = _hit("es", 0.95, "Lucía es alérgica al kiwi y al látex, por eso usa guantes")
    english = [_hit(f"en{n}", 0.5 - n / 10, f"Lucia went to the market on day {n}") for n in range(3)]
    legs = [
        Leg([_hit(h["_id"], 10.0 - n, h["_source"]["text"]) for n, h in enumerate(english)], 0.5),
        Leg([_hit(h["_id"], 0.6 - n / 10, h["_source"]["text"]) for n, h in enumerate(english)], 2.0),
        Leg([spanish, *english], 2.0, any_language=True),
    ]
    assert _ids(fuse(legs, method=method, language_aware=False))[0] == "en0"
    aware = fuse(legs, method=method, language_aware=True)
    assert _ids(aware)[0] == "es"
    contributions = {"zscore": None, "rrf": 2.0 / 31}[method]
    if contributions is not None:  # RRF: the leg's share, scaled from its weight 2 to the whole 4.5
        assert aware[0][1] == pytest.approx(contributions * 4.5 / 2.0)
    # English memories keep every leg's vote: their order is the one without language awareness.
    assert _ids(aware)[1:] == [i for i in _ids(fuse(legs, method=method, language_aware=False)) if i != "es"]


@pytest.mark.parametrize("method", ["zscore", "rrf"])
def test_each_fusion_method_has_its_own_leg_weights(settings, method: str) -> None:
    settings.ATLAS_ZSCORE_WEIGHT_BM25, settings.ATLAS_ZSCORE_WEIGHT_DENSE = 0.25, 1.5
    settings.ATLAS_ZSCORE_WEIGHT_MULTILINGUAL, settings.ATLAS_ZSCORE_WEIGHT_CROSSLINGUAL = 2.5, 0.75
    settings.ATLAS_RRF_WEIGHT_BM25 = settings.ATLAS_RRF_WEIGHT_BM25_NATURAL = 1.0
    settings.ATLAS_RRF_WEIGHT_DENSE, settings.ATLAS_RRF_WEIGHT_MULTILINGUAL = 2.0, 3.0
    settings.ATLAS_RRF_WEIGHT_CROSSLINGUAL = 4.0
    legs = ("bm25", "dense", "multilingual", "crosslingual")
    weights = [leg_weight(leg, "where did we move", method=method) for leg in legs]
    assert weights == ([0.25, 1.5, 2.5, 0.75] if method == "zscore" else [1.0, 2.0, 3.0, 4.0])


def test_the_crosslingual_leg_judges_only_where_languages_may_differ() -> None:
    """RRF arithmetic by hand. Legs: English BM25 (weight 1), multilingual (1), cross-lingual (2, across
    languages only). An English memory under an English question is judged by the first two; a Spanish
    memory, or any memory under a Spanish question, by the two that read every language, scaled from
    their weight 3 to the English judges' 2; without language awareness every leg counts."""
    en = _hit("en", 1.0, "Lucia went to the market on Saturday")
    es = _hit("es", 1.0, "Lucía es alérgica al kiwi y al látex, por eso usa guantes")
    legs = [
        Leg([en], 1.0),
        Leg([en, es], 1.0, any_language=True),
        Leg([es, en], 2.0, any_language=True, across_languages_only=True),
    ]

    def scores(**options) -> dict[str, float]:
        return {memory_id: round(score, 6) for memory_id, score, _ in fuse(legs, method="rrf", **options)}

    english_question = scores(language_aware=True)
    assert english_question == {
        "en": round(1 / 31 + 1 / 31, 6),
        "es": round((1 / 32 + 2 / 31) * 2 / 3, 6),
    }
    spanish_question = scores(language_aware=True, question_reads_english=False)
    assert spanish_question == {
        "en": round((1 / 31 + 2 / 32) * 2 / 3, 6),
        "es": round((1 / 32 + 2 / 31) * 2 / 3, 6),
    }
    assert scores(language_aware=False) == {
        "en": round(1 / 31 + 1 / 31 + 2 / 32, 6),
        "es": round(1 / 32 + 2 / 31, 6),
    }
    # Weights of 0 switch legs off (ATLAS_ZSCORE_WEIGHT_*=0): nothing to scale, nothing divided by zero.
    legs[0], legs[1] = Leg([en], 0.0), Leg([en, es], 0.0, any_language=True)
    assert scores(language_aware=True) == {"en": 0.0, "es": 0.0}


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ATLAS_FUSION", "borda", "ATLAS_FUSION must be 'zscore' or 'rrf', not 'borda'"),
        ("ATLAS_REPLY_INHERITANCE", "1.5", "ATLAS_REPLY_INHERITANCE must be between 0 and 1, not 1.5"),
        ("ATLAS_REPLY_INHERITANCE", "-0.1", "ATLAS_REPLY_INHERITANCE must be between 0 and 1, not -0.1"),
    ],
)
def test_a_fusion_setting_out_of_range_stops_the_settings_from_loading(name: str, value: str, message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import atlas_site.settings"],
        env={**os.environ, name: value},
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert f"ImproperlyConfigured: {message}" in result.stderr


def test_both_legs_find_what_each_is_good_at(maya) -> None:
    episode_write(subject=maya, text="The router shows error E1127 after the firmware update")
    episode_write(subject=maya, text="I adore long bicycle rides along the coast on weekends")
    exact = memory_recall(subject=maya, query="E1127", k=1, options=RecallOptions(dense=False)).hits
    assert exact[0]["text"].startswith("The router shows error E1127")
    meaning = memory_recall(subject=maya, query="cycling by the sea", k=1, options=RecallOptions(bm25=False)).hits
    assert meaning[0]["text"].startswith("I adore long bicycle rides")


def test_the_multilingual_leg_finds_a_memory_written_in_another_language(maya) -> None:
    """all-mpnet-base-v2 is English-only: an English question about a Spanish memory ranks it below
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

    # One leg at a time (a "when" question would also have the time leg: tests/memory/temporal).
    assert rank(RecallOptions(bm25=False, dense=False, crosslingual=False, time=False)) == 1
    # (5 with 8-bit weights; 4 with the 7-bit graph that runs right on every x86 CPU, memory/inference/mpnet.py)
    assert rank(RecallOptions(bm25=False, multilingual=False, crosslingual=False, time=False)) == 4


def test_the_crosslingual_leg_matches_a_question_and_a_memory_in_different_languages(maya) -> None:
    """A Spanish question about a memory written in English, and an English question about a Spanish one,
    among look-alikes in both languages (the same words in the question's language): the cross-lingual
    leg lifts both in the default recall, and alone ranks the Spanish memory first."""
    english = "My sister's wedding is on the 14th of June, in a small church near the lake."
    spanish = "Mi hermano trabaja de enfermero en el turno de noche del hospital."
    for text in (
        english,
        spanish,
        "Mi hermana se ha comprado un coche nuevo, un Seat rojo.",
        "El 14 de junio es la fecha límite para la declaración de la renta.",
        "My brother lent me his bike for the weekend.",
        "The hospital car park charges four euros an hour.",
        "Fuimos al lago el domingo, hacía mucho calor.",
    ):
        episode_write(subject=maya, text=text)

    def rank(query: str, target: str, options: RecallOptions) -> int:
        hits = memory_recall(subject=maya, query=query, k=7, options=options).hits
        return [h["text"] for h in hits].index(target) + 1

    spanish_question = "¿Cuándo se casa su hermana?"
    english_question = "What does her brother do for a living?"
    assert rank(english_question, spanish, RecallOptions(bm25=False, dense=False, multilingual=False)) == 1
    with_leg = (rank(spanish_question, english, RecallOptions()), rank(english_question, spanish, RecallOptions()))
    without = RecallOptions(crosslingual=False)
    assert with_leg == (3, 1)
    assert (rank(spanish_question, english, without), rank(english_question, spanish, without)) == (4, 2)


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


EXTRA_MODELS = {
    "ATLAS_MULTILINGUAL_EMBEDDING_MODEL": "embedding_multilingual",
    "ATLAS_CROSSLINGUAL_EMBEDDING_MODEL": "embedding_crosslingual",
}


@pytest.mark.parametrize("setting", sorted(EXTRA_MODELS))
def test_without_an_extra_model_nothing_is_stored_or_searched_for_it(maya, settings, setting) -> None:
    setattr(settings, setting, "")
    written = episode_write(subject=maya, text="Mi hermana Marta se casa en junio")
    source = bootstrap_client().get(index=alias_name("episodic"), id=written["id"])["_source"]
    assert source["embedding_model"] == "all-mpnet-base-v2-int8"
    for other_setting, field in EXTRA_MODELS.items():
        stored = other_setting != setting
        assert (field in source, f"{field}_model" in source) == (stored, stored)
    for other_setting in EXTRA_MODELS:
        setattr(settings, other_setting, "")
    with pytest.raises(ValidationFailed) as info:
        memory_recall(subject=maya, query="wedding", options=RecallOptions(bm25=False, dense=False))
    assert info.value.message == "recall needs at least one leg (BM25, dense, multilingual, cross-lingual)"


ALL_LEGS = ["bm25", "dense", "multilingual", "crosslingual"]
WITHOUT_CROSSLINGUAL = ["bm25", "dense", "multilingual"]


def test_the_crosslingual_leg_is_searched_only_where_it_could_judge(maya, tenant, settings) -> None:
    """An English question over English memories leaves it out (it would judge nothing); a question in
    another language, a memory in another language — the subject's or in the catalog, when the catalog
    is searched — or a flag not known yet bring it back."""
    settings.ATLAS_BM25_LEG = "always"  # the legs lists below name BM25 for every question
    from tenants.models import MemorySubject, Tenant

    episode_write(subject=maya, text="My brother works night shifts as a nurse at the hospital.")

    def legs(query: str, **kwargs) -> list[str]:
        return memory_recall(subject=maya, query=query, k=3, **kwargs).legs

    assert legs("What does her brother do?") == WITHOUT_CROSSLINGUAL
    assert legs("¿Qué hace su hermano por las noches?") == ALL_LEGS
    Tenant.objects.filter(pk=tenant.pk).update(non_english_catalog=True)
    assert legs("What does her brother do?") == ALL_LEGS
    assert legs("What does her brother do?", memory_types=["episodic"]) == WITHOUT_CROSSLINGUAL
    Tenant.objects.filter(pk=tenant.pk).update(non_english_catalog=False)
    MemorySubject.objects.filter(pk=maya.pk).update(non_english_memories=None)
    assert legs("What does her brother do?") == ALL_LEGS
    assert legs("What does her brother do?", memory_types=["catalog"]) == WITHOUT_CROSSLINGUAL
    MemorySubject.objects.filter(pk=maya.pk).update(non_english_memories=False)
    episode_write(subject=maya, text="Mi hermano trabaja de enfermero en el turno de noche.")
    assert legs("What does her brother do?") == ALL_LEGS  # the write set the flag; maya's row is not reread


def test_the_crosslingual_leg_searches_only_the_types_it_could_judge(maya, tenant, settings, monkeypatch) -> None:
    """For an English question it judges only memories that do not read as English: with the subject's
    own memories all English and such an entry in the catalog, its search names the catalog alone (and the
    other way round) — fewer documents for the engine to scan, the same judgements (fuse)."""
    import json as _json

    from memory.elastic import store
    from tenants.models import MemorySubject, Tenant

    settings.ATLAS_BM25_LEG = "always"
    episode_write(subject=maya, text="My brother works night shifts as a nurse at the hospital.")
    sent: list[tuple[str, ...]] = []
    real = store.memories_msearch

    def recording(reader, *, searches, **kwargs):
        sent.extend(types for types, body in searches if '"field": "embedding_crosslingual"' in _json.dumps(body))
        return real(reader, searches=searches, **kwargs)

    monkeypatch.setattr(store, "memories_msearch", recording)

    def crosslingual_searches(**kwargs) -> list[tuple[str, ...]]:
        sent.clear()
        memory_recall(subject=maya, query="What does her brother do?", k=3, **kwargs)
        return list(sent)

    MemorySubject.objects.filter(pk=maya.pk).update(non_english_memories=False)
    Tenant.objects.filter(pk=tenant.pk).update(non_english_catalog=True)
    assert crosslingual_searches() == [("catalog",)]
    assert crosslingual_searches(include_superseded=True) == [("catalog",)]
    MemorySubject.objects.filter(pk=maya.pk).update(non_english_memories=None)  # not known: searched
    Tenant.objects.filter(pk=tenant.pk).update(non_english_catalog=False)
    assert crosslingual_searches() == [("episodic", "semantic", "procedural")]
    assert crosslingual_searches(include_superseded=True) == [("episodic", "semantic", "procedural", "archive")]
    assert crosslingual_searches(memory_types=["catalog"]) == []
    # A question in another language may be judged against every memory: the leg searches them all.
    sent.clear()
    memory_recall(subject=maya, query="¿Qué hace su hermano por las noches?", k=3)
    assert sent == [("episodic", "semantic", "procedural", "catalog")]


def test_the_crosslingual_leg_goes_with_the_first_msearch_and_changes_nothing(maya, settings, monkeypatch) -> None:
    """Its query vector is ready at once, so its search travels with BM25's while the other two models
    embed the question; the hits, ranks, scores and legs are those of one msearch carrying every leg."""
    settings.ATLAS_RECALL_FLOOR = 0.0  # every candidate compared, not only those clearing the floor
    import re as _re

    from memory.elastic import store

    settings.ATLAS_BM25_LEG = "always"
    for text in (
        "My brother works night shifts as a nurse at the hospital.",
        "Mi hermano trabaja de enfermero en el turno de noche.",
        "I lent my bike to my brother for the weekend.",
    ):
        episode_write(subject=maya, text=text)
    calls: list[list[str]] = []
    real = store.memories_msearch

    def recording(reader, *, searches, **kwargs):
        if kwargs.get("what") != "find the facts citing the ranked turns":  # the legs' searches only
            fields = [_re.search(r"'knn': \{'field': '(\w+)'", repr(body)) for _types, body in searches]
            calls.append([match.group(1) if match else "bm25" for match in fields])
        return real(reader, searches=searches, **kwargs)

    monkeypatch.setattr(store, "memories_msearch", recording)
    at = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    split = memory_recall(subject=maya, query="What does her brother do at night?", k=3, as_of=at)
    assert calls == [["bm25", "embedding_crosslingual"], ["embedding", "embedding_multilingual"]]
    settings.ATLAS_RECALL_ONE_MSEARCH = True
    calls.clear()
    together = memory_recall(subject=maya, query="What does her brother do at night?", k=3, as_of=at)
    assert calls == [["bm25", "embedding", "embedding_multilingual", "embedding_crosslingual"]]
    assert split.legs == together.legs == ALL_LEGS
    assert [(h["id"], h["rank"], h["score"]) for h in split.hits] == [
        (h["id"], h["rank"], h["score"]) for h in together.hits
    ]
    assert len(split.hits) == 3


def test_the_crosslingual_leg_is_kept_where_fusion_would_let_it_judge_everything(maya, settings) -> None:
    settings.ATLAS_BM25_LEG = "always"  # the legs lists below name BM25 for every question
    episode_write(subject=maya, text="My brother works night shifts as a nurse at the hospital.")
    only_any_language = RecallOptions(bm25=False, dense=False)
    assert memory_recall(subject=maya, query="brother", options=only_any_language).legs == [
        "multilingual",
        "crosslingual",
    ]
    settings.ATLAS_LANGUAGE_AWARE_FUSION = False
    assert memory_recall(subject=maya, query="brother").legs == ALL_LEGS


def test_leaving_the_crosslingual_leg_out_changes_no_hit_and_no_score(maya, settings) -> None:
    """Where it is left out it would have judged nothing: the same hits, ranks and scores as with the
    leg searched (forced by a flag not known). as_of pins the decay's origin for both recalls."""
    settings.ATLAS_RECALL_FLOOR = 0.0  # every candidate compared, not only those clearing the floor
    settings.ATLAS_BM25_LEG = "always"  # the legs lists below name BM25 for every question
    from tenants.models import MemorySubject

    for text in (
        "My brother works night shifts as a nurse at the hospital.",
        "The hospital car park charges four euros an hour.",
        "My sister's wedding is on the 14th of June, near the lake.",
        "I lent my bike to my brother for the weekend.",
        "Night shifts make it hard to see friends.",
    ):
        episode_write(subject=maya, text=text)
    at = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    left_out = memory_recall(subject=maya, query="What does her brother do at night?", k=5, as_of=at)
    MemorySubject.objects.filter(pk=maya.pk).update(non_english_memories=None)
    searched = memory_recall(subject=maya, query="What does her brother do at night?", k=5, as_of=at)
    assert (left_out.legs, searched.legs) == (WITHOUT_CROSSLINGUAL, ALL_LEGS)
    assert [(h["id"], h["rank"], h["score"]) for h in left_out.hits] == [
        (h["id"], h["rank"], h["score"]) for h in searched.hits
    ]
    assert len(left_out.hits) == 5


def test_types_selection_and_timings(maya) -> None:
    episode_write(subject=maya, text="pineapple pizza is great")
    fact_write(subject=maya, text="Maya likes pineapple pizza")
    result = memory_recall(subject=maya, query="pineapple pizza", k=5, memory_types=["semantic"])
    assert [h["type"] for h in result.hits] == ["semantic"]
    assert set(result.timings_ms) == {"embed", "search", "fusion", "folding", "evidence", "total"}


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


LEGS_ALONE = {
    "bm25": RecallOptions(dense=False, multilingual=False, crosslingual=False),
    "knn": RecallOptions(bm25=False),
}


@pytest.mark.parametrize("leg", sorted(LEGS_ALONE))
def test_fact_type_and_created_range_filter_every_leg(maya, leg: str) -> None:
    said = episode_write(subject=maya, text="I booked seats on the night train", at="2026-03-10T09:00:00Z")
    window = fact_write(
        subject=maya, text="Prefers window seats on the night train", fact_type="preference", at="2026-03-10T09:00:00Z"
    )
    late = fact_write(
        subject=maya, text="Never books the night train after 23:00", fact_type="constraint", at="2026-03-31T23:59:59Z"
    )
    aisle = fact_write(
        subject=maya, text="Prefers aisle seats on the night train", fact_type="preference", at="2026-04-01T00:00:00Z"
    )

    def recalled(**filters) -> set[str]:
        result = memory_recall(subject=maya, query="night train seats", k=10, options=LEGS_ALONE[leg], **filters)
        return {hit["id"] for hit in result.hits}

    assert recalled() == {said["id"], window["id"], late["id"], aisle["id"]}
    assert recalled(fact_type="preference") == {window["id"], aisle["id"]}  # no episode: facts only
    march = {"since": "2026-03-01T00:00:00Z", "until": "2026-04-01T00:00:00Z"}  # until is exclusive
    assert recalled(**march) == {said["id"], window["id"], late["id"]}
    assert recalled(fact_type="preference", **march) == {window["id"]}
    assert recalled(fact_type="identity") == set()


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"fact_type": "gossip"}, "fact_type", "fact_type must be one of preference, identity, constraint, world"),
        ({"fact_type": ["preference"]}, "fact_type", "fact_type must be one of"),
        ({"fact_type": "preference", "memory_types": ["episodic"]}, "fact_type", "fact_type recalls facts only"),
        ({"since": "last week"}, "since", "since must be an ISO 8601 date-time"),
        ({"until": 20260101}, "until", "until must be an ISO 8601 date-time"),
        ({"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "since", "since is after until"),
    ],
)
def test_bad_recall_filters_are_refused_naming_the_field(maya, kwargs, field: str, message: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        memory_recall(subject=maya, query="night train", **kwargs)
    assert (info.value.field, info.value.message[: len(message)]) == (field, message)


def test_deactivated_subject_cannot_recall(maya) -> None:
    from tenants.services import subject_deactivate

    subject_deactivate(subject=maya, actor="test")
    maya.refresh_from_db()
    with pytest.raises(NotFound):
        memory_recall(subject=maya, query="anything")


def test_per_index_knn_hits_merge_by_score_and_cut_to_the_window() -> None:
    def response(*scored):
        return {"hits": {"hits": [{"_id": i, "_score": s} for i, s in scored]}}

    merged = merge_indices([response(("e1", 0.9), ("e2", 0.5)), response(("f1", 0.7), ("f2", 0.5)), response()], 3)
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
    assert [i[0] for i in near_duplicates_spread(fused, 0.6)] == ["a", "c", "b", "d"]
    assert [i[0] for i in near_duplicates_spread(fused, 0.95)] == ["a", "b", "c", "d"]
    assert near_duplicates_spread(fused, 0.0) is fused


@pytest.mark.parametrize("plain", [False, True])
def test_the_dense_leg_ranks_by_plain_similarity_when_set(maya, settings, plain: bool) -> None:
    """Two turns with the same words are equally similar to any query: with the ranking functions the
    dense leg puts the recent one ahead (decay); by plain similarity it cannot tell them apart."""
    settings.ATLAS_DENSE_PLAIN_SIMILARITY = plain
    now = datetime.now(UTC)
    recent = episode_write(
        subject=maya, text="We repainted the hallway green", at=(now - timedelta(days=3)).isoformat()
    )
    old = episode_write(subject=maya, text="We repainted the hallway green", at=(now - timedelta(days=900)).isoformat())
    hits = memory_recall(
        subject=maya,
        query="what colour is the hallway",
        k=2,
        options=RecallOptions(bm25=False, multilingual=False, rerank=False),
    ).hits
    scores = {hit["id"]: hit["score"] for hit in hits}
    if plain:
        assert scores[recent["id"]] == scores[old["id"]]
    else:
        assert [hit["id"] for hit in hits] == [recent["id"], old["id"]]
        assert scores[recent["id"]] > scores[old["id"]]


@pytest.mark.parametrize(
    "changes",
    [{"ATLAS_KNN_SEARCH_PER_INDEX": True}, {"ATLAS_RECALL_ONE_MSEARCH": True}],
    ids=["one kNN search per index", "one _msearch"],
)
def test_how_the_knn_legs_are_sent_changes_no_hit_and_no_score(maya, settings, changes) -> None:
    """One kNN search per leg over all the indices (or every leg in one _msearch) finds what one search
    per index merged by score finds: kNN scores are similarities, which need no statistics across
    indices. as_of pins the decay's origin for both recalls."""
    episode_write(subject=maya, text="My brother works night shifts as a nurse at the hospital.")
    fact_write(subject=maya, text="Maya's brother is a nurse")
    playbook_write(subject=maya, name="shift swap", trigger_text="a night shift has to move", steps=["ask the ward"])
    at = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    before = memory_recall(subject=maya, query="What does her brother do at night?", k=5, as_of=at)
    for name, value in changes.items():
        setattr(settings, name, value)
    after = memory_recall(subject=maya, query="What does her brother do at night?", k=5, as_of=at)
    assert after.legs == before.legs
    assert [(h["id"], h["rank"], round(h["score"], 4)) for h in after.hits] == [
        (h["id"], h["rank"], round(h["score"], 4)) for h in before.hits
    ]
    assert len(after.hits) == 3


def test_the_bm25_leg_can_be_kept_for_literal_questions(maya, settings) -> None:
    episode_write(subject=maya, text="My flight TP1947 to Madrid leaves at 07:40")
    settings.ATLAS_BM25_LEG = "literal"
    assert memory_recall(subject=maya, query="TP1947", k=3).legs == WITHOUT_CROSSLINGUAL
    settings.ATLAS_BM25_POOL = False
    # "what time …" asks when: the time leg searches too (the memories naming a date).
    asked_when = memory_recall(subject=maya, query="what time does my flight leave", k=3)
    assert asked_when.legs == [*WITHOUT_CROSSLINGUAL[1:], "time"]
    settings.ATLAS_BM25_POOL = True  # no BM25 search, but the leg judges the dense legs' candidates
    pooled = memory_recall(subject=maya, query="what time does my flight leave", k=3)
    assert pooled.legs == [*WITHOUT_CROSSLINGUAL, "time"] and "bm25_pool" in pooled.timings_ms
    # A question asking when: the BM25 leg searches (the time trigger), and so does the time leg.
    assert memory_recall(subject=maya, query="When does my flight leave", k=3).legs == [*WITHOUT_CROSSLINGUAL, "time"]
    only_bm25 = RecallOptions(dense=False, multilingual=False, crosslingual=False)
    assert memory_recall(subject=maya, query="what time does my flight leave", k=3, options=only_bm25).legs == ["bm25"]
