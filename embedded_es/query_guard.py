"""The search bodies the gateway lets a principal send: a closed list of keys, queries and aggregations.

The gateway enforces document level security by adding the role's query as a filter (dls.py). That
is only sound for request parts that read nothing but the documents the filtered query matches,
so every part of a search body is checked against the lists below; anything else is refused with
Elasticsearch's error shape before the engine sees it. Parts that make the engine read *other*
documents are not forwarded as sent: a terms lookup (``{"terms": {"f": {"index", "id", "path"}}}``)
and a ``more_like_this`` item that names a document are resolved by the gateway with the caller's
own privileges and DLS (TermsQueryBuilder and MoreLikeThisQueryBuilder fetch them with the
caller's security context in Elasticsearch, so a hidden document contributes nothing).

Refused outright, because the engine would evaluate them outside the filter: ``wrapper`` (a query
the gateway could not see), ``percolate`` with a stored document, ``geo_shape`` with an indexed
shape, the join queries, ``global`` and the ``significant_*`` aggregations under DLS (their
background set is the whole index), ``suggest`` and ``profile`` under DLS
(SearchRequestInterceptor refuses both), and ``ext``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import EsError

# Compound queries: where their sub-queries sit. A value of None: the clause holds no query.
COMPOUND_QUERIES: dict[str, tuple[str, ...]] = {
    "bool": ("must", "should", "filter", "must_not"),
    "boosting": ("positive", "negative"),
    "constant_score": ("filter",),
    "dis_max": ("queries",),
    "function_score": ("query",),
    "script_score": ("query",),
    "nested": ("query",),
    "pinned": ("organic",),
}
_COMPOUND = COMPOUND_QUERIES
# Leaf queries: they look at the document being matched and nothing else.
_LEAF = {
    "match",
    "match_phrase",
    "match_phrase_prefix",
    "match_bool_prefix",
    "multi_match",
    "combined_fields",
    "query_string",
    "simple_query_string",
    "term",
    "range",
    "exists",
    "ids",
    "prefix",
    "wildcard",
    "regexp",
    "fuzzy",
    "match_all",
    "match_none",
    "intervals",
    "script",
    "distance_feature",
    "rank_feature",
    "geo_distance",
    "geo_bounding_box",
    "geo_polygon",
    "terms_set",
    "knn",
    "semantic",
    "sparse_vector",
    "span_term",
}
_REFUSED_QUERIES = {
    "wrapper": "its query is encoded, so the gateway cannot check it",
    "percolate": "it can read a stored document",
    "has_child": "a join query evaluates documents outside the filter",
    "has_parent": "a join query evaluates documents outside the filter",
    "parent_id": "a join query evaluates documents outside the filter",
    "geo_shape": "it can read an indexed shape from another document",
}

_SEARCH_KEYS = {
    "query",
    "knn",
    "retriever",
    "aggs",
    "aggregations",
    "size",
    "from",
    "sort",
    "_source",
    "track_total_hits",
    "track_scores",
    "min_score",
    "post_filter",
    "highlight",
    "explain",
    "stored_fields",
    "docvalue_fields",
    "fields",
    "script_fields",
    "runtime_mappings",
    "search_after",
    "timeout",
    "terminate_after",
    "version",
    "seq_no_primary_term",
    "indices_boost",
    "collapse",
    "rescore",
    "profile",
    "pit",
    "rank",
    "stats",
    "suggest",
    "slice",
}
_AGGREGATIONS = {
    "terms",
    "multi_terms",
    "rare_terms",
    "histogram",
    "date_histogram",
    "auto_date_histogram",
    "range",
    "date_range",
    "avg",
    "sum",
    "min",
    "max",
    "stats",
    "extended_stats",
    "cardinality",
    "value_count",
    "percentiles",
    "percentile_ranks",
    "median_absolute_deviation",
    "top_hits",
    "top_metrics",
    "missing",
    "composite",
    "nested",
    "reverse_nested",
    "sampler",
    "weighted_avg",
    "filter",
    "filters",
    "avg_bucket",
    "max_bucket",
    "min_bucket",
    "sum_bucket",
    "stats_bucket",
    "bucket_script",
    "bucket_selector",
    "bucket_sort",
    "cumulative_sum",
    "derivative",
    "moving_fn",
}
_BACKGROUND_AGGREGATIONS = {"significant_terms", "significant_text"}
_AGG_KEYS = {"aggs", "aggregations", "meta"}


def parsing_error(reason: str) -> EsError:
    return EsError(400, "parsing_exception", reason)


def refused(reason: str) -> EsError:
    return EsError(400, "illegal_argument_exception", f"[embedded_es] {reason}")


@dataclass
class Lookup:
    """A document the engine would fetch on the caller's behalf; the gateway fetches it as the caller."""

    index: str | None  # None: the search's own indices
    doc_id: str
    path: str | None  # terms lookup: the field holding the terms; None for a more_like_this item
    apply: Callable[[dict[str, Any] | None], None]  # given the visible source (None: hidden/missing)


