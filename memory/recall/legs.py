"""Recall's legs: which run for a question, their searches (two ``_msearch`` round trips at most, the
query embeddings overlapping the first) and each leg's ranked hits."""

from __future__ import annotations

import math
import re
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from atlas_site.observability.hooks import stage
from memory import recall_constants as rc
from memory.elastic import queries, store
from memory.scope import SubjectScope
from tenants.models import MemorySubject

from .explain import multipliers
from .fusion import LEG_ORDER, Leg, leg_weight, merge_indices
from .lexical import pool_bm25
from .options import RecallOptions

Search = tuple[tuple[str, ...], dict[str, Any]]  # (memory types, search body)


def crosslingual_judged_types(
    scope: SubjectScope, memory_types: tuple[str, ...], question_reads_english: bool, options: RecallOptions
) -> tuple[str, ...]:
    """The memory types among ``memory_types`` whose memories the cross-lingual leg could judge. Under
    language-aware fusion (which needs an English-only leg: BM25 or the main dense one) it judges only
    where the question or the memory does not read as English (fuse); for an English question, then,
    only the subject's own memories if they hold such a memory, and the catalog if the tenant's does —
    flags kept at write time, None = not known (memory.services.non_english_flags). Searching the leg over the
    other types only fills its window with memories it cannot judge; none left, the leg is left out."""
    if not (settings.ATLAS_LANGUAGE_AWARE_FUSION and (options.bm25 or options.dense) and question_reads_english):
        return memory_types
    subject_flag, catalog_flag = (
        MemorySubject.objects.filter(pk=scope.subject.pk)
        .values_list("non_english_memories", "tenant__non_english_catalog")
        .get()
    )  # read now, not from the caller's row: a write a moment ago may have set it
    flags = {"catalog": catalog_flag}
    return tuple(t for t in memory_types if flags.get(t, subject_flag) is not False)


def bm25_leg_searched(query: str, *, dense_legs: bool) -> bool:
    """Whether the BM25 leg runs for ``query`` (ATLAS_BM25_LEG): always, or — with a dense leg to judge
    the rest — only when the question names something literally or asks about time (BM25_LEG_QUERY_PATTERN)."""
    if settings.ATLAS_BM25_LEG == "always" or not dense_legs:
        return True
    return re.search(rc.BM25_LEG_QUERY_PATTERN, query) is not None


@dataclass
class LegSearches:
    """The searches of one recall's legs over ``indices``, with its filters, ranking functions and window."""

    text: str
    indices: tuple[str, ...]
    filters: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    window: int
    crosslingual_types: tuple[str, ...]
    origin: datetime = field(default_factory=lambda: datetime.now(UTC))  # of the ranking functions
    method: str = field(default_factory=lambda: settings.ATLAS_FUSION)
    # The time leg's filters (the memories about the time the question names) and indices; None: no leg.
    about_time: list[dict[str, Any]] | None = None
    about_time_indices: tuple[str, ...] = ()
    # The time leg of a question asking when, naming no time (the memories naming a date): its own weight.
    about_time_when: bool = False
    # The question names a time, and every leg may find the replaced versions that held then.
    held_then: bool = False
    # (name, number of searches making the leg, the Leg's fields), in the order the searches were made.
    legs: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)

    def leg_names(self) -> list[str]:
        return [name for name, _count, _fields in self.legs]

    def weight(self, leg: str) -> float:
        return leg_weight(leg, self.text, method=self.method)

    def time_weight(self) -> float:
        return self.weight("time_when" if self.about_time_when else "time")

    def bm25(self) -> Search:
        body = queries.bm25_leg(
            memory_types=self.indices, text=self.text, filters=self.filters, functions=self.functions, size=self.window
        )
        self.legs.append(("bm25", 1, {"weight": self.weight("bm25")}))
        return (self.indices, body)

    def bm25_over(self, ranked: list[tuple[str, Leg]], options: RecallOptions) -> Leg:
        """The BM25 leg scored in the app over the memories the other legs found (memory.recall.lexical):
        for a question the engine's BM25 search is skipped for (ATLAS_BM25_LEG=literal), with the leg's
        ranking functions applied as the engine applies them (decay, use, catalog prior, outcome)."""
        pool: dict[str, dict[str, Any]] = {}
        for _name, leg in ranked:
            for hit in leg.hits:
                pool.setdefault(hit["_id"], hit)
        origin = self.origin
        scored = []
        for memory_id, score in pool_bm25(self.text, list(pool.values())).items():
            factors = multipliers(pool[memory_id]["_source"], origin=origin, options=options)
            scored.append({**pool[memory_id], "_score": score * math.prod(factors.values())})
        scored.sort(key=lambda hit: (-hit["_score"], hit["_id"]))
        return Leg(scored[: self.window], weight=self.weight("bm25"))

    def knn(
        self, vector_field: str, query_vector: list[float], functions: list[dict[str, Any]], over=None
    ) -> list[Search]:
        """One kNN search over all the indices, or one per index merged by score as Elasticsearch merges
        shards — the same hits (ATLAS_KNN_SEARCH_PER_INDEX; which is cheaper: docs/recall-latency.md)."""
        over = self.indices if over is None else over
        body = queries.knn_leg(
            vector=query_vector, filters=self.filters, functions=functions, size=self.window, field=vector_field
        )
        if not settings.ATLAS_KNN_SEARCH_PER_INDEX:
            return [(over, body)]
        return [((memory_type,), body) for memory_type in over]  # the same body for each index

    def dense(
        self, name: str, vector_field: str, query_vector: list[float], functions: list[dict[str, Any]]
    ) -> list[Search]:
        searches = self.knn(vector_field, query_vector, functions)
        fields = {"weight": self.weight(name)} | ({"any_language": True} if name == "multilingual" else {})
        self.legs.append((name, len(searches), fields))
        return searches

    def time(self, query_vector: list[float]) -> list[Search]:
        """The time leg: the main model's kNN over the memories about the time the question names only
        (memory.elastic.queries.about_time_filter), so a turn dated "last weekend" stands out among a
        window of look-alikes for "what did she do over the weekend of 21 October?"."""
        assert self.about_time is not None
        body = queries.knn_leg(
            vector=query_vector, filters=self.about_time, functions=[], size=self.window, field="embedding"
        )
        searches = [(self.about_time_indices, body)]
        self.legs.append(("time", 1, {"weight": self.time_weight(), "membership": True}))
        return searches

    def crosslingual(self, query_vector: list[float]) -> list[Search]:
        # Plain similarity, as the multilingual leg; it judges only across languages (fuse()), so it
        # searches only the types it may judge (the archive too when the facts are among them).
        judged = tuple(
            t
            for t in self.indices
            if t in self.crosslingual_types or (t == "archive" and "semantic" in self.crosslingual_types)
        )
        searches = self.knn("embedding_crosslingual", query_vector, [], over=judged)
        fields = {"weight": self.weight("crosslingual"), "any_language": True, "across_languages_only": True}
        self.legs.append(("crosslingual", len(searches), fields))
        return searches

    def ranked(self, responses: list[dict[str, Any]]) -> list[tuple[str, Leg]]:
        """Each leg's hits from the msearch responses (in the order the searches were made), in LEG_ORDER."""
        ranked, start = [], 0
        for name, count, fields in self.legs:
            ranked.append((name, Leg(merge_indices(responses[start : start + count], self.window), **fields)))
            start += count
        return sorted(ranked, key=lambda pair: LEG_ORDER.index(pair[0]))  # one order, whichever msearch carried them


