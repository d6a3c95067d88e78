"""One recall: validate the question, run the legs, fuse, optionally rerank, and shape the top k."""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings

from atlas_site.errors import ValidationFailed
from atlas_site.observability.hooks import recall_observed, stage
from memory import recall_constants as rc
from memory.elastic import queries, store
from memory.elastic.indices import memory_type_of_index
from memory.elastic.mappings import VECTOR_FIELDS
from memory.inference.language_detection import reads_as_english
from memory.scope import SubjectScope
from memory.scoping import filters_fields, filters_parse
from memory.selectors import RECALL_TYPES, memory_shape
from memory.temporal import TimeRange, question_range
from memory.validation import id_list, list_filters, memory_types_check, timestamp
from tenants.models import MemorySubject

from .anchor import event_dated
from .embedding import QUERY_EMBEDDER
from .explain import Trace, expected_explain, filters_described, hit_explain
from .floor import Floored, floor_apply
from .folding import Citations, Lifted, evidence_attach, evidence_lift
from .fusion import fuse, leg_weight, near_duplicates_spread, replies_inherit
from .legs import LegSearches, crosslingual_judged_types, legs_search
from .newer import Placed, newer_statements_place
from .options import RecallOptions, RecallResult, RecallRun
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
    memory_types_check(types, allowed=RECALL_TYPES)
    return query.strip(), k, types


@recall_observed
def memory_recall(
    *,
    subject: MemorySubject,
    query: Any,
    k: Any = 10,
    memory_types: Any = None,
    include_superseded: bool = False,
    as_of: Any = None,
    known_at: Any = None,
    fact_type: Any = None,
    since: Any = None,
    until: Any = None,
    filters: Any = None,
    options: RecallOptions | None = None,
    fold_evidence: bool = True,
    explain: bool = False,
    expect: Any = None,
    min_score: Any = None,
    now: datetime | None = None,
) -> RecallResult:
    """One hybrid recall over the subject's memories and the tenant catalog.

    ``fact_type`` recalls facts of that type only; ``since``/``until`` only memories created in
    [since, until), ``filters`` only those of a scope (memory/scoping.py; the catalog has none) — filters of
    every leg, as :func:`memory.selectors.memory_list` applies them.
    A read only: the facts and playbooks it returned are in ``targets``; the interface that served the
    recall passes them to ``memory.tasks.recall_usage_schedule``, which counts it in the usage ledger and
    bumps use counts for an agent's recall only (evaluations and consolidation call neither).
    ``fold_evidence``: a current fact carries the episodes it cites as ``evidence``, and those episodes
    take no slot of their own (memory.recall.folding). ``explain``: each hit says why it ranked where it
    did, and ``expect`` (ids) says for each of those memories where it stood and what removed it
    (memory.recall.explain). Fewer than ``k`` come back when fewer clear the relevance floor, none for small
    talk (memory.recall.floor); ``min_score`` sets the request's own floor on the returned score instead.
    A question naming a time ("in May", "last week") also searches the memories about that time
    (memory.recall.legs, the time leg), read against ``now`` (the question's clock; the moment recall
    starts unless an evaluation replays a question asked earlier).
    """
    started = time.perf_counter()
    run = _run(
        subject=subject,
        query=query,
        k=k,
        memory_types=memory_types,
        include_superseded=include_superseded,
        as_of=as_of,
        known_at=known_at,
        fact_type=fact_type,
        since=since,
        until=until,
        filters=filters,
        options=options or RecallOptions(),
        fold_evidence=fold_evidence,
        explain=explain,
        expect=expect,
        min_score=min_score,
        now=now,
    )
    timings: dict[str, float] = {"embed": 0.0, "search": 0.0}
    trace = Trace() if run.traced else None
    if run.asked_time is not None and run.asked_time.event is not None and settings.ATLAS_TIME_LEG_EVENT:
        # "before I moved to Lisbon": the subject's memories date the move (memory.recall.anchor).
        run = dataclasses.replace(run, asked_time=event_dated(run.scope, run.asked_time))
    plan, pending = _plan(run)
    ranked = legs_search(reader=run.scope.reader(), plan=plan, options=run.options, pending=pending, timings=timings)
    with stage("fusion"):
        fused = _fused(run, ranked=ranked, plan=plan, trace=trace, timings=timings)
    t0 = time.perf_counter()
    with stage("folding"):
        citations = _citations_lookup(run, plan, fused) if run.fold_evidence else Citations()
        lifted = evidence_lift(fused, citations) if run.fold_evidence else Lifted(ranked=fused)
    timings["folding"] = (time.perf_counter() - t0) * 1000
    floored = (
        Floored(ranked=lifted.ranked, rule="off")
        if not (run.options.floor or run.min_score is not None)
        else floor_apply(
            lifted,
            legs=ranked,
            text=run.text,
            kind=run.turn_kind,
            floor=settings.ATLAS_RECALL_FLOOR if run.options.floor and settings.ATLAS_DENSE_PLAIN_SIMILARITY else 0.0,
            min_score=run.min_score,
            question_reads_english=run.question_reads_english,
            time_named=run.asked_time is not None and bool(run.asked_time.start or run.asked_time.end),
        )
    )
    placed = (
        newer_statements_place(
            floored.ranked, k=run.k, legs=ranked, cited={*citations.current, *citations.past, *lifted.folded}
        )
        if run.fold_evidence and run.options.newer and not (run.historic or run.include_superseded)
        else Placed(ranked=floored.ranked)
    )
    top = placed.ranked[: run.k]
    hits = [memory_shape(hit) | {"score": round(score, 6), "rank": rank} for rank, (_, score, hit) in enumerate(top, 1)]
    for shaped in hits:
        if shaped["id"] in placed.newer:
            shaped["newer_than"] = placed.newer[shaped["id"]]
    if run.fold_evidence:
        t0 = time.perf_counter()
        with stage("evidence"):
            evidence_attach(hits, fused, fetch=lambda ids: _episodes_fetch(run.scope, ids))
        timings["evidence"] = (time.perf_counter() - t0) * 1000
    targets = [(hit["_index"], memory_id) for memory_id, _, hit in top if hit["_source"].get("memory_type") in OWN_USED]
    result = RecallResult(hits=hits, timings_ms=timings, targets=targets, legs=[name for name, _leg in ranked])
    if trace is not None:
        result.explain = _explained(
            run, result=result, trace=trace, top=top, fused=fused, lifted=lifted, floored=floored
        )
    timings["total"] = (time.perf_counter() - started) * 1000
    return result


