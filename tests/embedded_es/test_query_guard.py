"""The closed list of search-body parts (embedded_es/query_guard.py), without a server.

The gateway can only enforce DLS by filtering the query, so a part that makes the engine read
documents outside the query must never reach it as sent. Elasticsearch reads lookups as the caller
(TermsQueryBuilder.fetch / MoreLikeThisQueryBuilder.fetch run with the caller's security context);
SearchRequestInterceptor refuses suggest and profile under DLS.
"""

from __future__ import annotations

import base64

import pytest

from embedded_es import query_guard
from embedded_es.errors import EsError


@pytest.mark.parametrize(
    ("body", "error_type"),
    [
        (
            {"query": {"wrapper": {"query": base64.b64encode(b'{"match_all":{}}').decode()}}},
            "illegal_argument_exception",
        ),
        (
            {"query": {"bool": {"filter": [{"percolate": {"field": "q", "index": "i", "id": "x"}}]}}},
            "illegal_argument_exception",
        ),
        ({"query": {"has_child": {"type": "c", "query": {"match_all": {}}}}}, "illegal_argument_exception"),
        ({"query": {"no_such_query": {}}}, "parsing_exception"),
        ({"query": {"match_all": {}, "term": {"a": 1}}}, "parsing_exception"),
        ({"aggs": {"g": {"global": {}}}}, "illegal_argument_exception"),
        ({"aggs": {"s": {"significant_terms": {"field": "f"}}}}, "illegal_argument_exception"),
        ({"aggs": {"x": {"scripted_metric": {}}}}, "parsing_exception"),
        ({"ext": {}}, "parsing_exception"),
        ({"suggest": {"s": {"text": "x", "term": {"field": "f"}}}}, "security_exception"),
        ({"profile": True}, "security_exception"),
        ({"knn": {"field": "v", "query_vector_builder": {}}}, "illegal_argument_exception"),
        ({"retriever": {"text_similarity_reranker": {}}}, "illegal_argument_exception"),
        (
            {"query": {"function_score": {"functions": [{"filter": {"wrapper": {"query": "e30="}}}]}}},
            "illegal_argument_exception",
        ),
        ({"aggs": {"f": {"filter": {"wrapper": {"query": "e30="}}}}}, "illegal_argument_exception"),
        ({"rescore": {"query": {"rescore_query": {"wrapper": {"query": "e30="}}}}}, "illegal_argument_exception"),
    ],
)
def test_refused_under_dls(body: dict, error_type: str) -> None:
    with pytest.raises(EsError) as info:
        query_guard.check_search(body, dls=True)
    assert info.value.status == 400
    assert info.value.error_type == error_type


def test_suggest_profile_and_significant_terms_are_allowed_without_dls() -> None:
    body = {
        "suggest": {"s": {"text": "x", "term": {"field": "f"}}},
        "profile": True,
        "aggs": {"s": {"significant_terms": {"field": "f"}}},
    }
    assert query_guard.check_search(body, dls=False).lookups == []


def test_what_the_application_sends_passes() -> None:
    body = {
        "query": {
            "function_score": {
                "query": {
                    "bool": {
                        "must": [{"multi_match": {"query": "x", "fields": ["text"]}}],
                        "filter": [{"term": {"t": 1}}],
                    }
                },
                "functions": [
                    {"gauss": {"timestamp": {"scale": "30d"}}},
                    {"field_value_factor": {"field": "use_count"}},
                ],
            }
        },
        "knn": [{"field": "e", "query_vector": [0.1], "k": 5, "num_candidates": 50, "filter": [{"term": {"t": 1}}]}],
        "size": 40,
        "_source": {"excludes": ["embedding"]},
    }
    assert query_guard.check_search(body, dls=True).lookups == []


def test_a_terms_lookup_becomes_inline_terms_from_what_the_caller_may_see() -> None:
    body = {
        "query": {"bool": {"filter": [{"terms": {"tags": {"index": "i", "id": "d1", "path": "a.tags"}, "boost": 2}}]}}
    }
    seen = query_guard.check_search(body, dls=True)
    [lookup] = seen.lookups
    assert (lookup.index, lookup.doc_id, lookup.path) == ("i", "d1", "a.tags")
    lookup.apply({"a": [{"tags": ["x", "y"]}, {"tags": "z"}]})
    assert body["query"]["bool"]["filter"][0] == {"terms": {"tags": ["x", "y", "z"], "boost": 2}}
    lookup.apply(None)  # hidden or missing: the lookup contributes nothing
    assert body["query"]["bool"]["filter"][0] == {"terms": {"tags": [], "boost": 2}}


def test_hidden_more_like_this_items_are_dropped_and_nothing_left_matches_nothing() -> None:
    body = {"query": {"more_like_this": {"fields": ["text"], "like": ["free text", {"_index": "i", "_id": "hidden"}]}}}
    seen = query_guard.check_search(body, dls=True)
    [lookup] = seen.lookups
    lookup.apply(None)
    assert query_guard.mlt_finish(body) == {"query": {"more_like_this": {"fields": ["text"], "like": ["free text"]}}}
    only_hidden = {"query": {"more_like_this": {"fields": ["text"], "like": [{"_id": "hidden"}]}}}
    query_guard.check_search(only_hidden, dls=True).lookups[0].apply(None)
    assert query_guard.mlt_finish(only_hidden) == {"query": {"match_none": {}}}
