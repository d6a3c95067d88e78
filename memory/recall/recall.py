"""One recall: validate the question, run the legs, fuse, optionally rerank, and shape the top k."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from atlas_site.errors import ValidationFailed
from memory import recall_constants as rc
from memory.elastic import queries, store
from memory.inference.language_detection import reads_as_english
from memory.scope import SubjectScope
from memory.selectors import RECALL_TYPES, list_filters, memory_shape
from tenants.models import MemorySubject

from .embedding import QUERY_EMBEDDER
from .explain import Trace, expected_explain, filters_described, hit_explain
from .folding import evidence_attach, evidence_fold
from .fusion import fuse, near_duplicates_spread, replies_inherit
from .legs import LegSearches, crosslingual_judged_types, legs_search
from .options import RecallOptions, RecallResult
from .turn_kind import turn_classify
from .turn_priors import turn_priors_apply


def _validate(query: Any, k: Any, memory_types: Any) -> tuple[str, int, tuple[str, ...]]:
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
    fold_evidence: bool = True,
    explain: bool = False,
    expect: Any = None,
) -> RecallResult:
    """One hybrid recall over the subject's memories and the tenant catalog.

    ``fact_type`` recalls facts of that type only; ``since``/``until`` only memories created in
    [since, until) — filters of every leg, as :func:`memory.selectors.memory_list` applies them.
    A read only: the facts and playbooks it returned are in ``targets``; an agent's interface passes
    them to ``memory.services.usage.recall_usage_schedule`` (a person's or operator's look, evaluations
    and consolidation do not count as use).
    ``fold_evidence``: a current fact carries the episodes it cites as ``evidence``, and those episodes
    take no slot of their own (memory.recall.folding). ``explain``: each hit says why it ranked where it
    did, and ``expect`` (ids) says for each of those memories where it stood and what removed it
    (memory.recall.explain).
    """
    from memory.services.prepare import id_list, timestamp

    started = time.perf_counter()
    text, k, types = _validate(query, k, memory_types)
    expected = id_list(expect, field_name="expect")[:MAX_EXPECTED]
    at = timestamp(as_of, field_name="as_of") if as_of is not None else None
    narrowing = list_filters(fact_type=fact_type, since=since, until=until)
    if fact_type is not None:
        if "semantic" not in types:
            raise ValidationFailed("fact_type recalls facts only: include semantic in the types", field="fact_type")
        types = ("semantic",)
    options = options or RecallOptions()
    scope = SubjectScope.of(subject)
    question_reads_english = reads_as_english(text)
    timings: dict[str, float] = {"embed": 0.0, "search": 0.0}
    trace = Trace() if explain or expected else None
    plan, pending = _plan(scope, text, k, types, at, include_superseded, narrowing, options, question_reads_english)
    ranked = legs_search(reader=scope.reader(), plan=plan, options=options, pending=pending, timings=timings)
    fused = _fused(ranked, plan, options, text, k, at, question_reads_english, trace, timings)
    top, folded = evidence_fold(fused, k) if fold_evidence else (fused[:k], {})
    hits = [memory_shape(hit) | {"score": round(score, 6), "rank": rank} for rank, (_, score, hit) in enumerate(top, 1)]
    if fold_evidence:
        t0 = time.perf_counter()
        evidence_attach(hits, fused, fetch=lambda ids: _episodes_fetch(scope, ids))
        timings["evidence"] = (time.perf_counter() - t0) * 1000
    targets = [(hit["_index"], memory_id) for memory_id, _, hit in top if hit["_source"].get("memory_type") in OWN_USED]
    result = RecallResult(hits=hits, timings_ms=timings, targets=targets, legs=[name for name, _leg in ranked])
    if trace is not None:
        filters = dict(types=types, include_superseded=include_superseded, as_of=at, fact_type=fact_type)
        result.explain = _explained(
            result, trace, top, fused, folded, k, scope, options, at, expected, explain, since, until, filters
        )
    timings["total"] = (time.perf_counter() - started) * 1000
    return result


def _fused(ranked, plan, options, text, k, at, question_reads_english, trace, timings):
    """The legs as one ranked list: fused, replies inheriting, near-duplicates spread, optionally reranked."""
    t0 = time.perf_counter()
    shares = trace.fusion if trace is not None else None
    fused = fuse(
        [leg for _name, leg in ranked],
        method=plan.method,
        language_aware=settings.ATLAS_LANGUAGE_AWARE_FUSION,
        question_reads_english=question_reads_english,
        shares=shares,
    )
    if trace is not None:
        trace.legs = ranked
        trace.fused = {memory_id: score for memory_id, score, _ in fused}
    fused = replies_inherit(fused, settings.ATLAS_REPLY_INHERITANCE)
    # Ranking for turns: priors by the kind of turn (memory.recall.turn_priors), within the window.
    kind = turn_classify(text=text)
    priors = trace.turn_priors if trace is not None else None
    fused = turn_priors_apply(fused, text=text, kind=kind, window=plan.window, priors=priors)
    if trace is not None:
        trace.turn_kind = kind
    # Within the window only: the comparison is quadratic, and beyond it nothing reaches the top k.
    moved = trace.moved if trace is not None else None
    spread = near_duplicates_spread(fused[: plan.window], settings.ATLAS_DEDUP_JACCARD, moved_ids=moved)
    fused = spread + fused[plan.window :]
    timings["fusion"] = (time.perf_counter() - t0) * 1000
    use_rerank = options.rerank if options.rerank is not None else settings.ATLAS_RERANK_DEFAULT
    if use_rerank and fused:
        from memory.inference.rerank import rerank_provider, reranked

        t0 = time.perf_counter()
        fused = reranked(rerank_provider(), text, fused[: max(plan.window, k)], now=at or datetime.now(UTC))
        timings["rerank"] = (time.perf_counter() - t0) * 1000
        if trace is not None:
            trace.reranked = True
    return fused


def _explained(result, trace, top, fused, folded, k, scope, options, at, expected, explain, since, until, filters):
    """The recall's explanation: per hit (with ``explain``), the filters, and the expected memories."""
    origin = at or datetime.now(UTC)
    if explain:
        under: dict[str, list[str]] = {}
        for episode, fact in folded.items():
            under.setdefault(fact, []).append(episode)
        for shaped, (memory_id, _, hit) in zip(result.hits, top, strict=True):
            shaped["explain"] = hit_explain(
                memory_id, hit, trace=trace, origin=origin, options=options, folded_under=under
            )
    out: dict[str, Any] = {
        "filters": filters_described(since=since, until=until, **filters),
        "fusion": {name: leg.weight for name, leg in trace.legs} | {"method": settings.ATLAS_FUSION},
        "turn_kind": trace.turn_kind,
    }
    if "bm25_pool" in result.timings_ms:  # memory.recall.lexical: no BM25 search, the leg judged the candidates
        out["bm25_leg"] = "scored in the app over the other legs' candidates (ATLAS_BM25_POOL)"
    if expected:
        out["expected"] = expected_explain(
            expected,
            top=top,
            ranked=fused,
            folded=folded,
            trace=trace,
            k=k,
            fetch=lambda ids: store.memories_fetch(
                scope.reader(), ids=ids, memory_types=(*RECALL_TYPES, "archive"), filters=scope.read_filters()
            ),
            why_filtered=lambda source: _why_filtered(source, since=since, until=until, **filters),
        )
    return out


