"""Reading memories as one subject: recall (hybrid, fused, optionally reranked), list, get, chains.

Every read runs with the subject's own Elasticsearch key (DLS), plus the
application's filter as a second guard.
"""

from __future__ import annotations

import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from atlas_site.cursors import MEMORY_SORT, cursor_decode, cursor_encode
from atlas_site.errors import NotFound, ValidationFailed
from memory import recall_constants as rc
from memory.elastic import queries, store
from memory.elastic.documents import VECTOR_FIELDS
from memory.language import memory_reads_as_english, reads_as_english
from memory.scope import SubjectScope, tenant_read_filters
from tenants.models import MemorySubject, Tenant

log = logging.getLogger(__name__)
RECALL_TYPES = ("episodic", "semantic", "procedural", "catalog")
LEG_ORDER = ("bm25", "dense", "multilingual", "crosslingual")  # how recall lists and fuses its legs
TYPE_FIELDS = {
    "episodic": ("session_id", "agent_id", "role", "event_type", "timestamp", "previous_turn_id"),
    "semantic": (
        "fact_type",
        "confidence",
        "source_episodes",
        "last_used_at",
        "use_count",
        "supersedes",
        "superseded_by",
        "superseded_at",
        "retracted",
        "valid_from",
        "valid_to",
        "contradiction",
    ),
    "procedural": (
        "name",
        "trigger_text",
        "description",
        "steps",
        "version",
        "success_count",
        "failure_count",
        "last_success_at",
        "outcome_score",
        "use_count",
        "last_used_at",
    ),
    "catalog": ("title", "category", "tags"),
}
TYPE_FIELDS["archive"] = TYPE_FIELDS["semantic"]


@dataclass
class RecallOptions:
    """Levers of one recall; the defaults are the product's behaviour (ablations switch them off)."""

    bm25: bool = True
    dense: bool = True
    decay: bool = True
    use_boost: bool = True
    catalog_prior: bool = True
    outcome: bool = True
    # The multilingual dense leg, when ATLAS_MULTILINGUAL_EMBEDDING_MODEL names a model.
    multilingual: bool = True
    # The cross-lingual dense leg, when ATLAS_CROSSLINGUAL_EMBEDDING_MODEL names a model.
    crosslingual: bool = True
    rerank: bool | None = None  # None: the configured default


@dataclass
class RecallResult:
    hits: list[dict[str, Any]]
    timings_ms: dict[str, float] = field(default_factory=dict)
    targets: list[tuple[str, str]] = field(default_factory=list)  # (index, id) of facts/playbooks returned
    legs: list[str] = field(default_factory=list)  # the legs searched: bm25, dense, multilingual, crosslingual


def memory_shape(hit: dict[str, Any]) -> dict[str, Any]:
    """The caller's view of a stored memory: id, type, text, timestamps and the type's own fields."""
    source = hit["_source"]
    memory_type = source.get("memory_type", "?")
    out: dict[str, Any] = {
        "id": hit["_id"],
        "type": memory_type,
        "text": source.get("text"),
        "created_at": source.get("created_at"),
        "external_id": source.get("external_id"),
        "user_id": source.get("user_id"),
        "shared": "user_id" not in source,
    }
    for name in TYPE_FIELDS.get(memory_type, ()):
        if name in source:
            out[name] = source[name]
    return out


def _validate_recall(query: Any, k: Any, memory_types: Any) -> tuple[str, int, tuple[str, ...]]:
    if not isinstance(query, str) or not query.strip():
        raise ValidationFailed("query must be a non-empty string", field="query")
    if len(query) > rc.MAX_QUERY_CHARS:
        raise ValidationFailed(f"query is longer than {rc.MAX_QUERY_CHARS} characters", field="query")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= rc.MAX_K:
        raise ValidationFailed(f"k must be an integer from 1 to {rc.MAX_K}", field="k")
    types = tuple(memory_types) if memory_types else RECALL_TYPES
    unknown = [t for t in types if t not in RECALL_TYPES]
    if unknown:
        raise ValidationFailed(f"unknown memory type(s) {unknown}; use {', '.join(RECALL_TYPES)}", field="types")
    return query.strip(), k, types


def bm25_weight(query: str) -> float:
    """The BM25 leg's fusion weight for ``query``: full when it names something literally, else the
    natural-language weight (ATLAS_RRF_WEIGHT_BM25_NATURAL), since paraphrases are the dense leg's."""
    if re.search(rc.LITERAL_QUERY_PATTERN, query):
        return settings.ATLAS_RRF_WEIGHT_BM25
    return settings.ATLAS_RRF_WEIGHT_BM25_NATURAL


