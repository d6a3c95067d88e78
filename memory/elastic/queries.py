"""Query builders for the memory indices. Services and selectors never write query JSON inline."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from atlas_site.elastic.keys import owner_filter
from memory import recall_constants as rc
from memory.elastic.mappings import VECTOR_FIELDS, stored_vector


def own_documents_filter(*, tenant_id: str, user_id: str) -> dict[str, Any]:
    """Documents owned by the subject (never the shared catalog)."""
    return {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"term": {"user_id": user_id}}]}}


# A memory waiting for the person's review: stored, never recalled, listed or counted as current.
NOT_PENDING = {"bool": {"must_not": [{"term": {"review_state": "pending"}}]}}


def pending_filter() -> list[dict[str, Any]]:
    """Only the memories waiting for review."""
    return [{"term": {"review_state": "pending"}}]


def _missing(field: str) -> dict[str, Any]:
    return {"bool": {"must_not": [{"exists": {"field": field}}]}}


def _either(*clauses: dict[str, Any]) -> dict[str, Any]:
    return {"bool": {"should": list(clauses), "minimum_should_match": 1}}


def visibility_filter(
    *, include_superseded: bool, as_of: datetime | None, known_at: datetime | None = None
) -> list[dict[str, Any]]:
    """Which memories count — never a pending one (a proposal is not a memory until the person accepts it).

    Bitemporal: ``as_of`` is valid time — what held then, as we know it now: a memory said or stored by
    then; a fact from its stated valid_from (else from when it was recorded) until its valid_to (else until
    a newer version replaced it); a harshly corrected version never held. ``known_at`` is recorded time —
    what we had been told by then: stored by then, and replaced (or retracted) only by what came before it.
    Neither: the current memories, or every version with ``include_superseded``."""
    if as_of is None and known_at is None:
        if include_superseded:
            return [NOT_PENDING]
        return [NOT_PENDING, {"bool": {"must_not": _REPLACED}}]
    out = [NOT_PENDING]
    if known_at is not None:
        k = known_at.isoformat()
        out.append(_either({"range": {"created_at": {"lte": k}}}, _missing("created_at")))
        if not include_superseded and as_of is None:  # the versions current then
            out.append({"bool": {"must_not": [{"range": {"superseded_at": {"lte": k}}}]}})
        # Retracted only by a correction made by then.
        out.append(
            _either(_missing("retracted"), {"term": {"retracted": False}}, {"range": {"superseded_at": {"gt": k}}})
        )
    else:
        out.append({"bool": {"must_not": [{"term": {"retracted": True}}]}})
    if as_of is not None:
        t = as_of.isoformat()
        out += [
            _either({"range": {"timestamp": {"lte": t}}}, _missing("timestamp")),
            _either(
                {"range": {"valid_from": {"lte": t}}},
                {
                    "bool": {
                        "filter": [
                            _missing("valid_from"),
                            _either({"range": {"created_at": {"lte": t}}}, _missing("created_at")),
                        ]
                    }
                },
            ),
            _either(
                {"range": {"valid_to": {"gt": t}}},
                {
                    "bool": {
                        "filter": [
                            _missing("valid_to"),
                            _either({"range": {"superseded_at": {"gt": t}}}, _missing("superseded_at")),
                        ]
                    }
                },
            ),
        ]
    return out


# A fact that a newer version replaced, or that a harsh correction retracted.
_REPLACED = [{"exists": {"field": "superseded_by"}}, {"term": {"retracted": True}}]
# What a link to a forgotten memory becomes: in a replaced fact's ``superseded_by`` once its newer version
# is forgotten (it stays replaced: forgetting a correction does not bring back what it corrected), in a
# memory's ``source_episodes`` once a turn it cites is forgotten (its evidence was forgotten). No id: a
# forgotten id is free again — the same external id derives it for an unrelated memory, which the link
# would otherwise make this one's newer version or evidence. Never a memory id (those are hex).
FORGOTTEN_LINK = "(forgotten)"


def source_predicate(filters: list[dict[str, Any]]) -> Callable[[dict[str, Any]], bool] | None:
    """``filters`` as a test over one document's ``_source``, for a read by id that gets documents (an mget)
    instead of searching them — or None when any filter is not one of the few this product builds whose
    answer the document's own values decide: the code-level guard (``owner_filter``, a subject's or a
    tenant's), ``NOT_PENDING`` and the current view's "not replaced". Each is recognised by equality with
    what its builder makes, never interpreted: anything else (a time, a scope, metadata) is searched."""
    tests = []
    for clause in filters:
        test = _source_test(clause)
        if test is None:
            return None
        tests.append(test)
    return lambda source: all(test(source) for test in tests)


def _source_test(clause: dict[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    if clause == NOT_PENDING:
        return lambda source: "pending" not in _stored_values(source.get("review_state"))
    if clause == {"bool": {"must_not": _REPLACED}}:
        return lambda source: (
            not _stored_values(source.get("superseded_by"))
            and not {True, "true"}.intersection(_stored_values(source.get("retracted")))
        )
    tenant_id, user_id = _owner_named(clause)
    if not isinstance(tenant_id, str) or not isinstance(user_id, str | None):
        return None
    if clause != owner_filter(tenant_id=tenant_id, user_id=user_id):
        return None
    if user_id is None:
        return lambda source: tenant_id in _stored_values(source.get("tenant_id"))
    # The subject's own documents and the tenant's shared ones (no user_id at all).
    return lambda source: (
        tenant_id in _stored_values(source.get("tenant_id"))
        and (user_id in _stored_values(source.get("user_id")) or not _stored_values(source.get("user_id")))
    )


def _owner_named(clause: dict[str, Any]) -> tuple[Any, Any]:
    """The (tenant, user) an ``owner_filter`` would have been built for, if ``clause`` is one; the caller
    rebuilds it from them and compares, so a look-alike is never taken for it."""
    try:
        if set(clause) == {"term"}:
            return clause["term"]["tenant_id"], None
        inner = clause["bool"]
        return inner["filter"][0]["term"]["tenant_id"], inner["should"][0]["term"]["user_id"]
    except (KeyError, IndexError, TypeError):
        return None, None


def _stored_values(value: Any) -> list[Any]:
    """A source field's values as a term or exists query sees them: an array's items, null never a value."""
    items = value if isinstance(value, list) else [value]
    return [item for item in items if item is not None]


def _bounded(field: str, *, after: str | None, before: str | None) -> dict[str, Any]:
    """``field`` after ``after`` and before ``before`` (exclusive; either open)."""
    bounds = {k: v for k, v in (("gt", after), ("lt", before)) if v is not None}
    return {"range": {field: bounds}}


def _valid_during(*, start: str | None, end: str | None) -> dict[str, Any]:
    """A fact valid at some time in [start, end) (either open): from valid_from (as stated, else when it was
    recorded) until valid_to (as stated, else until a newer version replaced it, else still)."""
    clauses = []
    if end is not None:
        unstated = {
            "bool": {
                "must_not": [{"exists": {"field": "valid_from"}}],
                "filter": [_bounded("created_at", after=None, before=end)],
            }
        }
        clauses.append(
            {"bool": {"should": [_bounded("valid_from", after=None, before=end), unstated], "minimum_should_match": 1}}
        )
    if start is not None:
        replaced = {
            "bool": {
                "must_not": [{"exists": {"field": "valid_to"}}],
                "filter": [_bounded("superseded_at", after=start, before=None)],
            }
        }
        still = {"bool": {"must_not": [{"exists": {"field": "valid_to"}}, {"exists": {"field": "superseded_at"}}]}}
        clauses.append(
            {
                "bool": {
                    "should": [_bounded("valid_to", after=start, before=None), replaced, still],
                    "minimum_should_match": 1,
                }
            }
        )
    return {"bool": {"filter": clauses}}


# A memory whose text names a date (memory.services.prepare.dates_named).
DATED = {"exists": {"field": "mention_ranges"}}


def about_time_filter(*, start: date | None, end: date | None) -> list[dict[str, Any]]:
    """The memories about the days [start, end] (inclusive; either open, not both): a current memory that
    names a date in them (``mention_ranges``), an episode said on one of them, a current fact with stated
    validity holding then, and a replaced version over the time it held (a harshly corrected one never
    held). Pending proposals never count."""
    first, after_last = _day_bounds(start, end)
    mentioned = {
        "range": {
            "mention_ranges": {k: v for k, v in (("gte", first), ("lte", end and end.isoformat())) if v}
            | {"relation": "intersects"}
        }
    }
    said = {"range": {"timestamp": {k: v for k, v in (("gte", first), ("lt", after_last)) if v}}}
    valid = _valid_during(start=first, end=after_last)
    stated = {
        "bool": {
            "should": [{"exists": {"field": "valid_from"}}, {"exists": {"field": "valid_to"}}],
            "minimum_should_match": 1,
        }
    }
    current = {
        "bool": {
            "must_not": _REPLACED,
            "should": [mentioned, said, {"bool": {"filter": [stated, valid]}}],
            "minimum_should_match": 1,
        }
    }
    return [NOT_PENDING, {"bool": {"should": [current, _held(valid)], "minimum_should_match": 1}}]


def _day_bounds(start: date | None, end: date | None) -> tuple[str | None, str | None]:
    """[start, end] as days (inclusive) → (first day, the day after the last), either open, not both."""
    if start is None and end is None:
        raise ValueError("a time needs at least one bound")
    return (start.isoformat() if start else None, (end + timedelta(days=1)).isoformat() if end else None)


def _held(valid: dict[str, Any]) -> dict[str, Any]:
    """A replaced version of a fact, ``valid`` then (a harshly corrected one never held)."""
    return {
        "bool": {"filter": [{"exists": {"field": "superseded_by"}}, valid], "must_not": [{"term": {"retracted": True}}]}
    }


def current_or_held_filter(*, start: date | None, end: date | None) -> list[dict[str, Any]]:
    """What a question about the days [start, end] may find: the current memories, and the replaced versions
    of facts that held then ("Where did I live in June 2024?" is about the version that held in June)."""
    first, after_last = _day_bounds(start, end)
    held = _held(_valid_during(start=first, end=after_last))
    return [NOT_PENDING, {"bool": {"should": [{"bool": {"must_not": _REPLACED}}, held], "minimum_should_match": 1}}]


def replaced_filter() -> list[dict[str, Any]]:
    """The facts the current-only view hides: replaced or retracted."""
    return [{"bool": {"should": _REPLACED, "minimum_should_match": 1}}]


def _decay(field: str, origin: str) -> dict[str, Any]:
    return {
        "gauss": {
            field: {
                "origin": origin,
                "offset": f"{rc.DECAY_OFFSET_DAYS}d",
                "scale": f"{rc.DECAY_SCALE_DAYS}d",
                "decay": rc.DECAY_AT_SCALE,
            }
        }
    }


USE_BOOST_SCRIPT = (
    "1 + params.weight * Math.log(1 + (doc['use_count'].empty ? 0 : doc['use_count'].value)) / Math.log(10)"
)


def ranking_functions(
    *, origin: str, decay: bool, use_boost: bool, catalog_prior: bool, outcome: bool
) -> list[dict[str, Any]]:
    """Per memory type: decay on episodes' time and facts' last use, use boost, catalog prior, playbook outcome."""
    functions: list[dict[str, Any]] = []
    if decay:
        functions.append({"filter": {"term": {"memory_type": "episodic"}}, **_decay("timestamp", origin)})
        functions.append(
            {
                "filter": {
                    "bool": {
                        "filter": [
                            {"terms": {"memory_type": ["semantic", "archive"]}},
                            {"exists": {"field": "last_used_at"}},
                        ]
                    }
                },
                **_decay("last_used_at", origin),
            }
        )
    if use_boost:
        functions.append(
            {
                "filter": {"terms": {"memory_type": ["semantic", "archive", "procedural"]}},
                "script_score": {"script": {"source": USE_BOOST_SCRIPT, "params": {"weight": rc.USE_BOOST_WEIGHT}}},
            }
        )
    if catalog_prior:
        functions.append({"filter": {"term": {"memory_type": "catalog"}}, "weight": rc.CATALOG_PRIOR})
    if outcome:
        functions.append(
            {
                "filter": {"term": {"memory_type": "procedural"}},
                "field_value_factor": {
                    "field": "outcome_score",
                    "factor": 1 / rc.OUTCOME_NEUTRAL,
                    "missing": rc.OUTCOME_NEUTRAL,
                },
            }
        )
    return functions


def _scored(query: dict[str, Any], functions: list[dict[str, Any]]) -> dict[str, Any]:
    if not functions:
        return query
    return {
        "function_score": {"query": query, "functions": functions, "score_mode": "multiply", "boost_mode": "multiply"}
    }


def bm25_leg(
    *,
    memory_types: tuple[str, ...],
    text: str,
    filters: list[dict[str, Any]],
    functions: list[dict[str, Any]],
    size: int,
) -> dict[str, Any]:
    """The BM25 leg over ``memory_types``' indices, naming only the fields their documents have."""
    fields = list(dict.fromkeys(f for t in memory_types for f in rc.BM25_FIELDS_BY_TYPE[t]))
    match = {"multi_match": {"query": text, "fields": fields}}
    return {
        "query": _scored({"bool": {"must": [match], "filter": filters}}, functions),
        "size": size,
        "_source": {"excludes": VECTOR_FIELDS},
    }


