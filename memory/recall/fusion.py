"""Fusion: the legs' ranked lists as one (z-score or RRF, language-aware), replies inheriting their
question's relevance, near-duplicates spread, and each leg's weight."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memory import recall_constants as rc
from memory.inference.language_detection import memory_reads_as_english

LEG_ORDER = ("bm25", "dense", "multilingual", "crosslingual", "time")  # how recall lists and fuses its legs


def bm25_weight(query: str) -> float:
    """The BM25 leg's fusion weight for ``query``: full when it names something literally, else the
    natural-language weight (ATLAS_RRF_WEIGHT_BM25_NATURAL), since paraphrases are the dense leg's."""
    if re.search(rc.LITERAL_QUERY_PATTERN, query):
        return settings.ATLAS_RRF_WEIGHT_BM25
    return settings.ATLAS_RRF_WEIGHT_BM25_NATURAL


def merge_indices(responses: list[dict[str, Any]], window: int) -> list[dict[str, Any]]:
    """One leg's ranked list from its per-index responses: by score, the earlier index first on ties,
    cut to the window — how Elasticsearch merges the shards of a multi-index search."""
    hits = [hit for response in responses for hit in response["hits"]["hits"]]
    return sorted(hits, key=lambda hit: -(hit["_score"] or 0.0))[:window]


def near_duplicates_spread(
    fused: list[tuple[str, float, dict[str, Any]]], threshold: float, *, moved_ids: set[str] | None = None
) -> list[tuple[str, float, dict[str, Any]]]:
    """Keep each memory's place unless one ranked above it says nearly the same (word-set Jaccard ≥
    ``threshold``); those move below the distinct ones, in their order, so look-alikes cannot crowd a
    different memory out of the top k. ``threshold`` 0 leaves the order alone."""
    if not threshold:
        return fused
    kept: list[tuple[str, float, dict[str, Any]]] = []
    moved: list[tuple[str, float, dict[str, Any]]] = []
    seen: list[frozenset[str]] = []
    for item in fused:
        words = frozenset(re.findall(r"\w+", (item[2]["_source"].get("text") or "").lower()))
        if words and any(len(words & other) / len(words | other) >= threshold for other in seen):
            moved.append(item)
            if moved_ids is not None:
                moved_ids.add(item[0])
            continue
        seen.append(words)
        kept.append(item)
    return kept + moved


@dataclass(frozen=True)
class Leg:
    """One recall leg's ranked hits (merged across indices) and its fusion weight; ``any_language`` for a
    leg whose model reads every language (the multilingual and cross-lingual ones), ``across_languages_only``
    for one that judges only where languages may differ (the cross-lingual one, see :func:`fuse`)."""

    hits: list[dict[str, Any]]
    weight: float
    any_language: bool = False
    across_languages_only: bool = False
    # A leg that says which memories belong (the time leg: about the time asked) rather than how well each
    # fits: each of its hits gains the whole weight, in either fusion; its order only decides the window.
    membership: bool = False


def _rrf_contributions(leg: Leg) -> tuple[dict[str, float], float]:
    """Reciprocal rank fusion's share of one leg: weight / (RANK_CONSTANT + rank); a memory the leg did
    not return gets nothing."""
    if leg.membership:
        return {hit["_id"]: rc.rrf_contribution(1, leg.weight) for hit in leg.hits}, 0.0
    return {hit["_id"]: rc.rrf_contribution(rank, leg.weight) for rank, hit in enumerate(leg.hits, start=1)}, 0.0


def _zscore_contributions(leg: Leg) -> tuple[dict[str, float], float]:
    """Score fusion's share of one leg: weight · z, z standardising the leg's own scores over its window
    ((score − mean) / standard deviation). Unlike a rank it keeps how far apart the leg put its hits — a
    memory far ahead of the rest stays ahead, one barely in front does not. A memory the leg did not
    return counts as its lowest z: the leg ranked it below everything it returned. A membership leg's hits
    gain its weight (one standard deviation's worth), the rest nothing."""
    if leg.membership:
        return {hit["_id"]: leg.weight for hit in leg.hits}, 0.0
    scores = [hit["_score"] or 0.0 for hit in leg.hits]
    if not scores:
        return {}, 0.0
    mean = sum(scores) / len(scores)
    spread = (sum((s - mean) ** 2 for s in scores) / len(scores)) ** 0.5 or 1.0
    z = {hit["_id"]: leg.weight * (score - mean) / spread for hit, score in zip(leg.hits, scores, strict=True)}
    return z, min(z.values())