def _merge_indices(responses: list[dict[str, Any]], window: int) -> list[dict[str, Any]]:
    """One leg's ranked list from its per-index responses: by score, the earlier index first on ties,
    cut to the window — how Elasticsearch merges the shards of a multi-index search."""
    hits = [hit for response in responses for hit in response["hits"]["hits"]]
    return sorted(hits, key=lambda hit: -(hit["_score"] or 0.0))[:window]


def _spread_near_duplicates(
    fused: list[tuple[str, float, dict[str, Any]]], threshold: float
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


def _rrf_contributions(leg: Leg) -> tuple[dict[str, float], float]:
    """Reciprocal rank fusion's share of one leg: weight / (RANK_CONSTANT + rank); a memory the leg did
    not return gets nothing."""
    return {hit["_id"]: rc.rrf_contribution(rank, leg.weight) for rank, hit in enumerate(leg.hits, start=1)}, 0.0


def _zscore_contributions(leg: Leg) -> tuple[dict[str, float], float]:
    """Score fusion's share of one leg: weight · z, z standardising the leg's own scores over its window
    ((score − mean) / standard deviation). Unlike a rank it keeps how far apart the leg put its hits — a
    memory far ahead of the rest stays ahead, one barely in front does not. A memory the leg did not
    return counts as its lowest z: the leg ranked it below everything it returned."""
    scores = [hit["_score"] or 0.0 for hit in leg.hits]
    if not scores:
        return {}, 0.0
    mean = sum(scores) / len(scores)
    spread = (sum((s - mean) ** 2 for s in scores) / len(scores)) ** 0.5 or 1.0
    z = {hit["_id"]: leg.weight * (score - mean) / spread for hit, score in zip(leg.hits, scores, strict=True)}
    return z, min(z.values())


FUSION_METHODS = {"rrf": _rrf_contributions, "zscore": _zscore_contributions}


def fuse(
    legs: list[Leg], *, method: str, language_aware: bool, question_reads_english: bool = True
) -> list[tuple[str, float, dict[str, Any]]]:
    """The legs' ranked lists as one: Σ over legs of each leg's contribution (``method``: rrf or zscore).

    ``language_aware``: where the question's language and a memory's may differ — the memory does not
    read as English, or the question does not — the memory is judged by the legs that read any language
    alone, scaled up to the whole weight: the English legs cannot judge it (their low scores say nothing
    about its relevance), and counting them would bury it. Elsewhere (both English) the legs judge that
    are not ``across_languages_only``: the cross-lingual model is measured to help only across languages.
    Without ``language_aware`` every leg judges every memory."""
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
        fused[memory_id] = scale * sum(contributions[i][0].get(memory_id, contributions[i][1]) for i in judges)
    ordered = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
    return [(memory_id, score, hits[memory_id]) for memory_id, score in ordered]


def _replies_inherit(
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
        }[leg]
    return {
        "bm25": bm25_weight(query),
        "dense": settings.ATLAS_RRF_WEIGHT_DENSE,
        "multilingual": settings.ATLAS_RRF_WEIGHT_MULTILINGUAL,
        "crosslingual": settings.ATLAS_RRF_WEIGHT_CROSSLINGUAL,
    }[leg]


def _crosslingual_judged_types(
    scope: SubjectScope, memory_types: tuple[str, ...], question_reads_english: bool, options: RecallOptions
) -> tuple[str, ...]:
    """The memory types among ``memory_types`` whose memories the cross-lingual leg could judge. Under
    language-aware fusion (which needs an English-only leg: BM25 or the main dense one) it judges only
    where the question or the memory does not read as English (fuse); for an English question, then,
    only the subject's own memories if they hold such a memory, and the catalog if the tenant's does —
    flags kept at write time, None = not known (memory.services.languages). Searching the leg over the
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


def _bm25_leg_searched(query: str, *, dense_legs: bool) -> bool:
    """Whether the BM25 leg runs for ``query`` (ATLAS_BM25_LEG): always, or — with a dense leg to judge
    the rest — only when the question names something literally (LITERAL_QUERY_PATTERN)."""
    if settings.ATLAS_BM25_LEG == "always" or not dense_legs:
        return True
    return re.search(rc.LITERAL_QUERY_PATTERN, query) is not None


# Query embeddings that overlap the first msearch (see memory_recall).
_QUERY_EMBEDDER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="atlas-query-embed")


def memory_recall(
    *,
    subject: MemorySubject,
    query: Any,
    k: Any = 10,
    memory_types: Any = None,
    include_superseded: bool = False,
    as_of: Any = None,
    fact_type: Any = None,
    since: Any = None,
    until: Any = None,
    options: RecallOptions | None = None,
    record_use: bool = True,
) -> RecallResult:
    """One hybrid recall over the subject's memories and the tenant catalog.

    ``fact_type`` recalls facts of that type only; ``since``/``until`` only memories created in
    [since, until) — filters of every leg, as :func:`memory_list` applies them.
    ``record_use`` schedules the use-count bump of returned facts and playbooks
    off the request path; evaluations pass False so they never change what they measure.
    """
    from memory.embeddings import crosslingual_embedding_provider, embedding_provider, multilingual_embedding_provider
    from memory.services.documents import timestamp

    started = time.perf_counter()
    text, k, types = _validate_recall(query, k, memory_types)
    at = timestamp(as_of, field_name="as_of") if as_of is not None else None
    narrowing = list_filters(fact_type=fact_type, since=since, until=until)
    if fact_type is not None:
        if "semantic" not in types:
            raise ValidationFailed("fact_type recalls facts only: include semantic in the types", field="fact_type")
        types = ("semantic",)
    options = options or RecallOptions()
    multilingual = multilingual_embedding_provider() if options.multilingual else None
    crosslingual = crosslingual_embedding_provider() if options.crosslingual else None
    if not (options.bm25 or options.dense or multilingual or crosslingual):
        raise ValidationFailed("recall needs at least one leg (BM25, dense, multilingual, cross-lingual)")
    scope = SubjectScope.of(subject)
    question_reads_english = reads_as_english(text)
    crosslingual_types = (
        _crosslingual_judged_types(scope, types, question_reads_english, options) if crosslingual is not None else ()
    )
    if not crosslingual_types:
        crosslingual = None
    timings: dict[str, float] = {"embed": 0.0, "search": 0.0}
    # The query embeddings (≈ 20 ms for all-mpnet-base-v2-int8, ≈ 25 ms for multilingual-e5, < 1 ms for
    # the cross-lingual model) run on worker threads while the first msearch (BM25, cross-lingual) is in flight;
    # the kNN legs follow in a second msearch, so embedding overlaps the search instead of adding to it.
    # The cross-lingual query (< 1 ms) is submitted first: its leg joins the first msearch (below).
    pending = {
        field_name: _QUERY_EMBEDDER.submit(provider.embed_query, text)
        for field_name, provider in (
            ("embedding_crosslingual", crosslingual),
            ("embedding", embedding_provider() if options.dense else None),
            ("embedding_multilingual", multilingual),
        )
        if provider is not None
    }
    indices = types + (("archive",) if (include_superseded or at) and "semantic" in types else ())
    filters = [
        *scope.read_filters(),
        *queries.visibility_filter(include_superseded=include_superseded, as_of=at),
        *narrowing,
    ]
    functions = queries.ranking_functions(
        origin=(at or datetime.now(UTC)).isoformat(),
        decay=options.decay,
        use_boost=options.use_boost,
        catalog_prior=options.catalog_prior,
        outcome=options.outcome,
    )
    window = rc.window_size(k)
    # The BM25 leg is one search over all the indices with collection statistics taken across them
    # (dfs_query_then_fetch), so a term is as rare in the catalog as in the user's own memories and
    # scores compare across types. The kNN legs need no statistics: one search per leg over all the
    # indices, or one per index merged by score as Elasticsearch merges shards, gives the same hits
    # (ATLAS_KNN_SEARCH_PER_INDEX; which is cheaper is measured in docs/recall-latency.md).
    searches: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    method = settings.ATLAS_FUSION
    legs: list[tuple[str, int, dict[str, Any]]] = []  # (name, number of searches making the leg, the Leg's fields)
    if options.bm25 and _bm25_leg_searched(text, dense_legs=bool(pending)):
        body = queries.bm25_leg(memory_types=indices, text=text, filters=filters, functions=functions, size=window)
        searches.append((indices, body))
        legs.append(("bm25", 1, {"weight": leg_weight("bm25", text, method=method)}))

    def knn_searches(
        vector_field: str,
        query_vector: list[float],
        leg_functions: list[dict[str, Any]],
        over: tuple[str, ...] = indices,
    ) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
        body = queries.knn_leg(
            vector=query_vector, filters=filters, functions=leg_functions, size=window, field=vector_field
        )
        if not settings.ATLAS_KNN_SEARCH_PER_INDEX:
            return [(over, body)]
        return [((memory_type,), body) for memory_type in over]  # the same body for each index

    def crosslingual_leg(query_vector: list[float], into: list[tuple[tuple[str, ...], dict[str, Any]]]) -> None:
        # Plain similarity, as the multilingual leg (below); it judges only across languages (fuse()),
        # so it searches only the types it may judge (the archive too when the facts are among them).
        judged = tuple(
            t for t in indices if t in crosslingual_types or (t == "archive" and "semantic" in crosslingual_types)
        )
        leg_searches = knn_searches("embedding_crosslingual", query_vector, [], over=judged)
        into.extend(leg_searches)
        weight = leg_weight("crosslingual", text, method=method)
        fields = {"weight": weight, "any_language": True, "across_languages_only": True}
        legs.append(("crosslingual", len(leg_searches), fields))

    reader = scope.reader()
    responses: list[dict[str, Any]] = []
    knn: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    # The cross-lingual leg's vector is ready almost at once: its search goes in the first msearch, in
    # flight while the other two models embed the question, instead of waiting for them.
    early = "embedding_crosslingual" in pending and not settings.ATLAS_RECALL_ONE_MSEARCH
    if early:
        t0 = time.perf_counter()
        crosslingual_leg(pending.pop("embedding_crosslingual").result(), into=searches)
        timings["embed"] += (time.perf_counter() - t0) * 1000
    if searches and not (settings.ATLAS_RECALL_ONE_MSEARCH and pending):
        t0 = time.perf_counter()
        responses = store.memories_msearch(reader, searches=searches)
        timings["search"] += (time.perf_counter() - t0) * 1000
    else:
        knn = searches  # sent with the kNN legs, in one _msearch
    if pending:
        t0 = time.perf_counter()
        vectors = {field_name: future.result() for field_name, future in pending.items()}
        timings["embed"] += (time.perf_counter() - t0) * 1000
        if "embedding" in vectors:
            dense_functions = [] if settings.ATLAS_DENSE_PLAIN_SIMILARITY else functions
            leg_searches = knn_searches("embedding", vectors["embedding"], dense_functions)
            knn += leg_searches
            legs.append(("dense", len(leg_searches), {"weight": leg_weight("dense", text, method=method)}))
        if "embedding_multilingual" in vectors:
            # Plain similarity, no ranking functions: multilingual-e5's cosines crowd into a narrow band
            # (≈ 0.8–0.95), where a decay or prior factor outweighs relevance — with them the leg ranked
            # recent episodes first and never a catalog entry (atlas_v1 R@10 0.948 → 0.759). Decay, use,
            # priors and outcomes still reach the fused ranking through the other legs.
            leg_searches = knn_searches("embedding_multilingual", vectors["embedding_multilingual"], [])
            knn += leg_searches
            weight = leg_weight("multilingual", text, method=method)
            legs.append(("multilingual", len(leg_searches), {"weight": weight, "any_language": True}))
        if "embedding_crosslingual" in vectors:
            crosslingual_leg(vectors["embedding_crosslingual"], into=knn)
        t0 = time.perf_counter()
        responses += store.memories_msearch(reader, searches=knn)
        timings["search"] += (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    ranked, start = [], 0
    for name, count, fields in legs:
        ranked.append((name, Leg(_merge_indices(responses[start : start + count], window), **fields)))
        start += count
    ranked.sort(key=lambda pair: LEG_ORDER.index(pair[0]))  # fused in one order, whichever msearch carried them
    ranked_legs = [leg for _name, leg in ranked]
    fused = fuse(
        ranked_legs,
        method=method,
        language_aware=settings.ATLAS_LANGUAGE_AWARE_FUSION,
        question_reads_english=question_reads_english,
    )
    fused = _replies_inherit(fused, settings.ATLAS_REPLY_INHERITANCE)
    # Within the window only: the comparison is quadratic, and beyond it nothing reaches the top k.
    fused = _spread_near_duplicates(fused[:window], settings.ATLAS_DEDUP_JACCARD) + fused[window:]
    timings["fusion"] = (time.perf_counter() - t0) * 1000
    use_rerank = options.rerank if options.rerank is not None else settings.ATLAS_RERANK_DEFAULT
    if use_rerank and fused:
        from memory.rerank import rerank_provider, reranked

        t0 = time.perf_counter()
        fused = reranked(rerank_provider(), text, fused[: max(window, k)], now=at or datetime.now(UTC))
        timings["rerank"] = (time.perf_counter() - t0) * 1000
    top = fused[:k]
    hits = []
    for rank, (_memory_id, score, hit) in enumerate(top, start=1):
        shaped = memory_shape(hit)
        shaped.update(score=round(score, 6), rank=rank)
        hits.append(shaped)
    targets = [
        (hit["_index"], memory_id)
        for memory_id, _, hit in top
        if hit["_source"].get("memory_type") in ("semantic", "procedural")
    ]
    timings["total"] = (time.perf_counter() - started) * 1000
    result = RecallResult(hits=hits, timings_ms=timings, targets=targets, legs=[name for name, _leg in ranked])
    if record_use and targets:
        _schedule_usage(targets)
    return result


def _schedule_usage(targets: list[tuple[str, str]]) -> None:
    mode = settings.ATLAS_USAGE_RECORDING
    if mode == "off":
        return
    from memory.tasks import memories_usage_record_task

    try:
        memories_usage_record_task.delay([list(t) for t in targets])
    except Exception:  # the bump is best effort; recall has already answered
        log.exception("could not schedule the use-count bump of %d memories", len(targets))


def memory_get(*, subject: MemorySubject, memory_id: Any) -> dict[str, Any]:
    return memory_shape(memory_hit(subject=subject, memory_id=memory_id))


def memory_hit(*, subject: MemorySubject, memory_id: Any) -> dict[str, Any]:
    """The stored hit of one of the subject's memories (or the tenant catalog's), read with its key."""
    scope = SubjectScope.of(subject)
    if not isinstance(memory_id, str) or not memory_id:
        raise ValidationFailed("memory_id is required", field="memory_id")
    found = store.memories_fetch(
        scope.reader(), ids=[memory_id], memory_types=(*RECALL_TYPES, "archive"), filters=scope.read_filters()
    )
    if memory_id not in found:
        raise NotFound(f"no memory {memory_id} for this user", field="memory_id")
    return found[memory_id]


def list_filters(*, fact_type: Any, since: Any, until: Any) -> list[dict[str, Any]]:
    """The filters a list or a recall narrows by: facts of one ``fact_type``, memories created in
    [``since``, ``until``) (ISO 8601 date-times or datetimes; naive ones are UTC)."""
    from memory.services.documents import FACT_TYPES, timestamp

    filters: list[dict[str, Any]] = []
    if fact_type is not None:
        if not isinstance(fact_type, str) or fact_type not in FACT_TYPES:
            raise ValidationFailed(f"fact_type must be one of {', '.join(FACT_TYPES)}", field="fact_type")
        filters.append(queries.field_equals("fact_type", fact_type))
    start, end = timestamp(since, field_name="since"), timestamp(until, field_name="until")
    if start is not None and end is not None and start > end:
        raise ValidationFailed("since is after until", field="since")
    return filters + queries.created_between(since=start, until=end)


def memory_list(
    *,
    subject: MemorySubject,
    memory_types: Any = None,
    include_superseded: bool = False,
    fact_type: Any = None,
    session_id: Any = None,
    page_size: Any = 50,
    cursor: Any = None,
    since: Any = None,
    until: Any = None,
) -> dict[str, Any]:
    """The subject's memories, newest first, ``page_size`` at a time; pass ``next_cursor`` back for more."""
    scope = SubjectScope.of(subject)
    types = tuple(memory_types) if memory_types else (*RECALL_TYPES, *(("archive",) if include_superseded else ()))
    unknown = [t for t in types if t not in (*RECALL_TYPES, "archive")]
    if unknown:
        raise ValidationFailed(f"unknown memory type(s) {unknown}", field="types")
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= 200:
        raise ValidationFailed("page_size must be an integer from 1 to 200", field="page_size")
    extra = list_filters(fact_type=fact_type, since=since, until=until)
    if session_id is not None:
        extra.append(queries.field_equals("session_id", session_id))
    filters = [
        *scope.read_filters(),
        *queries.visibility_filter(include_superseded=include_superseded, as_of=None),
        *extra,
    ]
    body: dict[str, Any] = {
        "query": queries.list_query(filters=filters, memory_types=None),
        "sort": [{"created_at": "desc"}, {"memory_id": "desc"}],
        "_source": {"excludes": VECTOR_FIELDS},
    }
    if cursor is not None:
        body["search_after"] = cursor_decode(cursor, parts=MEMORY_SORT)
    return _page(scope.reader(), types, body, page_size)