def _run(
    *,
    subject: MemorySubject,
    query: Any,
    k: Any,
    memory_types: Any,
    include_superseded: bool,
    as_of: Any,
    known_at: Any,
    fact_type: Any,
    since: Any,
    until: Any,
    filters: Any,
    options: RecallOptions,
    fold_evidence: bool,
    explain: bool,
    expect: Any,
    min_score: Any,
    now: datetime | None = None,
) -> RecallRun:
    """The recall's arguments checked (a clear 400 for each bad one) and gathered into one run."""
    text, k, types = _validate(query, k, memory_types)
    expected = id_list(expect, field_name="expect")[:MAX_EXPECTED]
    at = timestamp(as_of, field_name="as_of") if as_of is not None else None
    known = timestamp(known_at, field_name="known_at") if known_at is not None else None
    narrowing = list_filters(fact_type=fact_type, since=since, until=until) + filters_parse(filters)
    if min_score is not None and (isinstance(min_score, bool) or not isinstance(min_score, int | float)):
        raise ValidationFailed("min_score must be a number", field="min_score")
    if fact_type is not None:
        if "semantic" not in types:
            raise ValidationFailed("fact_type recalls facts only: include semantic in the types", field="fact_type")
        types = ("semantic",)
    origin = at or now or datetime.now(UTC)
    reads_english = reads_as_english(text)
    return RecallRun(
        scope=SubjectScope.of(subject),
        text=text,
        k=k,
        types=types,
        as_of=at,
        known_at=known,
        include_superseded=include_superseded,
        fact_type=fact_type,
        since=since,
        until=until,
        narrowing=narrowing,
        scoped_by=filters_fields(filters) if filters else [],
        options=options,
        question_reads_english=reads_english,
        expected=expected,
        explain=explain,
        fold_evidence=fold_evidence,
        min_score=float(min_score) if min_score is not None else None,
        turn_kind=turn_classify(text=text),
        origin=origin,
        asked_time=question_range(text, now=origin) if reads_english and options.time else None,
    )