def knn_leg(
    *,
    vector: list[float],
    filters: list[dict[str, Any]],
    functions: list[dict[str, Any]],
    size: int,
    field: str = "embedding",
) -> dict[str, Any]:
    """A kNN leg over ``field`` (``embedding``, or ``embedding_multilingual`` for the second model)."""
    knn = {
        "knn": {
            "field": field,
            "query_vector": stored_vector(vector),
            "k": size,
            "num_candidates": size * rc.KNN_CANDIDATES_PER_RESULT,
            "filter": filters,
        }
    }
    return {"query": _scored(knn, functions), "size": size, "_source": {"excludes": VECTOR_FIELDS}}


def ids_query(ids: list[str]) -> dict[str, Any]:
    return {"ids": {"values": ids}}


def ids_within(ids: list[str], filters: list[dict[str, Any]]) -> dict[str, Any]:
    """The documents with these ids that the filters also match."""
    return {"bool": {"filter": [ids_query(ids), *filters]}}


def links_to(ids: list[str], fields: tuple[str, ...], filters: list[dict[str, Any]]) -> dict[str, Any]:
    """The memories (the filters also match) whose link ``fields`` (``supersedes``, ``superseded_by``,
    ``proposal_for``, ``source_episodes``) name any of ``ids``."""
    named = [{"terms": {field: ids}} for field in fields]
    return {"bool": {"filter": [{"bool": {"should": named, "minimum_should_match": 1}}, *filters]}}


