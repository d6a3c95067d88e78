"""Regression tests for the read-side attacks of issue 15, and the existence oracle.

Each test sends its attack as the read-only DLS attacker (``read`` on ``adv-*``, DLS tenant = t1 AND
(user = u1 OR no user)) and asserts the suite's invariants (no 5xx, Elasticsearch's error shape, no
hidden token in the answer, nothing changed) plus what Elasticsearch does where that is certain.

DLS applies below every read API (DocumentSubsetReader via SecurityIndexReaderWrapper,
x-pack/plugin/core/src/main/java/org/elasticsearch/xpack/core/security/authz/accesscontrol/), so a
hidden document behaves as if it did not exist: "not found" and "not yours" look the same.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import pytest

from .adversarial import (
    ALIAS_A,
    INDEX_A,
    INDEX_B,
    JSON,
    NDJSON,
    PRIVATE,
    AdvWorld,
    RawRequest,
    Response,
    error_type,
    get,
    hit_ids,
    msearch_hit_ids,
    post,
    snapshot,
    visible_ids,
)
from .attack_requests import deep, gzip_bomb
from .conftest import needs_embedded

HIDDEN = f"{INDEX_A}-u2-tart"  # same tenant, another user: hidden by the user_id clause
FOREIGN = f"{INDEX_A}-t2-juice"  # another tenant's
MISSING = f"{INDEX_A}-u2-tarx"  # never existed; same length as HIDDEN


# ------------------------------------------------------------------------------------------ q and explain
def test_msearch_url_q_does_not_bypass_dls(adv: AdvWorld) -> None:
    """``POST /adv-*/_msearch?q=*:*``: msearch has no ``q`` parameter, so Elasticsearch answers 400
    "request [...] contains unrecognized parameter: [q]" (RestMultiSearchAction consumes only its own
    parameters; BaseRestHandler.handleRequest rejects the rest). In no case are other docs returned.
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/search-multi-search.html"""
    response = adv.attack(post("/adv-*/_msearch?q=*:*", b"{}\n{}\n", NDJSON))
    assert msearch_hit_ids(response) <= visible_ids(adv)
    assert response.status == 400
    assert error_type(response) == "illegal_argument_exception"
    assert "unrecognized parameter: [q]" in response.json()["error"]["reason"]


def test_msearch_item_header_q_does_not_bypass_dls(adv: AdvWorld) -> None:
    """An msearch header accepts only index/expand_wildcards/ignore_unavailable/allow_no_indices/
    search_type/request_cache/preference/routing/ccs_minimize_roundtrips/allow_partial_search_results;
    any other key fails the request with 400 "key [q] is not supported in the metadata section"
    (MultiSearchRequest.readMultiLineFormat, server/src/main/java/org/elasticsearch/action/search/)."""
    body = b'{"index": "adv-*", "q": "*:*"}\n{}\n'
    response = adv.attack(post("/_msearch", body, NDJSON))
    assert msearch_hit_ids(response) <= visible_ids(adv)
    assert response.status == 400
    assert "key [q] is not supported in the metadata section" in response.body.decode()


@pytest.mark.parametrize(
    "path", ["/adv-*/_search?q=*:*", "/_search?q=*:*&df=note", "/adv-a-alias/_count?q=tenant_id:t2"]
)
def test_uri_search_q_is_filtered_by_dls(adv: AdvWorld, path: str) -> None:
    """``q`` is a query_string query (RestSearchAction.parseSearchSource) and is filtered like any query.
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/search-search.html#search-api-query-params-q"""
    response = adv.attack(get(path))
    assert response.status == 200
    if "_count" in path:
        assert response.json()["count"] == 0
    else:
        assert hit_ids(response) == visible_ids(adv)


def test_explain_with_q_does_not_reveal_a_hidden_doc(adv: AdvWorld) -> None:
    """``GET /<index>/_explain/<hidden>?q=*:*&_source=true``: the explain runs on the DLS-wrapped reader,
    so the hidden document does not exist there: 404 ``{"_index", "_id", "matched": false}``
    (TransportExplainAction, RestExplainAction;
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/search-explain.html)."""
    for doc_id in (HIDDEN, FOREIGN):
        response = adv.attack(get(f"/{INDEX_A}/_explain/{doc_id}?q=*:*&_source=true"))
        assert response.status == 404
        assert response.json() == {"_index": INDEX_A, "_id": doc_id, "matched": False}