def _page(reader: Any, types: tuple[str, ...], body: dict[str, Any], page_size: int) -> dict[str, Any]:
    """One page of ``body``'s hits. It asks for one hit more than it shows: a cursor only when another
    page holds something, so a list that ends exactly on a page boundary offers no empty next page."""
    response = store.memories_search(reader, memory_types=types, body={**body, "size": page_size + 1})
    hits = response["hits"]["hits"]
    more, hits = len(hits) > page_size, hits[:page_size]
    next_cursor = cursor_encode(hits[-1]["sort"]) if more else None
    return {"memories": [memory_shape(h) for h in hits], "next_cursor": next_cursor}


def catalog_list(*, tenant: Tenant, page_size: Any = 50, cursor: Any = None) -> dict[str, Any]:
    """The tenant's catalog, newest first, read with the tenant's own key."""
    from tenants.selectors import tenant_es_client

    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= 200:
        raise ValidationFailed("page_size must be an integer from 1 to 200", field="page_size")
    body: dict[str, Any] = {
        "query": queries.list_query(filters=tenant_read_filters(str(tenant.es_id)), memory_types=None),
        "sort": [{"created_at": "desc"}, {"memory_id": "desc"}],
        "_source": {"excludes": VECTOR_FIELDS},
    }
    if cursor is not None:
        body["search_after"] = cursor_decode(cursor, parts=MEMORY_SORT)
    return _page(tenant_es_client(tenant=tenant), ("catalog",), body, page_size)