@dataclass
class Inspection:
    lookups: list[Lookup] = field(default_factory=list)


def _one_clause(node: Any, where: str) -> tuple[str, Any]:
    if not isinstance(node, dict):
        raise parsing_error(f"[{where}] query malformed, must start with start_object")
    if len(node) != 1:
        raise parsing_error(f"[{where}] query malformed, expected exactly one query clause, found {len(node)}")
    return next(iter(node.items()))


def check_query(node: Any, seen: Inspection, *, where: str = "query", dls: bool) -> None:
    """Check one query clause (and everything inside it) in place."""
    kind, spec = _one_clause(node, where)
    if kind in _REFUSED_QUERIES:
        raise refused(f"the [{kind}] query is not supported by the embedded gateway: {_REFUSED_QUERIES[kind]}")
    if kind == "terms":
        _check_terms(node, spec, seen)
        return
    if kind == "more_like_this":
        _check_more_like_this(node, spec, seen)
        return
    if kind in _COMPOUND:
        if not isinstance(spec, dict):
            raise parsing_error(f"[{kind}] query malformed, must start with start_object")
        for slot in _COMPOUND[kind]:
            if slot in spec:
                _check_slot(spec[slot], seen, where=f"{kind}.{slot}", dls=dls)
        if kind == "function_score":
            for fn in spec.get("functions") or []:
                if isinstance(fn, dict) and "filter" in fn:
                    check_query(fn["filter"], seen, where="function_score.functions.filter", dls=dls)
        return
    if kind in _LEAF:
        if kind == "knn" and isinstance(spec, dict):
            check_knn(spec, seen, dls=dls)
        return
    raise parsing_error(f"unknown query [{kind}]")


def _check_slot(value: Any, seen: Inspection, *, where: str, dls: bool) -> None:
    for item in value if isinstance(value, list) else [value]:
        check_query(item, seen, where=where, dls=dls)


def _check_terms(node: dict[str, Any], spec: Any, seen: Inspection) -> None:
    if not isinstance(spec, dict):
        raise parsing_error("[terms] query malformed, must start with start_object")
    for field_name, value in list(spec.items()):
        if field_name == "boost" or not isinstance(value, dict):
            continue
        index, doc_id, path = value.get("index"), value.get("id"), value.get("path")
        if not isinstance(doc_id, str) or not isinstance(path, str) or not (index is None or isinstance(index, str)):
            raise parsing_error("[terms] query does not support a lookup without [index], [id] and [path] strings")
        unknown = set(value) - {"index", "id", "path", "routing"}
        if unknown:
            raise parsing_error(f"[terms] query lookup does not support {sorted(unknown)}")

        def apply(source: dict[str, Any] | None, field_name: str = field_name, path: str = path) -> None:
            spec[field_name] = _values_at(source, path) if source is not None else []

        seen.lookups.append(Lookup(index=index, doc_id=doc_id, path=path, apply=apply))