# ------------------------------------------------------------------------------------------ lookups by id
def test_terms_lookup_does_not_fetch_a_hidden_doc(adv: AdvWorld) -> None:
    """Terms lookup fetches the lookup document with the caller's own GET, to which DLS applies, so a
    hidden lookup document contributes no terms (TermsQueryBuilder.fetch → GetRequest run as the user;
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/query-dsl-terms-query.html#query-dsl-terms-lookup).
    A lookup on the caller's own visible doc still works."""
    for doc_id in (HIDDEN, FOREIGN, f"{PRIVATE}-u1-pie"):
        index = PRIVATE if doc_id.startswith(PRIVATE) else INDEX_A
        lookup = {"query": {"terms": {"note": {"index": index, "id": doc_id, "path": "note"}}}}
        response = adv.attack(post("/adv-*/_search", lookup))
        assert hit_ids(response) == set()
    own = {"query": {"terms": {"note": {"index": INDEX_A, "id": f"{INDEX_A}-u1-pie", "path": "note"}}}}
    assert hit_ids(adv.attack(post("/adv-*/_search", own))) == {f"{INDEX_A}-u1-pie"}


def test_more_like_this_does_not_fetch_a_hidden_doc(adv: AdvWorld) -> None:
    """``more_like_this`` with ``like: [{_index, _id}]`` reads the liked documents through a
    multi-termvectors request as the caller, which DLS filters (MoreLikeThisQueryBuilder.fetchResponse;
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/query-dsl-mlt-query.html)."""
    for index, doc_id in ((INDEX_A, HIDDEN), (INDEX_A, FOREIGN), (PRIVATE, f"{PRIVATE}-u1-pie")):
        mlt = {
            "fields": ["text", "note"],
            "like": [{"_index": index, "_id": doc_id}],
            "min_term_freq": 1,
            "min_doc_freq": 1,
        }
        response = adv.attack(post("/adv-*/_search", {"query": {"more_like_this": mlt}}))
        assert hit_ids(response) <= visible_ids(adv)


# ------------------------------------------------------------------------------------------ existence oracle
def _normalised(response: Response, doc_id: str) -> tuple[int, str]:
    text = response.body.decode(errors="replace").replace(doc_id, "<ID>")
    return response.status, re.sub(r'"took":\s*\d+', '"took":0', text)


ORACLE_PROBES = {
    "get": lambda i: get(f"/{INDEX_A}/_doc/{i}"),
    "get_alias": lambda i: get(f"/{ALIAS_A}/_doc/{i}"),
    "head": lambda i: RawRequest("HEAD", f"/{INDEX_A}/_doc/{i}"),
    "source": lambda i: get(f"/{INDEX_A}/_source/{i}"),
    "explain": lambda i: post(f"/{INDEX_A}/_explain/{i}", {"query": {"match_all": {}}}),
    "mget": lambda i: post("/_mget", {"docs": [{"_index": INDEX_A, "_id": i}]}),
    "mget_ids": lambda i: post(f"/{INDEX_A}/_mget", {"ids": [i]}),
    "terms_lookup": lambda i: post(
        f"/{INDEX_A}/_search", {"query": {"terms": {"note": {"index": INDEX_A, "id": i, "path": "note"}}}}
    ),
    "mlt": lambda i: post(
        f"/{INDEX_A}/_search",
        {
            "query": {
                "more_like_this": {"fields": ["text"], "like": [{"_index": INDEX_A, "_id": i}], "min_term_freq": 1}
            }
        },
    ),
    "ids_query": lambda i: post(f"/{INDEX_A}/_search", {"query": {"ids": {"values": [i]}}}),
}


@pytest.mark.parametrize("probe", sorted(ORACLE_PROBES))
@pytest.mark.parametrize("hidden", [HIDDEN, FOREIGN])
def test_no_existence_oracle(adv: AdvWorld, probe: str, hidden: str) -> None:
    """A hidden id and a never-existing id get the same status and body (id replaced): DLS makes the
    hidden document absent from the reader, so every API answers as for a missing one
    (DocumentSubsetReader; get → 404 found:false, mget → found:false,
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/document-level-security.html)."""
    missing = hidden[:-1] + ("x" if hidden[-1] != "x" else "y")
    got_hidden = adv.attack(ORACLE_PROBES[probe](hidden))
    got_missing = adv.attack(ORACLE_PROBES[probe](missing))
    assert _normalised(got_hidden, hidden) == _normalised(got_missing, missing)