def _time_described(asked: TimeRange) -> dict[str, Any]:
    """The time the question asks about, for explain: its days, and the event that dated them."""
    described: dict[str, Any] = {
        "start": asked.start.isoformat() if asked.start else None,
        "end": asked.end.isoformat() if asked.end else None,
        "asks_when": asked.asks_when,
    }
    if asked.event is not None:
        described["event"] = {"bound": asked.event.bound, "words": asked.event.event, "dated_by": asked.dated_by}
    return described


def _fused(run: RecallRun, *, ranked: list, plan: LegSearches, trace: Trace | None, timings: dict[str, float]) -> list:
    """The legs as one ranked list: fused, replies inheriting, near-duplicates spread, optionally reranked."""
    t0 = time.perf_counter()
    shares = trace.fusion if trace is not None else None
    fused = fuse(
        [leg for _name, leg in ranked],
        method=plan.method,
        language_aware=settings.ATLAS_LANGUAGE_AWARE_FUSION,
        question_reads_english=run.question_reads_english,
        shares=shares,
    )
    if trace is not None:
        trace.legs = ranked
        trace.fused = {memory_id: score for memory_id, score, _ in fused}
    fused = replies_inherit(fused, settings.ATLAS_REPLY_INHERITANCE)
    # Ranking for turns: priors by the kind of turn (memory.recall.turn_priors), within the window.
    priors = trace.turn_priors if trace is not None else None
    fused = turn_priors_apply(
        fused, text=run.text, kind=run.turn_kind, window=plan.window, priors=priors, held_then=plan.held_then
    )
    if trace is not None:
        trace.turn_kind = run.turn_kind
    # Within the window only: the comparison is quadratic, and beyond it nothing reaches the top k.
    moved = trace.moved if trace is not None else None
    spread = near_duplicates_spread(fused[: plan.window], settings.ATLAS_DEDUP_JACCARD, moved_ids=moved)
    fused = spread + fused[plan.window :]
    timings["fusion"] = (time.perf_counter() - t0) * 1000
    use_rerank = run.options.rerank if run.options.rerank is not None else settings.ATLAS_RERANK_DEFAULT
    if use_rerank and fused:
        from memory.inference.rerank import rerank_provider, reranked

        t0 = time.perf_counter()
        with stage("rerank"):
            fused = reranked(rerank_provider(), run.text, fused[: max(plan.window, run.k)], now=run.origin)
        timings["rerank"] = (time.perf_counter() - t0) * 1000
        if trace is not None:
            trace.reranked = True
    return fused


def _explained(
    run: RecallRun, *, result: RecallResult, trace: Trace, top: list, fused: list, lifted: Lifted, floored: Floored
) -> dict[str, Any]:
    """The recall's explanation: per hit (with ``explain``), the filters, and the expected memories."""
    if run.explain:
        fused_rank = {memory_id: rank for rank, (memory_id, _, _) in enumerate(fused, start=1)}
        for shaped, (memory_id, _, hit) in zip(result.hits, top, strict=True):
            shaped["explain"] = hit_explain(
                memory_id,
                hit,
                trace=trace,
                origin=run.origin,
                options=run.options,
                lifted=lifted,
                fused_rank=fused_rank,
            )
            if "newer_than" in shaped:
                shaped["explain"]["newer_than"] = {
                    "fact": shaped["newer_than"],
                    "fused_rank": fused_rank.get(memory_id),
                    "why": "said after the fact was stored and stated by no fact yet: placed next to it, "
                    "as it may change what the fact says",
                }
    out: dict[str, Any] = {
        "filters": filters_described(**run.filters()),
        "fusion": {name: leg.weight for name, leg in trace.legs} | {"method": settings.ATLAS_FUSION},
        "turn_kind": trace.turn_kind,
        "floor": floored.rule,
    }
    if run.asked_time is not None:
        out["time"] = _time_described(run.asked_time)
    if "bm25_pool" in result.timings_ms:  # memory.recall.lexical: no BM25 search, the leg judged the candidates
        out["bm25_leg"] = "scored in the app over the other legs' candidates (ATLAS_BM25_POOL)"
    if run.expected:
        scope = run.scope
        out["expected"] = expected_explain(
            run.expected,
            top=top,
            ranked=fused,
            lifted=lifted,
            dropped=floored.dropped,
            trace=trace,
            k=run.k,
            fetch=lambda ids: store.memories_fetch(
                scope.reader(), ids=ids, memory_types=(*RECALL_TYPES, "archive"), filters=scope.read_filters()
            ),
            why_filtered=lambda source: _why_filtered(source, run),
        )
    return out


