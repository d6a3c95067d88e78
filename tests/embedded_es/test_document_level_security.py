"""Document level security on every read path, as Elasticsearch applies it.

Elasticsearch enforces a role's DLS query on the shard reader
(x-pack/plugin/core/.../security/authz/accesscontrol/SecurityIndexReaderWrapper.java →
DocumentSubsetReader), so no read API can reach a hidden document. The reference page
"Controlling access at the document and field level"
(https://www.elastic.co/guide/en/elasticsearch/reference/8.15/field-and-document-access-control.html)
and DocumentLevelSecurityTests.java in the security plugin's internalClusterTest are the sources cited below.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from elasticsearch import AuthorizationException, BadRequestError, Elasticsearch, NotFoundError
from elasticsearch.dsl import Search

from .conftest import Cluster, mint_key
from .documents import load_memories, read_role, user_dls

U1_VISIBLE = {"u1-pie", "u1-car", "cat-apple"}
U2_VISIBLE = {"u2-tart", "cat-apple"}
T1_VISIBLE = {"u1-pie", "u1-car", "u2-tart", "cat-apple"}


@pytest.fixture(scope="module")
def memories(admin: Elasticsearch) -> Iterator[str]:
    index = f"mem-{uuid.uuid4().hex[:10]}"
    load_memories(admin, index)
    yield index
    admin.options(ignore_status=404).indices.delete(index=index)


@pytest.fixture(scope="module")
def u1(admin: Elasticsearch, cluster: Cluster, memories: str) -> Elasticsearch:
    return cluster.with_key(mint_key(admin, "u1", read_role([f"{memories}*"], user_dls("t1", "u1"))))


@pytest.fixture(scope="module")
def u2(admin: Elasticsearch, cluster: Cluster, memories: str) -> Elasticsearch:
    return cluster.with_key(mint_key(admin, "u2", read_role([f"{memories}*"], user_dls("t1", "u2"))))


@pytest.fixture(scope="module")
def tenant1(admin: Elasticsearch, cluster: Cluster, memories: str) -> Elasticsearch:
    return cluster.with_key(mint_key(admin, "t1", read_role([f"{memories}*"], {"term": {"tenant_id": "t1"}})))


def ids(response) -> set[str]:
    return {hit["_id"] for hit in response["hits"]["hits"]}


def test_search_sees_own_and_catalog_only(
    u1: Elasticsearch, u2: Elasticsearch, tenant1: Elasticsearch, memories: str
) -> None:
    """Search is filtered by the role query (docs: field-and-document-access-control, "Document level security")."""
    assert ids(u1.search(index=memories, query={"match_all": {}})) == U1_VISIBLE
    assert ids(u2.search(index=memories, query={"match_all": {}})) == U2_VISIBLE
    assert ids(tenant1.search(index=memories, query={"match_all": {}})) == T1_VISIBLE
    assert ids(u1.search(index=f"{memories}-alias", query={"match": {"text": "apple"}})) == {"u1-pie", "cat-apple"}


def test_search_without_a_query_is_filtered(u1: Elasticsearch, memories: str) -> None:
    """A body-less search is a match_all, still under DLS (DocumentLevelSecurityTests.testSimpleQuery)."""
    response = u1.search(index=memories)
    assert ids(response) == U1_VISIBLE
    assert response["hits"]["total"]["value"] == 3
    assert all(hit["_score"] == 1.0 for hit in response["hits"]["hits"])


def test_uri_search_is_filtered(u1: Elasticsearch, memories: str) -> None:
    """``?q=`` searches are searches too (RestSearchAction parses q into a query_string query)."""
    assert ids(u1.search(index=memories, q="text:apple")) == {"u1-pie", "cat-apple"}


def test_dsl_search_with_user_key(u1: Elasticsearch, memories: str) -> None:
    """The elasticsearch.dsl Search API goes through the same search endpoint."""
    found = {hit.meta.id for hit in Search(using=u1, index=memories).query("match", text="apple").execute()}
    assert found == {"u1-pie", "cat-apple"}


def test_scores_are_unchanged_by_dls(admin: Elasticsearch, u1: Elasticsearch, memories: str) -> None:
    """DLS filters documents but not relevance: the role query is a constant-score filter
    (SecurityIndexReaderWrapper wraps it in ConstantScoreQuery; limitations page: DLS does not affect scoring)."""
    query = {"match": {"text": "apple pie"}}
    mine = {h["_id"]: h["_score"] for h in u1.search(index=memories, query=query)["hits"]["hits"]}
    everyone = {h["_id"]: h["_score"] for h in admin.search(index=memories, query=query)["hits"]["hits"]}
    assert mine == {k: everyone[k] for k in mine}


def test_function_and_script_score_are_filtered(
    admin: Elasticsearch, cluster: Cluster, u1: Elasticsearch, memories: str
) -> None:
    """Scoring wrappers only rescore visible documents (the reader never yields hidden ones). The
    ``script_score`` query is one the gateway refuses to API keys (``search.allow_expensive_queries:
    false``, embedded_es/search_limits.py) unless the superuser minted the key with the exemption,
    as here: Elasticsearch's default allows it."""
    function_score = {"function_score": {"query": {"match": {"text": "apple"}}, "functions": [{"weight": 2}]}}
    assert ids(u1.search(index=memories, query=function_score)) == {"u1-pie", "cat-apple"}
    exempt = cluster.with_key(
        mint_key(
            admin,
            "u1-expensive",
            read_role([f"{memories}*"], user_dls("t1", "u1")),
            metadata={"embedded_es": {"allow_expensive_queries": True}},
        )
    )
    script_score = {"script_score": {"query": {"match_all": {}}, "script": {"source": "1.0 + doc['tenant_id'].size()"}}}
    assert ids(exempt.search(index=memories, query=script_score)) == U1_VISIBLE