def test_source_of_a_missing_or_hidden_doc_is_resource_not_found(adv: AdvWorld) -> None:
    """``GET /<index>/_source/<id>`` of a document that does not exist (or that DLS hides) is 404
    resource_not_found_exception "Document not found [<index>]/[<id>]" — not a get-style found:false
    body (RestGetSourceAction.RestGetSourceResponseListener.checkResource,
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/docs-get.html#docs-get-api-response-codes)."""
    for doc_id in (MISSING, HIDDEN):
        response = adv.attack(get(f"/{INDEX_A}/_source/{doc_id}"))
        assert response.status == 404
        assert error_type(response) == "resource_not_found_exception"
        assert response.json()["error"]["reason"] == f"Document not found [{INDEX_A}]/[{doc_id}]"


# ------------------------------------------------------------------------------------------ metadata
@pytest.mark.parametrize("endpoint", ["_stats", "_mapping", "_settings"])
def test_wildcard_metadata_is_not_more_open_than_the_concrete_name(adv: AdvWorld, endpoint: str) -> None:
    """``read`` grants none of indices:monitor/stats, indices:admin/mappings/get, indices:monitor/settings/get,
    so RBACEngine refuses the action with 403 before resolving any index expression — a wildcard is
    refused exactly like the concrete name (RBACEngine.authorizeIndexAction's checkIndicesAction shortcut;
    IndexPrivilege.READ). With view_index_metadata, mapping and settings are allowed, stats (monitor) not."""
    statuses = {
        expr: adv.attack(get(f"/{expr}/{endpoint}")).status for expr in (INDEX_A, "adv-*", "*", "_all", ALIAS_A)
    }
    assert set(statuses.values()) == {403}, statuses
    assert adv.attack(get(f"/{endpoint}")).status == 403
    meta = {expr: adv.attack(get(f"/{expr}/{endpoint}"), "meta").status for expr in (INDEX_A, "adv-*")}
    assert set(meta.values()) == ({403} if endpoint == "_stats" else {200}), meta


def test_mapping_with_view_index_metadata_lists_only_authorized_indices(adv: AdvWorld) -> None:
    """A wildcard expands to the indices the caller is authorized for (IndicesAndAliasesResolver), so
    ``GET /*/_mapping`` with view_index_metadata on adv-* never names zz-private."""
    response = adv.attack(get("/*/_mapping"), "meta")
    assert response.status == 200
    assert set(response.json()) == {INDEX_A, INDEX_B}


# ------------------------------------------------------------------------------------------ odd index names
@needs_embedded
def test_index_name_with_a_query_string_planted_by_the_superuser(adv: AdvWorld) -> None:
    """Index names with ``/``, ``?``, ``*``, ``#``, ``,`` or spaces are invalid in Elasticsearch
    (MetadataCreateIndexService.validateIndexOrAliasName: 400 invalid_index_name_exception;
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/indices-create-index.html#indices-create-api-path-params);
    ``&`` and ``=`` are valid. Whatever the engine lets the superuser create, a wildcard search by the
    attacker returns only what its DLS allows: names are escaped when a request is rebuilt."""
    planted = []
    for raw_name in ("adv-odd/_search?q=*:*&", "adv-odd&q=*:*&x="):
        encoded = "".join(c if c.isalnum() or c in "-_" else f"%{ord(c):02X}" for c in raw_name)
        created = adv.admin.request("PUT", f"/{encoded}", {"mappings": {"properties": {"note": {"type": "keyword"}}}})
        if created.status == 200:
            planted.append(encoded)
            adv.admin.request("PUT", f"/{encoded}/_doc/odd?refresh=true", {"tenant_id": "t2", "note": "odd"})
        else:
            assert created.status == 400, created.body
    adv.baseline = snapshot(adv.admin)
    try:
        for path in ("/adv-*/_search?size=100", "/_search?size=100", "/*/_search?size=100&q=*:*", "/_all/_count"):
            response = adv.attack(get(path))
            assert response.status == 200, response.body
            if "_count" in path:
                assert response.json()["count"] == len(visible_ids(adv))
            else:
                assert hit_ids(response) == visible_ids(adv)
    finally:
        for encoded in planted:
            adv.admin.request("DELETE", f"/{encoded}")
        adv.restore_if_changed()