FUSION_METHODS = {"rrf": _rrf_contributions, "zscore": _zscore_contributions}


def fuse(
    legs: list[Leg],
    *,
    method: str,
    language_aware: bool,
    question_reads_english: bool = True,
    shares: dict[str, dict[str, Any]] | None = None,
) -> list[tuple[str, float, dict[str, Any]]]:
    """The legs' ranked lists as one: Σ over legs of each leg's contribution (``method``: rrf or zscore).

    ``language_aware``: where the question's language and a memory's may differ — the memory does not
    read as English, or the question does not — the memory is judged by the legs that read any language
    alone, scaled up to the whole weight: the English legs cannot judge it (their low scores say nothing
    about its relevance), and counting them would bury it. Elsewhere (both English) the legs judge that
    are not ``across_languages_only``: the cross-lingual model is measured to help only across languages.
    Without ``language_aware`` every leg judges every memory. ``shares`` (explain) receives each
    memory's judging legs, language scale and per-leg contribution."""
    contributions = [FUSION_METHODS[method](leg) for leg in legs]
    hits: dict[str, dict[str, Any]] = {}
    for leg in legs:
        for hit in leg.hits:
            hits.setdefault(hit["_id"], hit)
    everyone = list(range(len(legs)))
    readers = [i for i, leg in enumerate(legs) if leg.any_language]
    language_aware = language_aware and sum(legs[i].weight for i in readers) > 0 and len(readers) < len(legs)
    # Language-aware means some leg reads English only, so this list is never empty.
    english_judges = [i for i in everyone if not legs[i].across_languages_only] if language_aware else everyone
    total_weight = sum(legs[i].weight for i in english_judges)
    fused: dict[str, float] = {}
    for memory_id, hit in hits.items():
        judges = english_judges
        if language_aware and not (question_reads_english and memory_reads_as_english(hit["_source"])):
            judges = readers
        judges_weight = sum(legs[i].weight for i in judges)
        scale = total_weight / judges_weight if judges_weight else 1.0  # weights of 0 switch a leg off
        own = {i: contributions[i][0].get(memory_id, contributions[i][1]) for i in judges}
        fused[memory_id] = scale * sum(own.values())
        if shares is not None:
            shares[memory_id] = {"judges": judges, "scale": scale, "shares": own}
    ordered = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
    return [(memory_id, score, hits[memory_id]) for memory_id, score in ordered]


def replies_inherit(
    fused: list[tuple[str, float, dict[str, Any]]], share: float
) -> list[tuple[str, float, dict[str, Any]]]:
    """A reply means what its question meant ("B, obviously", "we settled on the lower number"): each
    episode whose previous turn is among the candidates gains ``share`` of that turn's fused score
    (when positive, i.e. the question ranked above the average candidate). Scores are the ones before
    inheritance, so nothing propagates down a chain of turns. ``share`` 0 leaves the order alone."""
    if not share:
        return fused
    scores = {memory_id: score for memory_id, score, _ in fused}
    inherited = [
        (memory_id, score + share * max(0.0, scores.get(hit["_source"].get("previous_turn_id") or "", 0.0)), hit)
        for memory_id, score, hit in fused
    ]
    return sorted(inherited, key=lambda item: (-item[1], item[0]))


def leg_weight(leg: str, query: str, *, method: str) -> float:
    """The fusion weight of one recall leg (``bm25``, ``dense``, ``multilingual``, ``crosslingual``) under
    fusion ``method``."""
    if method == "zscore":
        return {
            "bm25": settings.ATLAS_ZSCORE_WEIGHT_BM25,
            "dense": settings.ATLAS_ZSCORE_WEIGHT_DENSE,
            "multilingual": settings.ATLAS_ZSCORE_WEIGHT_MULTILINGUAL,
            "crosslingual": settings.ATLAS_ZSCORE_WEIGHT_CROSSLINGUAL,
            "time": settings.ATLAS_ZSCORE_WEIGHT_TIME,
            "time_when": settings.ATLAS_ZSCORE_WEIGHT_TIME_WHEN,
        }[leg]
    return {
        "bm25": bm25_weight(query),
        "dense": settings.ATLAS_RRF_WEIGHT_DENSE,
        "multilingual": settings.ATLAS_RRF_WEIGHT_MULTILINGUAL,
        "crosslingual": settings.ATLAS_RRF_WEIGHT_CROSSLINGUAL,
        "time": settings.ATLAS_RRF_WEIGHT_TIME,
        "time_when": settings.ATLAS_RRF_WEIGHT_TIME,
    }[leg]