def test_knn_search_only_considers_visible_documents(u1: Elasticsearch, u2: Elasticsearch, memories: str) -> None:
    """kNN candidates come from visible documents only: k=10 returns the visible ones, not a
    post-filtered top 10 (DocumentLevelSecurityTests.testKnnSearch)."""
    knn = {"field": "embedding", "query_vector": [1.0, 0.0, 0.0], "k": 10, "num_candidates": 10}
    assert ids(u1.search(index=memories, knn=knn)) == U1_VISIBLE
    assert ids(u2.search(index=memories, knn=[knn])) == U2_VISIBLE
    one = u1.search(index=memories, knn={**knn, "k": 1, "num_candidates": 2})
    assert ids(one) == {"u1-pie"}


def test_knn_query_inside_bool_is_filtered(u2: Elasticsearch, memories: str) -> None:
    """The ``knn`` query gathers candidates under DLS too (DocumentLevelSecurityTests.testKnnSearch, query form)."""
    query = {
        "bool": {
            "should": [{"knn": {"field": "embedding", "query_vector": [1.0, 0.0, 0.0], "k": 5, "num_candidates": 10}}]
        }
    }
    assert ids(u2.search(index=memories, query=query)) == U2_VISIBLE


def test_retrievers_are_filtered(u1: Elasticsearch, memories: str) -> None:
    """Retrievers compose searches; each leg reads through the DLS-wrapped reader
    (docs: retrievers, standard/knn/rrf retriever)."""
    standard = {"standard": {"query": {"match": {"text": "apple"}}}}
    knn = {"knn": {"field": "embedding", "query_vector": [1.0, 0.0, 0.0], "k": 10, "num_candidates": 10}}
    assert ids(u1.search(index=memories, retriever=standard)) == {"u1-pie", "cat-apple"}
    assert ids(u1.search(index=memories, retriever=knn)) == U1_VISIBLE
    assert ids(u1.search(index=memories, retriever={"rrf": {"retrievers": [standard, knn]}})) == U1_VISIBLE


def test_msearch_filters_every_search_and_fails_forbidden_items_alone(u1: Elasticsearch, memories: str) -> None:
    """Each search of an msearch is authorised and filtered on its own
    (DocumentLevelSecurityTests.testMSearch; msearch is authorised "name only", then per search)."""
    response = u1.msearch(
        searches=[
            {"index": memories},
            {"query": {"match_all": {}}},
            {"index": "some-other-index"},
            {"query": {"match_all": {}}},
            {"index": memories},
            {"knn": {"field": "embedding", "query_vector": [0.0, 1.0, 0.0], "k": 1, "num_candidates": 5}},
        ]
    )
    first, forbidden, third = response["responses"]
    assert ids(first) == U1_VISIBLE
    assert forbidden["status"] == 403
    assert forbidden["error"]["type"] == "security_exception"
    assert ids(third) == {"u1-car"}