def proposals_for(target_ids: list[str], filters: list[dict[str, Any]]) -> dict[str, Any]:
    """The pending proposals (the filters also match) that would replace or change any of ``target_ids``."""
    return {"bool": {"filter": [{"terms": {"proposal_for": target_ids}}, *pending_filter(), *filters]}}


def list_query(
    *, filters: list[dict[str, Any]], memory_types: list[str] | None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    clauses = list(filters)
    if memory_types:
        clauses.append({"terms": {"memory_type": memory_types}})
    if extra:
        clauses.append(extra)
    return {"bool": {"filter": clauses}}


def previous_turn_body(*, filters: list[dict[str, Any]], user_id: str, session_id: str, before: str) -> dict[str, Any]:
    """The subject's latest earlier turn in a session."""
    return {
        "query": {
            "bool": {
                "filter": [
                    *filters,
                    {"term": {"user_id": user_id}},
                    {"term": {"session_id": session_id}},
                    {"range": {"timestamp": {"lt": before}}},
                ]
            }
        },
        "sort": [{"timestamp": "desc"}],
        "size": 1,
        "_source": ["text"],
    }


def next_turns_query(*, tenant_id: str, user_id: str | None, episode_ids: list[str]) -> dict[str, Any]:
    """The turns that follow any of ``episode_ids`` in their session (they carry it as their context): the
    subject's, or with ``user_id`` None the tenant's."""
    owner = [{"term": {"user_id": user_id}}] if user_id is not None else []
    return {
        "bool": {"filter": [{"term": {"tenant_id": tenant_id}}, *owner, {"terms": {"previous_turn_id": episode_ids}}]}
    }


def created_between(*, since: datetime | None, until: datetime | None) -> list[dict[str, Any]]:
    """Memories created in [since, until)."""
    bounds: dict[str, str] = {}
    if since is not None:
        bounds["gte"] = since.isoformat()
    if until is not None:
        bounds["lt"] = until.isoformat()
    return [{"range": {"created_at": bounds}}] if bounds else []


def field_equals(field: str, value: Any) -> dict[str, Any]:
    return {"term": {field: value}}


def episodes_after_body(
    *, filters: list[dict[str, Any]], user_id: str, after: list[Any] | None, size: int
) -> dict[str, Any]:
    """The subject's episodes in conversation order (timestamp, then id), after the sort values ``after``."""
    body: dict[str, Any] = {
        "query": {"bool": {"filter": [*filters, {"term": {"user_id": user_id}}]}},
        "sort": [{"timestamp": "asc"}, {"memory_id": "asc"}],
        "size": size,
        "_source": {"excludes": VECTOR_FIELDS},
    }
    if after is not None:
        body["search_after"] = after
    return body


def episodes_newer_query(*, tenant_id: str, user_id: str | None = None, after: str | None = None) -> dict[str, Any]:
    """A tenant's (or one subject's) episodes after the ISO time ``after`` (all of them without it)."""
    clauses: list[dict[str, Any]] = [{"term": {"tenant_id": tenant_id}}, {"exists": {"field": "user_id"}}]
    if user_id is not None:
        clauses.append({"term": {"user_id": user_id}})
    if after is not None:
        clauses.append({"range": {"timestamp": {"gt": after}}})
    return {"bool": {"filter": clauses}}


def per_subject_counts_body(*, query: dict[str, Any], max_subjects: int) -> dict[str, Any]:
    return {"query": query, "size": 0, "aggs": {"subjects": {"terms": {"field": "user_id", "size": max_subjects}}}}


def episodes_before_query(*, tenant_id: str, before: str) -> dict[str, Any]:
    """A tenant's episodes older than the ISO time ``before``."""
    return {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"range": {"timestamp": {"lt": before}}}]}}


