"""Rewrites read requests so that only documents matching a DLS query can be seen.

Elasticsearch enforces DLS below the query, on the shard's reader
(x-pack/plugin/core/.../accesscontrol/DocumentSubsetReader.java): a hidden
document cannot match anything — not the main query, not a kNN search's
candidates, not an aggregation. Inserting the role query as a *filter*
reproduces that: filters do not change scores, kNN filters are applied while
the candidates are gathered (pre-filtering), and aggregations only ever see
documents that match the request's query. Term statistics keep counting hidden
documents, as they do in Elasticsearch (DLS only changes live docs).
"""

from __future__ import annotations

import copy
from typing import Any

from .errors import EsError

MATCH_ALL = {"match_all": {}}


def _refuse(what: str) -> EsError:
    return EsError(
        400,
        "illegal_argument_exception",
        f"[embedded_es] {what} cannot be combined with document level security by the embedded engine",
    )


def filtered_query(query: dict[str, Any] | None, dls: dict[str, Any], *, scoring: bool = True) -> dict[str, Any]:
    """``query`` restricted to documents matching ``dls``, with its scores unchanged."""
    inner = _filter_nested_knn(query, dls) if query is not None else (MATCH_ALL if scoring else None)
    clause: dict[str, Any] = {"filter": [dls]}
    if inner is not None:
        clause["must"] = [inner]
    return {"bool": clause}


def _with_filter(section: dict[str, Any], dls: dict[str, Any]) -> dict[str, Any]:
    out = dict(section)
    existing = out.get("filter")
    if existing is None:
        out["filter"] = [dls]
    elif isinstance(existing, list):
        out["filter"] = [*existing, dls]
    else:
        out["filter"] = [existing, dls]
    return out


def _filter_nested_knn(node: Any, dls: dict[str, Any]) -> Any:
    """Give every ``knn`` query inside a query tree the DLS filter (it is a pre-filter)."""
    if isinstance(node, list):
        return [_filter_nested_knn(n, dls) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "knn" and isinstance(value, dict) and "field" in value:
            out[key] = _with_filter(value, dls)
        else:
            out[key] = _filter_nested_knn(value, dls)
    return out


def _filter_retriever(retriever: dict[str, Any], dls: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(retriever, dict) or len(retriever) != 1:
        raise _refuse("a retriever that is not a single-key object")
    ((kind, spec),) = retriever.items()
    spec = dict(spec)
    if kind == "standard":
        if "query" in spec:
            spec["query"] = _filter_nested_knn(spec["query"], dls)
        return {kind: _with_filter(spec, dls)}
    if kind == "knn":
        return {kind: _with_filter(spec, dls)}
    if kind == "rrf":
        spec["retrievers"] = [_filter_retriever(r, dls) for r in spec.get("retrievers", [])]
        return {kind: spec}
    if kind in ("text_similarity_reranker", "rule"):
        spec["retriever"] = _filter_retriever(spec["retriever"], dls)
        return {kind: spec}
    raise _refuse(f"the [{kind}] retriever")


def search_body(body: dict[str, Any] | None, dls: dict[str, Any]) -> dict[str, Any]:
    """A search body with DLS applied to every way it can reach documents.

    The body has passed query_guard.check_search, which refuses every part that
    could read documents outside the query. Aggregations need nothing more: they
    only see documents the (filtered) query matches.
    """
    body = copy.copy(body) if body else {}
    if "retriever" in body:
        body["retriever"] = _filter_retriever(body["retriever"], dls)
        return body
    if "knn" in body:
        knn = body["knn"]
        body["knn"] = [_with_filter(k, dls) for k in knn] if isinstance(knn, list) else _with_filter(knn, dls)
        if "query" in body:
            body["query"] = filtered_query(body["query"], dls)
        return body
    body["query"] = filtered_query(body.get("query"), dls)
    return body


def count_body(body: dict[str, Any] | None, dls: dict[str, Any]) -> dict[str, Any]:
    body = copy.copy(body) if body else {}
    body["query"] = filtered_query(body.get("query"), dls, scoring=False)
    return body


def query_string_from_params(params: dict[str, str]) -> dict[str, Any]:
    """The query a ``?q=`` URI search means (RestSearchAction.parseSearchSource)."""
    spec: dict[str, Any] = {"query": params["q"]}
    mapping = {
        "df": "default_field",
        "default_operator": "default_operator",
        "analyzer": "analyzer",
        "analyze_wildcard": "analyze_wildcard",
        "lenient": "lenient",
    }
    for param, field in mapping.items():
        if param in params:
            spec[field] = params[param]
    return {"query_string": spec}


def combine_by_index(per_index: dict[str, dict[str, Any] | None]) -> dict[str, Any] | None:
    """One filter for a request over indices whose DLS differ, keyed on ``_index``.

    ``per_index`` maps concrete index names to their DLS query (None = unrestricted).
    """
    distinct = {repr(q) for q in per_index.values()}
    if len(distinct) == 1:
        return next(iter(per_index.values()))
    groups: dict[str, tuple[dict[str, Any] | None, list[str]]] = {}
    for index, query in per_index.items():
        groups.setdefault(repr(query), (query, []))[1].append(index)
    should = []
    for query, indices in groups.values():
        term = {"terms": {"_index": sorted(indices)}}
        should.append(term if query is None else {"bool": {"filter": [term, query]}})
    return {"bool": {"should": should, "minimum_should_match": 1}}