# ------------------------------------------------------------------------------------------ scroll and PIT
def _superuser_scroll(adv: AdvWorld) -> str:
    response = adv.admin.request("POST", f"/{PRIVATE}/_search?scroll=1m", {"size": 1, "query": {"match_all": {}}})
    assert response.status == 200, response.body
    return response.json()["_scroll_id"]


def test_scroll_with_one_id_in_the_path_and_another_in_the_query(adv: AdvWorld) -> None:
    """A scroll context belongs to whoever opened it: any use by another principal is answered
    404 search_context_missing_exception (SecuritySearchOperationListener.validateReaderContext →
    ensureAuthenticatedUserIsSame). Whichever of two ids the gateway reads, the superuser's scroll over
    zz-private must not be continued by the attacker."""
    mine = adv.attack(post(f"/{INDEX_A}/_search?scroll=1m", {"size": 1}))
    assert mine.status == 200
    own_id, theirs = mine.json()["_scroll_id"], _superuser_scroll(adv)
    attempts = [
        get(f"/_search/scroll/{own_id}?scroll_id={theirs}&scroll=1m"),
        post(f"/_search/scroll/{own_id}", {"scroll_id": theirs, "scroll": "1m"}),
        post(f"/_search/scroll?scroll_id={own_id}", {"scroll_id": theirs}),
        get(f"/_search/scroll?scroll_id={theirs}&scroll_id={own_id}"),
        get(f"/_search/scroll/{theirs}"),
    ]
    for request in attempts:
        response = adv.attack(request)
        assert hit_ids(response) <= visible_ids(adv), request.describe()
    assert adv.attack(get(f"/_search/scroll/{theirs}")).status == 404


def test_a_principal_cannot_clear_another_ones_scroll(adv: AdvWorld) -> None:
    """Clearing a given scroll id is checked against its owner like any use of the context
    (SecuritySearchOperationListener); clearing ``_all`` needs the cluster privilege
    cluster:admin/indices/scroll/clear_all (SecurityActionMapper), so the attacker gets 403."""
    theirs = _superuser_scroll(adv)
    adv.attack(RawRequest("DELETE", "/_search/scroll", JSON, json.dumps({"scroll_id": [theirs]}).encode()))
    adv.attack(RawRequest("DELETE", f"/_search/scroll/{theirs}"))
    assert adv.attack(RawRequest("DELETE", "/_search/scroll/_all")).status == 403
    still = adv.admin.request("POST", "/_search/scroll", {"scroll_id": theirs, "scroll": "1m"})
    assert still.status == 200, still.body
    assert still.json()["hits"]["hits"], "the superuser's scroll was cleared by the attacker"
    adv.admin.request("DELETE", "/_search/scroll", {"scroll_id": [theirs]})


def test_a_principal_cannot_use_or_close_another_ones_pit(adv: AdvWorld) -> None:
    """A PIT is a reader context like a scroll: only its owner may search it or close it
    (SecuritySearchOperationListener; https://www.elastic.co/guide/en/elasticsearch/reference/8.15/point-in-time-api.html)."""
    opened = adv.admin.request("POST", f"/{PRIVATE}/_pit?keep_alive=1m")
    assert opened.status == 200, opened.body
    pit = opened.json()["id"]
    adv.attack(post("/_search", {"pit": {"id": pit, "keep_alive": "1m"}, "size": 100}))
    adv.attack(RawRequest("DELETE", "/_pit", JSON, json.dumps({"id": pit}).encode()))
    still = adv.admin.request("POST", "/_search", {"pit": {"id": pit}, "size": 1})
    assert still.status == 200, still.body
    adv.admin.request("DELETE", "/_pit", {"id": pit})


# ------------------------------------------------------------------------------------------ bodies
def test_gzip_body_is_decompressed_once(adv: AdvWorld) -> None:
    """``Content-Encoding: gzip`` request bodies are accepted (http.compression;
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/modules-network.html#http-settings)
    and mean the same as the plain body."""
    body = gzip.compress(json.dumps({"query": {"match_all": {}}, "size": 100}).encode())
    response = adv.attack(RawRequest("POST", "/adv-*/_search", (*JSON, ("Content-Encoding", "gzip")), body))
    assert response.status == 200, response.body
    assert hit_ids(response) == visible_ids(adv)