def _values_at(source: dict[str, Any], path: str) -> list[Any]:
    """The terms at a dotted ``path`` of a document's source, arrays flattened (XContentMapValues.extractRawValues)."""
    current: list[Any] = [source]
    for key in path.split("."):
        following: list[Any] = []
        for node in current:
            for item in node if isinstance(node, list) else [node]:
                if isinstance(item, dict) and key in item:
                    following.append(item[key])
        current = following
    out: list[Any] = []
    for value in current:
        out.extend(
            v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str | int | float | bool)
        )
    return out


def _check_more_like_this(node: dict[str, Any], spec: Any, seen: Inspection) -> None:
    if not isinstance(spec, dict):
        raise parsing_error("[more_like_this] query malformed, must start with start_object")
    for key in ("like", "unlike"):
        if key not in spec:
            continue
        items = spec[key] if isinstance(spec[key], list) else [spec[key]]
        kept: list[Any] = list(items)
        spec[key] = kept
        for position, item in enumerate(items):
            if isinstance(item, str):
                continue
            if not isinstance(item, dict):
                raise parsing_error(f"[more_like_this] [{key}] items must be strings or objects")
            if "doc" in item and "_id" not in item:
                continue  # an artificial document: text the caller sent, nothing fetched
            doc_id = item.get("_id")
            index = item.get("_index")
            if not isinstance(doc_id, str) or not (index is None or isinstance(index, str)):
                raise parsing_error(f"[more_like_this] [{key}] items need an [_id] string")

            def apply(source: dict[str, Any] | None, kept: list[Any] = kept, position: int = position) -> None:
                if source is None:
                    kept[position] = None

            seen.lookups.append(Lookup(index=index, doc_id=doc_id, path=None, apply=apply))


def mlt_finish(node: Any) -> Any:
    """After lookups: drop hidden items; a more_like_this left with nothing to be like matches nothing."""
    if isinstance(node, list):
        return [mlt_finish(n) for n in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"more_like_this"} and isinstance(node["more_like_this"], dict):
        spec = dict(node["more_like_this"])
        for key in ("like", "unlike"):
            if key in spec:
                spec[key] = [i for i in spec[key] if i is not None]
        if not spec.get("like"):
            return {"match_none": {}}
        if "unlike" in spec and not spec["unlike"]:
            del spec["unlike"]
        return {"more_like_this": spec}
    return {k: mlt_finish(v) for k, v in node.items()}


def check_knn(spec: Any, seen: Inspection, *, dls: bool) -> None:
    for item in spec if isinstance(spec, list) else [spec]:
        if not isinstance(item, dict):
            raise parsing_error("[knn] malformed, must be an object or an array of objects")
        if "query_vector_builder" in item:
            raise refused("[knn] query_vector_builder is not supported by the embedded engine")
        if "filter" in item:
            _check_slot(item["filter"], seen, where="knn.filter", dls=dls)


def check_retriever(node: Any, seen: Inspection, *, dls: bool) -> None:
    if not isinstance(node, dict) or len(node) != 1:
        raise parsing_error("[retriever] malformed, expected exactly one retriever")
    ((kind, spec),) = node.items()
    if not isinstance(spec, dict):
        raise parsing_error(f"[{kind}] retriever malformed, must start with start_object")
    if kind == "standard":
        for key in ("query", "filter"):
            if key in spec:
                _check_slot(spec[key], seen, where=f"retriever.standard.{key}", dls=dls)
    elif kind == "knn":
        check_knn(spec, seen, dls=dls)
    elif kind == "rrf":
        for child in spec.get("retrievers") or []:
            check_retriever(child, seen, dls=dls)
        if "filter" in spec:
            _check_slot(spec["filter"], seen, where="retriever.rrf.filter", dls=dls)
    else:
        raise refused(f"the [{kind}] retriever is not supported by the embedded gateway")