def test_count_is_filtered(u1: Elasticsearch, tenant1: Elasticsearch, memories: str) -> None:
    """_count runs a search (indices:data/read/search), so DLS applies (DocumentLevelSecurityTests.testRequestCache)."""
    assert u1.count(index=memories)["count"] == 3
    assert u1.count(index=memories, query={"match": {"text": "apple"}})["count"] == 2
    assert tenant1.count(index=memories)["count"] == 4


def test_get_of_a_hidden_document_is_not_found(u1: Elasticsearch, memories: str) -> None:
    """GET of a document outside the role query → 404 ``found: false``, real-time included
    (DocumentLevelSecurityTests.testGetApi / testRealtimeGetApi)."""
    assert u1.get(index=memories, id="u1-pie")["_source"]["text"] == "apple pie recipe from grandma"
    assert u1.get(index=memories, id="cat-apple")["found"] is True
    with pytest.raises(NotFoundError) as info:
        u1.get(index=memories, id="u2-tart")
    assert info.value.body == {"_index": memories, "_id": "u2-tart", "found": False}
    with pytest.raises(NotFoundError):
        u1.get(index=memories, id="t2-juice")
    assert u1.exists(index=memories, id="u1-car").body is True
    assert u1.exists(index=memories, id="u2-tart").body is False
    with pytest.raises(NotFoundError):
        u1.get_source(index=memories, id="u2-tart")


def test_realtime_get_sees_an_unrefreshed_own_document(admin: Elasticsearch, u1: Elasticsearch, memories: str) -> None:
    """Real-time GET stays real-time under DLS (DocumentLevelSecurityTests.testRealtimeGetApi)."""
    admin.index(
        index=memories, id="u1-fresh", document={"tenant_id": "t1", "user_id": "u1", "text": "fresh"}, refresh=False
    )
    admin.index(
        index=memories, id="u2-fresh", document={"tenant_id": "t1", "user_id": "u2", "text": "fresh"}, refresh=False
    )
    try:
        assert u1.get(index=memories, id="u1-fresh")["found"] is True
        with pytest.raises(NotFoundError):
            u1.get(index=memories, id="u2-fresh")
    finally:
        admin.delete(index=memories, id="u1-fresh", refresh=True)
        admin.delete(index=memories, id="u2-fresh", refresh=True)


def test_mget_reports_hidden_documents_as_not_found(u1: Elasticsearch, memories: str) -> None:
    """mget items outside the role query come back ``found: false`` (DocumentLevelSecurityTests.testMGetApi)."""
    docs = u1.mget(index=memories, ids=["u1-pie", "u2-tart", "cat-apple", "t2-juice"])["docs"]
    assert [(d["_id"], d["found"]) for d in docs] == [
        ("u1-pie", True),
        ("u2-tart", False),
        ("cat-apple", True),
        ("t2-juice", False),
    ]
    assert "_source" not in docs[1]


def test_mget_on_a_forbidden_index_fails_that_item_only(u1: Elasticsearch, memories: str) -> None:
    """mget is authorised per index (mget[shard]); a forbidden item carries its own error."""
    docs = u1.mget(docs=[{"_index": memories, "_id": "u1-pie"}, {"_index": "forbidden-index", "_id": "x"}])["docs"]
    assert docs[0]["found"] is True
    assert docs[1]["error"]["type"] == "security_exception"


def test_aggregations_only_count_visible_documents(u1: Elasticsearch, memories: str) -> None:
    """Aggregations run over the filtered reader (DocumentLevelSecurityTests.testZeroMinDocAggregation)."""
    response = u1.search(
        index=memories,
        size=0,
        aggs={"tenants": {"terms": {"field": "tenant_id"}}, "users": {"terms": {"field": "user_id"}}},
    )
    assert [(b["key"], b["doc_count"]) for b in response["aggregations"]["tenants"]["buckets"]] == [("t1", 3)]
    assert [(b["key"], b["doc_count"]) for b in response["aggregations"]["users"]["buckets"]] == [("u1", 2)]