def test_invalid_gzip_is_a_4xx(adv: AdvWorld) -> None:
    """A body that claims gzip and is not is the client's error, never a 5xx."""
    response = adv.attack(RawRequest("POST", "/adv-*/_search", (*JSON, ("Content-Encoding", "gzip")), b"{}"))
    assert 400 <= response.status < 500


def _peak_rss_kib(server) -> int:
    pid = json.loads((Path(server.data_dir) / "embedded_es.json").read_text())["pid"]
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))


@needs_embedded
def test_gzip_bomb_is_bounded(adv: AdvWorld, cluster) -> None:
    """A 256 MiB body compressed to a few hundred KiB: Elasticsearch caps the decompressed content at
    http.max_content_length (100mb) and answers 413 (the Netty pipeline aggregates after the
    decompressor; https://www.elastic.co/guide/en/elasticsearch/reference/8.15/modules-network.html#http-settings).
    The gateway must refuse it with a 4xx without growing: its peak RSS rises by less than 200 MiB."""
    before = _peak_rss_kib(cluster.server)
    bomb = gzip_bomb(256 * 1024 * 1024)
    response = adv.attack(RawRequest("POST", "/adv-*/_search", (*JSON, ("Content-Encoding", "gzip")), bomb))
    assert response.status in (400, 413), response.body[:300]
    after = _peak_rss_kib(cluster.server)
    assert after - before < 200 * 1024, f"gateway peak RSS grew by {(after - before) // 1024} MiB"