MAX_EXPECTED = 20  # memories an ``expect`` may name


def _why_filtered(source: dict[str, Any], run: RecallRun) -> str | None:
    """Which of this recall's filters keeps ``source`` out, in words; None when none does."""
    memory_type = "semantic" if source.get("memory_type") == "archive" else source.get("memory_type")
    if memory_type not in run.types:
        return f"its type ({memory_type}) was not searched"
    created = timestamp(source.get("created_at"), field_name="created_at")
    if run.known_at is not None and created and created > run.known_at:
        return f"stored after known_at ({source.get('created_at')})"
    if run.as_of is not None and (why := _not_valid_then(source, run.as_of)):
        return why
    if not run.historic and not run.include_superseded and (source.get("superseded_by") or source.get("retracted")):
        newer = ", ".join(source.get("superseded_by") or [])
        asked = run.asked_time
        if asked is None or not (asked.start or asked.end) or not _held_then_searched(run):
            return f"replaced by {newer}: replaced versions are hidden unless include_superseded"
        # A question naming a time shows the replaced versions that held then (queries.current_or_held_filter).
        if source.get("retracted"):
            return f"a harsh correction ({newer}) replaced it: it never held, not even at the time asked"
        if not _held_during(source, start=asked.start, end=asked.end):
            return f"replaced by {newer} and it did not hold during the time asked ({_days(asked)})"
    if run.fact_type and source.get("fact_type") != run.fact_type:
        return f"its fact_type is {source.get('fact_type')}, not {run.fact_type}"
    start, end = timestamp(run.since, field_name="since"), timestamp(run.until, field_name="until")
    if created and start and created < start:
        return f"stored before since ({source.get('created_at')})"
    if created and end and created >= end:
        return f"stored at or after until ({source.get('created_at')})"
    return None


def _held_then_searched(run: RecallRun) -> bool:
    """Whether this recall's legs searched the replaced versions that held at the time asked (as _plan)."""
    return leg_weight("time", run.text, method=settings.ATLAS_FUSION) > 0


def _held_during(source: dict[str, Any], *, start: date | None, end: date | None) -> bool:
    """Whether a replaced version held on some day of [start, end] (either open): from valid_from (else
    when recorded) until valid_to (else when replaced), as memory.elastic.queries._valid_during."""
    began = timestamp(source.get("valid_from") or source.get("created_at"), field_name="valid_from")
    ended = timestamp(source.get("valid_to") or source.get("superseded_at"), field_name="valid_to")
    if (
        end is not None
        and began is not None
        and began >= datetime.combine(end + timedelta(days=1), datetime.min.time(), UTC)
    ):
        return False
    return not (start is not None and ended is not None and ended <= datetime.combine(start, datetime.min.time(), UTC))


def _days(asked: TimeRange) -> str:
    return f"{asked.start.isoformat() if asked.start else '…'} to {asked.end.isoformat() if asked.end else '…'}"


def _not_valid_then(source: dict[str, Any], at: datetime) -> str | None:
    """Why ``source`` did not hold at ``at`` (valid time, memory.elastic.queries.visibility_filter), or None."""
    if source.get("retracted"):
        return "a harsh correction replaced it: it never held"
    said = timestamp(source.get("timestamp"), field_name="timestamp")
    began = timestamp(source.get("valid_from") or source.get("created_at"), field_name="valid_from")
    if (said and said > at) or (began and began > at):
        return f"not yet so at as_of (from {source.get('valid_from') or source.get('timestamp') or source.get('created_at')})"
    ended = timestamp(source.get("valid_to") or source.get("superseded_at"), field_name="valid_to")
    if ended and ended <= at:
        return f"no longer so at as_of (until {source.get('valid_to') or source.get('superseded_at')})"
    return None


# The types whose use recall counts (use_count, last_used_at).
OWN_USED = ("semantic", "procedural")
# The turns whose citing facts recall looks up: those that could still reach the top k once facts are
# lifted and turns folded (each fold frees one slot).
LIFT_HEAD_PER_K, LIFT_HEAD_MIN = 3, 20
# The facts one lookup reads: a turn is cited by a few facts at most.
CITING_FACTS_MAX = 200
# How far the lookup follows a replaced version's successors to the chain's current version.
CHAIN_STEPS_MAX = 5