def memory_chain_get(*, subject: MemorySubject, memory_id: Any) -> list[dict[str, Any]]:
    """The supersession chain through ``memory_id``, oldest first, followed both ways across the
    hot index and the archive (abc → xyz → pqr, whichever link you start from)."""
    scope = SubjectScope.of(subject)
    reader = scope.reader()
    seen: dict[str, dict[str, Any]] = {}
    frontier = [memory_id]
    while frontier:
        found = store.memories_fetch(
            reader, ids=frontier, memory_types=store.FACT_TYPES_INDICES, filters=scope.read_filters()
        )
        if memory_id not in found and not seen:
            raise NotFound(f"no fact {memory_id} for this user", field="memory_id")
        next_ids: list[str] = []
        for hit in found.values():
            hit_id = hit["_id"]  # the memory's own id, whichever id named it
            if hit_id in seen:
                continue
            seen[hit_id] = hit
            source = hit["_source"]
            links = list(source.get("supersedes") or []) + list(_as_list(source.get("superseded_by")))
            next_ids += [i for i in links if i not in seen]
        frontier = list(dict.fromkeys(i for i in next_ids if i not in seen))
        if len(seen) > 1000:
            break
    chain = [memory_shape(h) for h in seen.values()]
    return sorted(chain, key=lambda m: (m.get("created_at") or "", m["id"]))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


OWNED_TYPES = ("episodic", "semantic", "procedural", "archive")


def memories_get(*, subject: MemorySubject, memory_ids: list[str]) -> dict[str, dict[str, Any]]:
    """{id: memory} for those of ``memory_ids`` the subject may see, in one read with its key
    (a fact's source episodes, say); ids it may not see, or that were forgotten, are simply absent."""
    scope = SubjectScope.of(subject)
    ids = [i for i in dict.fromkeys(memory_ids) if isinstance(i, str) and i][: 2 * rc.MAX_K]
    found = store.memories_fetch(
        scope.reader(), ids=ids, memory_types=(*RECALL_TYPES, "archive"), filters=scope.read_filters()
    )
    return {requested: memory_shape(hit) for requested, hit in found.items()}


def memory_counts(*, subject: MemorySubject) -> dict[str, int]:
    """How many memories of each type the subject owns (the archive included), counted exactly, in one round trip."""
    scope = SubjectScope.of(subject)
    body = queries.count_body(filters=scope.read_filters())
    responses = store.memories_msearch(scope.reader(), searches=[((t,), body) for t in OWNED_TYPES])
    return {t: r["hits"]["total"]["value"] for t, r in zip(OWNED_TYPES, responses, strict=True)}