MALFORMED = {
    "mget_docs_not_list": ("/_mget", {"docs": "x"}),
    "mget_item_not_object": ("/_mget", {"docs": ["x", None, 1]}),
    "mget_id_is_list": ("/_mget", {"docs": [{"_index": INDEX_A, "_id": ["a"]}]}),
    "mget_index_is_object": ("/_mget", {"docs": [{"_index": {"x": 1}, "_id": "a"}]}),
    "mget_ids_not_list": (f"/{INDEX_A}/_mget", {"ids": "x"}),
    "msearch_header_list": ("/_msearch", b"[]\n{}\n"),
    "msearch_header_string": ("/_msearch", b'"adv-a"\n{}\n'),
    "msearch_index_object": ("/_msearch", b'{"index": {"a": 1}}\n{}\n'),
    "msearch_index_number": ("/_msearch", b'{"index": 5}\n{}\n'),
    "msearch_body_array": ("/_msearch", b'{"index": "adv-a"}\n[]\n'),
    "msearch_odd_lines": ("/_msearch", b'{"index": "adv-a"}\n'),
    "msearch_broken_json": ("/_msearch", b'{"index": "adv-a"\n{}\n'),
    "bulk_meta_list": ("/_bulk", b"[]\n"),
    "bulk_meta_string": ("/_bulk", b'"index"\n'),
    "bulk_meta_two_ops": ("/_bulk", b'{"index": {}, "delete": {}}\n{}\n'),
    "bulk_spec_not_object": ("/_bulk", b'{"index": "x"}\n{}\n'),
    "bulk_spec_null": ("/_bulk", b'{"delete": null}\n'),
    "bulk_index_is_list": ("/_bulk", b'{"delete": {"_index": ["adv-a"], "_id": "x"}}\n'),
    "bulk_missing_source": ("/_bulk", b'{"index": {"_index": "adv-a", "_id": "x"}}\n'),
    "bulk_broken_json": ("/_bulk", b'{"index": {\n'),
    "reindex_source_list": ("/_reindex", {"source": [INDEX_A], "dest": {"index": "adv-new"}}),
    "reindex_dest_string": ("/_reindex", {"source": {"index": INDEX_A}, "dest": "adv-new"}),
    "reindex_index_object": ("/_reindex", {"source": {"index": {"a": 1}}, "dest": {"index": "adv-new"}}),
    "reindex_empty": ("/_reindex", {}),
    "aliases_actions_object": ("/_aliases", {"actions": {"add": {}}}),
    "aliases_action_string": ("/_aliases", {"actions": ["add"]}),
    "search_body_array": ("/adv-a/_search", b"[]"),
    "search_body_nan": ("/adv-a/_search", b'{"size": NaN}'),
    "search_huge_size": ("/adv-a/_search", b'{"size": 1e999}'),
    "search_query_string_type": ("/adv-a/_search", {"query": "match_all"}),
    "search_pit_string": ("/_search", {"pit": "abc"}),
    "count_body_string": ("/adv-a/_count", b'"x"'),
    "scroll_id_list": ("/_search/scroll", {"scroll_id": ["x"], "scroll": "1m"}),
    "scroll_id_number": ("/_search/scroll", {"scroll_id": 5}),
    "scroll_id_object": ("/_search/scroll", {"scroll_id": {"a": 1}}),
    "deep_nesting": ("/adv-a/_search", deep(5000)),
    "deep_nesting_arrays": ("/adv-a/_search", b'{"query": {"match_all": {"x": ' + b"[" * 5000 + b"]" * 5000 + b"}}}"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_items_are_answered_4xx(adv: AdvWorld, case: str) -> None:
    """Malformed bodies are the client's error: 400 in Elasticsearch's error shape (parse errors are
    x_content_parse_exception / illegal_argument_exception / action_request_validation_exception;
    Jackson's StreamReadConstraints bound the nesting depth, and the query DSL's bool nesting is bounded
    by indices.query.bool.max_nested_depth,
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/search-settings.html). For msearch and
    bulk, Elasticsearch may instead answer 200 with the item's error — never a 5xx, never a whole-request
    success that did something."""
    path, body = MALFORMED[case]
    headers = NDJSON if path in ("/_msearch", "/_bulk") else JSON
    response = adv.attack(post(path, body, headers))
    if response.status == 200:
        items = response.json().get("responses") or response.json().get("items") or []
        assert path in ("/_msearch", "/_bulk", "/_mget") and items, response.body[:300]
        for item in items:
            entry = item if "status" in item or "error" in item else next(iter(item.values()), {})
            assert entry.get("error") or entry.get("found") is False or entry.get("status", 200) >= 400, item
    else:
        assert 400 <= response.status < 500, response.body[:300]


def test_wrapper_query_is_filtered_by_dls(adv: AdvWorld) -> None:
    """``wrapper`` is a base64-encoded query, rewritten into the query it holds; DLS still filters it
    (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/query-dsl-wrapper-query.html)."""
    wrapped = base64.b64encode(b'{"match_all": {}}').decode()
    response = adv.attack(post("/adv-*/_search", {"query": {"wrapper": {"query": wrapped}}, "size": 100}))
    assert response.status in (200, 400)
    assert hit_ids(response) <= visible_ids(adv)


@pytest.mark.parametrize(
    "aggs",
    [
        {"g": {"global": {}, "aggs": {"n": {"terms": {"field": "note", "size": 100}}}}},
        {"n": {"terms": {"field": "note", "size": 100}}},
        {"s": {"significant_terms": {"field": "note"}}},
        {"h": {"top_hits": {"size": 100}}},
        {"sm": {"sampler": {"shard_size": 100}, "aggs": {"h": {"top_hits": {"size": 100}}}}},
    ],
    ids=["global", "terms", "significant_terms", "top_hits", "sampler"],
)
def test_aggregations_see_only_visible_docs(adv: AdvWorld, aggs: dict) -> None:
    """Aggregations, ``global`` included, run over the DLS-filtered reader, so they can only count and
    show visible documents (DocumentSubsetReader; "global" ignores the query, not the reader —
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/search-aggregations-bucket-global-aggregation.html)."""
    response = adv.attack(post("/adv-*/_search", {"size": 0, "aggs": aggs}))
    assert response.status in (200, 400), response.body[:300]


def test_suggest_and_profile_are_refused_under_dls(adv: AdvWorld) -> None:
    """Under DLS, suggesters and profiling are refused: 400 security_exception
    (x-pack/plugin/security/src/main/java/org/elasticsearch/xpack/security/authz/interceptor/SearchRequestInterceptor.java)."""
    suggest = adv.attack(post("/adv-*/_search", {"suggest": {"s": {"text": "zq", "term": {"field": "note"}}}}))
    profile = adv.attack(post("/adv-*/_search", {"profile": True, "query": {"match_all": {}}}))
    assert (suggest.status, error_type(suggest)) == (400, "security_exception")
    assert (profile.status, error_type(profile)) == (400, "security_exception")