def legs_search(
    *, reader: Any, plan: LegSearches, options: RecallOptions, pending: dict[str, Future], timings: dict[str, float]
) -> list[tuple[str, Leg]]:
    """Run the legs: the BM25 leg (and the cross-lingual one, whose vector is ready almost at once) in a
    first msearch while the other models embed the question (``pending``), then the kNN legs in a second.
    With ATLAS_RECALL_ONE_MSEARCH everything waits for the vectors and goes in one msearch."""
    searches: list[Search] = []
    bm25_searched = options.bm25 and bm25_leg_searched(plan.text, dense_legs=bool(pending))
    if bm25_searched:
        searches.append(plan.bm25())
    responses: list[dict[str, Any]] = []
    sent = 0  # the legs already searched (for the engine stage's legs)
    knn: list[Search] = []
    early = "embedding_crosslingual" in pending and not settings.ATLAS_RECALL_ONE_MSEARCH
    if early:
        t0 = time.perf_counter()
        with stage("embedding"):
            searches += plan.crosslingual(pending.pop("embedding_crosslingual").result())
        timings["embed"] += (time.perf_counter() - t0) * 1000
    if searches and not (settings.ATLAS_RECALL_ONE_MSEARCH and pending):
        t0 = time.perf_counter()
        with stage("engine", legs=plan.leg_names()):
            responses = store.memories_msearch(reader, searches=searches)
        timings["search"] += (time.perf_counter() - t0) * 1000
        sent = len(plan.legs)
    else:
        knn = searches  # sent with the kNN legs, in one _msearch
    if pending:
        t0 = time.perf_counter()
        with stage("embedding"):
            vectors = {field_name: future.result() for field_name, future in pending.items()}
        timings["embed"] += (time.perf_counter() - t0) * 1000
        if "embedding" in vectors:
            dense_functions = [] if settings.ATLAS_DENSE_PLAIN_SIMILARITY else plan.functions
            knn += plan.dense("dense", "embedding", vectors["embedding"], dense_functions)
            if plan.about_time is not None and plan.time_weight():
                knn += plan.time(vectors["embedding"])
        if "embedding_multilingual" in vectors:
            # Plain similarity, no ranking functions: multilingual-e5's cosines crowd into a narrow band,
            # where a decay or prior factor outweighs relevance (docs/recall-quality.md "Recall quality"). Decay,
            # use, priors and outcomes still reach the fused ranking through the other legs.
            knn += plan.dense("multilingual", "embedding_multilingual", vectors["embedding_multilingual"], [])
        if "embedding_crosslingual" in vectors:
            knn += plan.crosslingual(vectors["embedding_crosslingual"])
        t0 = time.perf_counter()
        with stage("engine", legs=plan.leg_names()[sent:]):
            responses += store.memories_msearch(reader, searches=knn)
        timings["search"] += (time.perf_counter() - t0) * 1000
    ranked = plan.ranked(responses)
    if options.bm25 and not bm25_searched and settings.ATLAS_BM25_POOL and ranked:
        t0 = time.perf_counter()
        ranked.insert(0, ("bm25", plan.bm25_over(ranked, options)))  # first in LEG_ORDER
        timings["bm25_pool"] = (time.perf_counter() - t0) * 1000
    return ranked