def _citations_lookup(run: RecallRun, plan: LegSearches, ranked: list) -> Citations:
    """Which facts cite the turns at the head of the ranking (memory.recall.folding): the current facts this
    recall may show and the replaced versions citing them, in one search (each kind a named clause: on the
    embedded engine every search reads the whole index); for a turn cited only by replaced versions, the
    chain's current version (read only then)."""
    head = ranked[: LIFT_HEAD_PER_K * run.k + LIFT_HEAD_MIN]
    turns = [memory_id for memory_id, _, hit in head if hit["_source"].get("memory_type") == "episodic"]
    if not turns or "semantic" not in run.types:
        return Citations()
    fact_indices = tuple(t for t in plan.indices if t in ("semantic", "archive"))
    every_version = [*run.scope.read_filters(), queries.NOT_PENDING]
    # Every version citing the turns; those this recall may show match the named clause (its filters hold
    # the same guard and NOT_PENDING, so they are a subset): a named clause costs the engine less than a
    # second search, and Elasticsearch reports it per hit (matched_queries). Filters the documents decide
    # themselves (the current view: the guard, not pending, not replaced) are read from the hits instead.
    shown_test = queries.source_predicate(plan.filters)
    query: dict[str, Any] = {"filter": [{"terms": {"source_episodes": turns}}, *every_version]}
    if shown_test is None:
        query["should"] = [{"bool": {"filter": plan.filters, "_name": _SHOWN}}]
    answer = store.memories_search(
        run.scope.reader(),
        memory_types=("semantic", "archive"),
        body={"query": {"bool": query}, "size": 2 * CITING_FACTS_MAX, "_source": {"excludes": VECTOR_FIELDS}},
        what="find the facts citing the ranked turns",
    )
    wanted, citations = set(turns), Citations()
    versions = answer["hits"]["hits"]
    shown = [
        hit
        for hit in versions
        if (_SHOWN in (hit.get("matched_queries") or ()) if shown_test is None else shown_test(hit["_source"]))
        and memory_type_of_index(hit["_index"]) in fact_indices
    ]
    for hit in shown:  # a replaced or retracted version is never shown as the current fact
        source = hit["_source"]
        if source.get("memory_type") != "semantic" or source.get("superseded_by") or source.get("retracted"):
            continue
        citations.facts[hit["_id"]] = hit
        for turn in wanted.intersection(source.get("source_episodes") or ()):
            citations.current.setdefault(turn, hit["_id"])
    past: dict[str, str] = {}  # turn → a replaced version citing it
    successors: dict[str, list[str]] = {}
    for hit in versions:
        if hit["_source"].get("superseded_by"):
            successors[hit["_id"]] = list(hit["_source"]["superseded_by"])
            for turn in wanted.intersection(hit["_source"].get("source_episodes") or ()) - set(citations.current):
                past.setdefault(turn, hit["_id"])
    if past and not (run.include_superseded or run.historic):  # a look at history shows the old turns as they were
        heads = _current_versions(run, plan, {old: successors[old] for old in set(past.values())}, every_version)
        for turn, old in past.items():
            if old in heads:
                citations.past[turn] = (old, heads[old]["_id"])
                citations.facts[heads[old]["_id"]] = heads[old]
    return citations


# The named clause of the citing-facts search: a fact this recall may show.
_SHOWN = "shown"