def test_suggest_and_profile_are_refused_under_dls(u1: Elasticsearch, memories: str) -> None:
    """security/authz/interceptor/SearchRequestInterceptor.java refuses both (400 security_exception);
    DocumentLevelSecurityTests.testSuggesters."""
    with pytest.raises(BadRequestError) as info:
        u1.search(index=memories, suggest={"s": {"text": "aple", "term": {"field": "text"}}})
    assert info.value.body["error"]["type"] == "security_exception"
    assert info.value.body["error"]["reason"] == "Suggest isn't supported if document level security is enabled"
    with pytest.raises(BadRequestError) as info:
        u1.search(index=memories, profile=True, query={"match_all": {}})
    assert (
        info.value.body["error"]["reason"]
        == "A search request cannot be profiled if document level security is enabled"
    )


def test_scroll_pages_are_filtered_and_belong_to_their_owner(
    u1: Elasticsearch, u2: Elasticsearch, memories: str
) -> None:
    """Every scroll page is filtered (DocumentLevelSecurityTests.testScroll), and a scroll context can only be
    continued by whoever opened it (SecuritySearchOperationListener → search_context_missing_exception)."""
    first = u1.search(index=memories, scroll="1m", size=2, sort=["_doc"])
    seen = ids(first)
    page = u1.scroll(scroll_id=first["_scroll_id"], scroll="1m")
    seen |= ids(page)
    assert seen == U1_VISIBLE
    with pytest.raises(NotFoundError) as info:
        u2.scroll(scroll_id=first["_scroll_id"], scroll="1m")
    assert info.value.body["error"]["type"] == "search_context_missing_exception"
    u1.clear_scroll(scroll_id=first["_scroll_id"])


def test_wildcard_expands_only_to_authorised_indices(u1: Elasticsearch, memories: str) -> None:
    """Security rewrites wildcards to the indices the caller may read (limitations page,
    "Changes in wildcard behavior"); an explicit forbidden name is a 403."""
    assert ids(u1.search(index=f"{memories[:6]}*", query={"match_all": {}})) == U1_VISIBLE
    assert u1.search(index="nothing-matches-this-*")["hits"]["hits"] == []
    with pytest.raises(AuthorizationException):
        u1.search(index=f"{memories},forbidden-index")


def test_terms_enum_returns_no_terms_under_dls(u1: Elasticsearch, memories: str) -> None:
    """TransportTermsEnumAction skips shards with a non-match_all DLS query (limitations page: terms enum)."""
    response = u1.terms_enum(index=memories, field="user_id")
    assert response["terms"] == []


def test_several_index_groups_are_ored(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """Role queries of groups on the same index are combined with OR
    (docs: "Multiple roles with document and field level security"; DocumentPermissions.buildRoleQuery)."""
    roles = {
        "own": {"indices": [{"names": [memories], "privileges": ["read"], "query": {"term": {"user_id": "u1"}}}]},
        "other": {"indices": [{"names": [memories], "privileges": ["read"], "query": {"term": {"user_id": "u2"}}}]},
    }
    client = cluster.with_key(mint_key(admin, "two-groups", roles))
    assert ids(client.search(index=memories)) == {"u1-pie", "u1-car", "u2-tart"}


def test_a_group_without_query_lifts_the_restriction(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """One matching group without a query disables DLS for that index
    (core/.../authz/permission/IndicesPermission.java: "if a single permission doesn't have a role query
    then DLS will not be applied even when other permissions do have a role query")."""
    roles = {
        "restricted": {
            "indices": [{"names": [memories], "privileges": ["read"], "query": {"term": {"user_id": "u1"}}}]
        },
        "open": {"indices": [{"names": [f"{memories}*"], "privileges": ["read"]}]},
    }
    client = cluster.with_key(mint_key(admin, "lifted", roles))
    assert client.count(index=memories)["count"] == 6


def test_role_query_may_be_a_json_string(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """``query`` also accepts a query written as a string (docs: document-level-security.asciidoc)."""
    role = {"r": {"indices": [{"names": [memories], "privileges": ["read"], "query": '{"term": {"user_id": "u2"}}'}]}}
    client = cluster.with_key(mint_key(admin, "string-query", role))
    assert ids(client.search(index=memories)) == {"u2-tart"}