MAX_EXPECTED = 20  # memories an ``expect`` may name


def _why_filtered(source, *, types, include_superseded, as_of, fact_type, since, until) -> str | None:
    """Which of this recall's filters keeps ``source`` out, in words; None when none does."""
    from memory.services.prepare import timestamp

    memory_type = "semantic" if source.get("memory_type") == "archive" else source.get("memory_type")
    if memory_type not in types:
        return f"its type ({memory_type}) was not searched"
    created = timestamp(source.get("created_at"), field_name="created_at")
    if as_of is not None and created and created > as_of:
        return f"stored after as_of ({source.get('created_at')})"
    if as_of is None and not include_superseded and (source.get("superseded_by") or source.get("retracted")):
        newer = ", ".join(source.get("superseded_by") or [])
        return f"replaced by {newer}: replaced versions are hidden unless include_superseded"
    if fact_type and source.get("fact_type") != fact_type:
        return f"its fact_type is {source.get('fact_type')}, not {fact_type}"
    start, end = timestamp(since, field_name="since"), timestamp(until, field_name="until")
    if created and start and created < start:
        return f"stored before since ({source.get('created_at')})"
    if created and end and created >= end:
        return f"stored at or after until ({source.get('created_at')})"
    return None


OWN_USED = ("semantic", "procedural")


def _episodes_fetch(scope: SubjectScope, ids: list[str]) -> dict[str, dict[str, Any]]:
    return store.memories_fetch(
        scope.reader(), ids=ids, memory_types=("episodic",), filters=scope.read_filters()
    )  # the types whose use recall counts (use_count, last_used_at)


def _plan(scope, text, k, types, at, include_superseded, narrowing, options, question_reads_english):
    """The legs' searches and the query embeddings, started now on worker threads: the first msearch
    (BM25, cross-lingual) goes out while the main and multilingual models embed the question."""
    from memory.inference.embeddings import (
        crosslingual_embedding_provider,
        embedding_provider,
        multilingual_embedding_provider,
    )

    multilingual = multilingual_embedding_provider() if options.multilingual else None
    crosslingual = crosslingual_embedding_provider() if options.crosslingual else None
    if not (options.bm25 or options.dense or multilingual or crosslingual):
        raise ValidationFailed("recall needs at least one leg (BM25, dense, multilingual, cross-lingual)")
    crosslingual_types = (
        crosslingual_judged_types(scope, types, question_reads_english, options) if crosslingual is not None else ()
    )
    if not crosslingual_types:
        crosslingual = None
    # The query embeddings (≈ 20 ms for all-mpnet-base-v2-int8, ≈ 25 ms for multilingual-e5, < 1 ms for
    # the cross-lingual model) run on worker threads while the first msearch is in flight; the
    # cross-lingual query is submitted first: its leg joins the first msearch.
    pending = {
        field_name: QUERY_EMBEDDER.submit(provider.embed_query, text)
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
    # The BM25 leg is one search over all the indices with collection statistics taken across them
    # (dfs_query_then_fetch), so a term is as rare in the catalog as in the user's own memories and
    # scores compare across types.
    plan = LegSearches(
        text=text,
        indices=indices,
        filters=filters,
        functions=functions,
        window=rc.window_size(k),
        crosslingual_types=crosslingual_types,
        origin=at or datetime.now(UTC),
    )
    return plan, pending