def facts_citing_query(*, tenant_id: str) -> dict[str, Any]:
    """A tenant's facts (hot and archived) that cite episodes."""
    return {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"exists": {"field": "source_episodes"}}]}}


def current_facts_query(*, filters: list[dict[str, Any]], user_id: str) -> dict[str, Any]:
    return {
        "bool": {
            "filter": [*filters, {"term": {"user_id": user_id}}],
            "must_not": [
                {"exists": {"field": "superseded_by"}},
                {"term": {"retracted": True}},
                {"term": {"review_state": "pending"}},
            ],
        }
    }


def authority_filter(authority: str) -> list[dict[str, Any]]:
    """Facts and playbooks of one authority, as memory_authority() reads it: a document from before
    authority was stamped counts as ``consolidation`` when a run marked it, else as ``agent``."""
    stamped = {"term": {"authority": authority}}
    types = {"terms": {"memory_type": ["semantic", "procedural", "archive"]}}
    if authority not in ("agent", "consolidation"):
        return [types, stamped]
    marker = {"exists": {"field": "applied_events"}}
    inferred = {
        "bool": {
            "must_not": [{"exists": {"field": "authority"}}, *([marker] if authority == "agent" else [])],
            "filter": [marker] if authority == "consolidation" else [],
        }
    }
    return [types, {"bool": {"should": [stamped, inferred], "minimum_should_match": 1}}]


def count_body(*, filters: list[dict[str, Any]]) -> dict[str, Any]:
    """A search that only counts the documents ``filters`` match, exactly (no 10,000 cap)."""
    return {"query": {"bool": {"filter": list(filters)}}, "size": 0, "track_total_hits": True}