def _current_versions(
    run: RecallRun, plan: LegSearches, successors: dict[str, list[str]], every_version: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """replaced version → the hit of its chain's current version, when this recall may show it: the
    successors followed (each step one read), the last one read with the recall's own filters."""
    reader, found = run.scope.reader(), {}
    frontier = successors
    for _ in range(CHAIN_STEPS_MAX):
        ids = sorted({i for newer in frontier.values() for i in newer})
        if not ids:
            break
        hits = store.memories_fetch(reader, ids=ids, memory_types=("semantic", "archive"), filters=every_version)
        following: dict[str, list[str]] = {}
        for old, newer in frontier.items():
            for memory_id in newer:
                source = (hits.get(memory_id) or {}).get("_source", {})
                if source.get("superseded_by"):
                    following.setdefault(old, []).extend(source["superseded_by"])
                elif source and not source.get("retracted"):
                    found[old] = hits[memory_id]["_id"]
        frontier = {old: newer for old, newer in following.items() if old not in found}
    if not found:
        return {}
    shown = store.memories_fetch(
        reader, ids=sorted(set(found.values())), memory_types=("semantic",), filters=plan.filters
    )
    return {old: shown[head] for old, head in found.items() if head in shown}


def _episodes_fetch(scope: SubjectScope, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The cited turns by their own ids, with the subject's key (an mget: no search), each also held to the
    code-level guard."""
    return store.memories_get(scope.reader(), ids=ids, memory_type="episodic", filters=scope.read_filters())


def _plan(run: RecallRun) -> tuple[LegSearches, dict[str, Any]]:
    """The legs' searches and the query embeddings, started now on worker threads: the first msearch
    (BM25, cross-lingual) goes out while the main and multilingual models embed the question."""
    from memory.inference.embeddings import (
        crosslingual_embedding_provider,
        embedding_provider,
        multilingual_embedding_provider,
    )

    options, scope, types = run.options, run.scope, run.types
    multilingual = multilingual_embedding_provider() if options.multilingual else None
    crosslingual = crosslingual_embedding_provider() if options.crosslingual else None
    if not (options.bm25 or options.dense or multilingual or crosslingual):
        raise ValidationFailed("recall needs at least one leg (BM25, dense, multilingual, cross-lingual)")
    crosslingual_types = (
        crosslingual_judged_types(scope, types, run.question_reads_english, options) if crosslingual is not None else ()
    )
    if not crosslingual_types:
        crosslingual = None
    # The query embeddings run on worker threads while the first msearch is in flight (their cost:
    # docs/recall-latency.md); the cross-lingual query is submitted first: its leg joins the first msearch.
    pending = {
        field_name: QUERY_EMBEDDER.submit(provider.embed_query, run.text)
        for field_name, provider in (
            ("embedding_crosslingual", crosslingual),
            ("embedding", embedding_provider() if options.dense else None),
            ("embedding_multilingual", multilingual),
        )
        if provider is not None
    }
    asked = run.asked_time
    named = asked is not None and bool(asked.start or asked.end)
    # A question naming a time may find what held then: the replaced versions valid during it, in every leg
    # (unless the request already chose its view of history with as_of, known_at or include_superseded).
    held_then = (
        named
        and not (run.historic or run.include_superseded)
        and leg_weight("time", run.text, method=settings.ATLAS_FUSION) > 0
    )
    wider = run.include_superseded or run.historic or held_then
    indices = types + (("archive",) if wider and "semantic" in types else ())
    visible = (
        queries.current_or_held_filter(start=asked.start, end=asked.end)
        if held_then
        else queries.visibility_filter(
            include_superseded=run.include_superseded, as_of=run.as_of, known_at=run.known_at
        )
    )
    filters = [*scope.read_filters(), *visible, *run.narrowing]
    functions = queries.ranking_functions(
        origin=run.origin.isoformat(),
        decay=options.decay,
        use_boost=options.use_boost,
        catalog_prior=options.catalog_prior,
        outcome=options.outcome,
    )
    # The BM25 leg is one search over all the indices with collection statistics taken across them
    # (dfs_query_then_fetch), so a term is as rare in the catalog as in the user's own memories and
    # scores compare across types.
    plan = LegSearches(
        text=run.text,
        indices=indices,
        filters=filters,
        functions=functions,
        window=rc.window_size(run.k),
        crosslingual_types=crosslingual_types,
        origin=run.origin,
        held_then=held_then,
    )
    if named:
        # The memories about the time asked: a replaced fact too, over the time it held ("where did I live
        # in June?"), hence the archive; within whatever an explicit as_of or include_superseded allows.
        plan.about_time = [
            *scope.read_filters(),
            *queries.about_time_filter(start=asked.start, end=asked.end),
            *(
                queries.visibility_filter(include_superseded=True, as_of=run.as_of, known_at=run.known_at)
                if run.historic
                else ()
            ),
            *run.narrowing,
        ]
        plan.about_time_indices = types + (("archive",) if "semantic" in types else ())
    elif asked is not None and asked.asks_when and settings.ATLAS_TIME_LEG_WHEN:
        # "When did I move to Lisbon?" names no time: the memories that carry a date are the ones that can
        # answer it (a turn saying "last month" resolved at write time).
        plan.about_time = [*filters, queries.DATED]
        plan.about_time_indices = indices
        plan.about_time_when = True
    return plan, pending