def check_aggregations(aggs: Any, seen: Inspection, *, dls: bool) -> None:
    if not isinstance(aggs, dict):
        raise parsing_error("Aggregation definition must be an object")
    for name, definition in aggs.items():
        if not isinstance(definition, dict):
            raise parsing_error(f"Aggregation definition for [{name}] must be an object")
        kinds = [k for k in definition if k not in _AGG_KEYS]
        if len(kinds) != 1:
            raise parsing_error(f"Expected exactly one aggregation type for [{name}], found {len(kinds)}")
        kind = kinds[0]
        if kind == "global" or (dls and kind in _BACKGROUND_AGGREGATIONS):
            raise refused(
                f"the [{kind}] aggregation reads documents outside the query and cannot be combined with "
                "document level security by the embedded gateway"
            )
        if kind not in _AGGREGATIONS and kind not in _BACKGROUND_AGGREGATIONS:
            raise parsing_error(f"Unknown aggregation type [{kind}] did you mean any of []?")
        spec = definition[kind]
        if kind == "filter":
            check_query(spec, seen, where=f"aggs.{name}.filter", dls=dls)
        elif kind == "filters" and isinstance(spec, dict):
            filters = spec.get("filters")
            for query in filters.values() if isinstance(filters, dict) else filters or []:
                check_query(query, seen, where=f"aggs.{name}.filters", dls=dls)
        elif kind in _BACKGROUND_AGGREGATIONS and isinstance(spec, dict) and "background_filter" in spec:
            check_query(spec["background_filter"], seen, where=f"aggs.{name}.background_filter", dls=dls)
        for sub in ("aggs", "aggregations"):
            if sub in definition:
                check_aggregations(definition[sub], seen, dls=dls)


def check_search(body: dict[str, Any], *, dls: bool) -> Inspection:
    """Check a whole search body; the lookups it holds are returned for the gateway to resolve."""
    seen = Inspection()
    for key in body:
        if key not in _SEARCH_KEYS:
            raise parsing_error(f"Unknown key for a {_token_of(body[key])} in [{key}].")
    if dls and "suggest" in body:
        # security/authz/interceptor/SearchRequestInterceptor.java
        raise EsError(400, "security_exception", "Suggest isn't supported if document level security is enabled")
    if dls and body.get("profile"):
        raise EsError(
            400, "security_exception", "A search request cannot be profiled if document level security is enabled"
        )
    if "query" in body:
        check_query(body["query"], seen, dls=dls)
    if "post_filter" in body:
        check_query(body["post_filter"], seen, where="post_filter", dls=dls)
    if "knn" in body:
        check_knn(body["knn"], seen, dls=dls)
    if "retriever" in body:
        check_retriever(body["retriever"], seen, dls=dls)
    for key in ("aggs", "aggregations"):
        if key in body:
            check_aggregations(body[key], seen, dls=dls)
    for rescore in body.get("rescore") or [] if isinstance(body.get("rescore"), list) else [body.get("rescore")]:
        if isinstance(rescore, dict) and isinstance(rescore.get("query"), dict):
            inner = rescore["query"].get("rescore_query")
            if inner is not None:
                check_query(inner, seen, where="rescore.query.rescore_query", dls=dls)
    highlight = body.get("highlight")
    if isinstance(highlight, dict):
        if "highlight_query" in highlight:
            check_query(highlight["highlight_query"], seen, where="highlight.highlight_query", dls=dls)
        for spec in (highlight.get("fields") or {}).values() if isinstance(highlight.get("fields"), dict) else []:
            if isinstance(spec, dict) and "highlight_query" in spec:
                check_query(spec["highlight_query"], seen, where="highlight.highlight_query", dls=dls)
    return seen


def check_count(body: dict[str, Any], *, dls: bool) -> Inspection:
    seen = Inspection()
    for key in body:
        if key != "query":
            raise parsing_error(f"request does not support [{key}]")
    if "query" in body:
        check_query(body["query"], seen, dls=dls)
    return seen


def _token_of(value: Any) -> str:
    if isinstance(value, dict):
        return "START_OBJECT"
    if isinstance(value, list):
        return "START_ARRAY"
    if isinstance(value, bool):
        return "VALUE_BOOLEAN"
    if isinstance(value, int | float):
        return "VALUE_NUMBER"
    if value is None:
        return "VALUE_NULL"
    return "VALUE_STRING"
