"""Regression tests for the write-side attacks of issue 15, and the paths the application itself uses.

A ``read`` key holds ``indices:data/read/*`` (+ resolve) and nothing else (IndexPrivilege.READ,
x-pack/plugin/core/src/main/java/org/elasticsearch/xpack/core/security/authz/privilege/IndexPrivilege.java;
https://www.elastic.co/guide/en/elasticsearch/reference/8.15/security-privileges.html#privileges-list-indices).
An action that no index group of the role grants is refused with 403 before the index expression is even
resolved, so a wildcard cannot be "more allowed" than a concrete name
(x-pack/plugin/security/src/main/java/org/elasticsearch/xpack/security/authz/RBACEngine.java,
authorizeIndexAction → ``role.checkIndicesAction(action)``). Every write attempt is checked against the
superuser's snapshot right after the request.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from .adversarial import (
    ALIAS_A,
    INDEX_A,
    JSON,
    NDJSON,
    PRIVATE,
    AdvWorld,
    RawClient,
    RawRequest,
    error_type,
    hit_ids,
    mint,
    msearch_hit_ids,
    post,
    role,
    snapshot,
    visible_ids,
)

FORGED = {"tenant_id": "t1", "user_id": "u1", "text": "forged"}


def assert_forbidden(adv: AdvWorld, request: RawRequest, principal: str = "attacker", *, or_unsupported=False) -> None:
    """403 security_exception; with ``or_unsupported``, the gateway may instead refuse an endpoint it does
    not implement for this credential with 400 illegal_argument_exception (default-deny)."""
    response = adv.attack(request, principal)
    allowed = {(403, "security_exception")} | ({(400, "illegal_argument_exception")} if or_unsupported else set())
    assert (response.status, error_type(response)) in allowed, response.body[:300]


@pytest.mark.parametrize("expression", [INDEX_A, "adv-*", "*", "_all", ALIAS_A, "adv-*,-adv-b", PRIVATE])
@pytest.mark.parametrize("endpoint", ["_update_by_query", "_delete_by_query"])
def test_by_query_with_a_read_only_key_is_refused(adv: AdvWorld, endpoint: str, expression: str) -> None:
    """``read`` does not grant indices:data/write/update/byquery or .../delete/byquery: 403 on every
    expression, and no document changes (RBACEngine checkIndicesAction; IndexPrivilege.READ)."""
    body = {"query": {"match_all": {}}}
    if endpoint == "_update_by_query":
        body["script"] = {"source": "ctx._source.text = 'forged'"}
    assert_forbidden(adv, post(f"/{expression}/{endpoint}?conflicts=proceed&refresh=true", body))


@pytest.mark.parametrize(
    "action",
    [
        {"remove_index": {"index": "adv-*"}},
        {"remove_index": {"index": INDEX_A}},
        {"remove": {"index": "adv-*", "alias": "*"}},
        {"add": {"index": "adv-*", "alias": "adv-stolen"}},
        {"add": {"index": PRIVATE, "alias": "adv-stolen"}},
        {"add": {"index": INDEX_A, "alias": "adv-unfiltered", "filter": {"match_all": {}}}},
    ],
    ids=["remove_index_wildcard", "remove_index", "remove_alias", "add_wildcard", "add_private", "add_filtered"],
)
def test_aliases_actions_with_a_read_only_key_are_refused(adv: AdvWorld, action: dict) -> None:
    """indices:admin/aliases (and indices:admin/delete for remove_index) are not granted by ``read``:
    403, and no index or alias disappears
    (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/indices-aliases.html#indices-aliases-api-prereqs)."""
    assert_forbidden(adv, post("/_aliases", {"actions": [action]}))


@pytest.mark.parametrize("expression", ["adv-*", INDEX_A, "*", ALIAS_A])
@pytest.mark.parametrize(
    "method,suffix,body",
    [
        ("PUT", "_mapping", {"properties": {"leak": {"type": "keyword"}}}),
        ("PUT", "_settings", {"index": {"number_of_replicas": 1}}),
        ("PUT", "_doc/x", FORGED),
        ("POST", "_doc", FORGED),
        ("PUT", "_create/x", FORGED),
        ("POST", "_update/adv-a-u1-pie", {"doc": {"text": "forged"}}),
        ("DELETE", "_doc/adv-a-u1-pie", None),
        ("POST", "_bulk", None),
        ("POST", "_refresh", None),
        ("DELETE", "", None),
        ("POST", "_close", None),
    ],
    ids=[
        "mapping",
        "settings",
        "doc",
        "post_doc",
        "create",
        "update",
        "delete",
        "bulk",
        "refresh",
        "delete_index",
        "close",
    ],
)
def test_index_writes_and_admin_with_a_read_only_key_are_refused(
    adv: AdvWorld, expression: str, method: str, suffix: str, body
) -> None:
    """PUT mapping (indices:admin/mapping/put), settings (indices:admin/settings/update), index/create/
    update/delete (indices:data/write/*), refresh (indices:admin/refresh), delete and close
    (indices:admin/delete, indices:admin/close) are not granted by ``read``. Close is not an endpoint
    the application uses, so the gateway may also refuse it as unsupported (400). A refused bulk answers 200
    with a 403 per item (AuthorizationService.authorizeBulkItems); every other one is a 403."""
    if suffix == "_bulk":
        lines = [
            {"index": {"_index": INDEX_A, "_id": "x"}},
            FORGED,
            {"delete": {"_index": INDEX_A, "_id": "adv-a-u1-pie"}},
        ]
        raw = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        response = adv.attack(RawRequest("POST", f"/{expression}/_bulk", NDJSON, raw))
        if response.status == 200:
            assert [next(iter(i.values()))["status"] for i in response.json()["items"]] == [403, 403]
        else:
            assert response.status == 403
        return
    data = json.dumps(body).encode() if body is not None else None
    path = f"/{expression}/{suffix}".rstrip("/")
    assert_forbidden(adv, RawRequest(method, path, JSON if data else (), data), or_unsupported=suffix == "_close")


@pytest.mark.parametrize("dest", ["adv-new", INDEX_A, "new-index"])
def test_reindex_with_a_read_only_key_is_refused(adv: AdvWorld, dest: str) -> None:
    """Reindex needs ``read`` on the source and ``write`` (+ create_index for a new one) on the
    destination (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/docs-reindex.html#docs-reindex-api-prereqs);
    ``read`` alone grants neither indices:data/write/reindex nor the index action: 403, no new index."""
    body = {"source": {"index": "adv-*"}, "dest": {"index": dest}}
    assert_forbidden(adv, post("/_reindex?refresh=true", body))


def test_index_creation_with_a_read_only_key_is_refused(adv: AdvWorld) -> None:
    """indices:admin/create is granted by create_index, manage and all only; names with wildcards are
    not creatable at all (400 invalid_index_name_exception) — either way nothing is created."""
    for name in ("adv-new", ".%2A", "adv-%2A"):
        response = adv.attack(RawRequest("PUT", f"/{name}", JSON, b"{}"))
        assert response.status in (400, 403), response.body[:300]


def test_security_api_with_a_read_only_key_is_refused(adv: AdvWorld) -> None:
    """Minting or invalidating keys needs manage_api_key/manage_own_api_key (cluster privileges the
    attacker lacks): 403 (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/security-api-create-api-key.html)."""
    grab = {"name": "stolen", "role_descriptors": {"r": {"indices": [{"names": ["*"], "privileges": ["all"]}]}}}
    assert_forbidden(adv, post("/_security/api_key", grab))
    assert_forbidden(adv, RawRequest("DELETE", "/_security/api_key", JSON, json.dumps({"name": "adv-*"}).encode()))


# ------------------------------------------------------------------------------------------ allowed paths
@pytest.fixture
def app_index(adv: AdvWorld) -> Iterator[str]:
    """A scratch index (outside the planted fixture) for the application's own write paths."""
    index = f"adv-w-{uuid.uuid4().hex[:8]}"
    assert (
        adv.admin.request("PUT", f"/{index}", {"mappings": {"properties": {"tenant_id": {"type": "keyword"}}}}).status
        == 200
    )
    yield index
    adv.admin.request("DELETE", f"/{index}")
    # The planted fixture is untouched; only the writer's new key is new.
    adv.baseline = snapshot(adv.admin)


def test_the_applications_search_paths_keep_working(adv: AdvWorld) -> None:
    """What recall sends with a subject key keeps working: a search with query + function_score,
    a knn section and ``_source_excludes``, and an ``_msearch`` whose headers name two indices with
    dfs_query_then_fetch (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/search-multi-search.html)."""
    body = {
        "size": 20,
        "query": {
            "function_score": {
                "query": {"match": {"text": "apple"}},
                "functions": [{"gauss": {"rank": {"origin": 0, "scale": 10}}}],
                "boost_mode": "multiply",
            }
        },
    }
    searched = adv.attack(post("/adv-a,adv-b/_search?_source_excludes=embedding", body))
    assert searched.status == 200, searched.body[:300]
    assert hit_ids(searched) <= visible_ids(adv) and hit_ids(searched)
    assert all("embedding" not in h["_source"] for h in searched.json()["hits"]["hits"])
    knn = {"knn": {"field": "embedding", "query_vector": [1.0, 0.0, 0.0], "k": 10, "num_candidates": 50}, "size": 10}
    found = adv.attack(post(f"/{INDEX_A}/_search?_source_excludes=embedding", knn))
    assert found.status == 200, found.body[:300]
    assert hit_ids(found) == visible_ids(adv, INDEX_A)
    header = {"index": "adv-a,adv-b", "search_type": "dfs_query_then_fetch"}
    # kNN lines carry no search_type: Elasticsearch refuses one with knn ("cannot set [search_type] when
    # using [knn] search"), so recall sends its kNN legs without dfs.
    lines = [header, {"query": {"match": {"text": "apple"}}, "size": 20}, {"index": "adv-a,adv-b"}, knn]
    raw = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    multi = adv.attack(RawRequest("POST", "/_msearch", NDJSON, raw))
    assert multi.status == 200, multi.body[:300]
    assert [r.get("status", 200) for r in multi.json()["responses"]] == [200, 200]
    assert msearch_hit_ids(multi) <= visible_ids(adv)


@pytest.mark.parametrize("privileges", [["write"], ["index", "delete"]])
def test_the_writer_keys_paths_keep_working(adv: AdvWorld, app_index: str, privileges: list[str]) -> None:
    """The service writer (write, or index + delete; no read) indexes with refresh=wait_for, bulks
    index/delete items and updates with a script and retry_on_conflict
    (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/docs-update.html); ``index`` grants
    indices:data/write/update* and ``delete`` indices:data/write/delete* (IndexPrivilege)."""
    writer = RawClient.api_key(adv.url, mint(adv.admin, "adv-writer", role([app_index], privileges, query=None)))
    try:
        put = writer.request("PUT", f"/{app_index}/_doc/one?refresh=wait_for", {"tenant_id": "t1", "n": 1})
        assert put.status == 201, put.body
        lines = [
            {"index": {"_index": app_index, "_id": "two"}},
            {"tenant_id": "t1", "n": 2},
            {"index": {"_index": app_index, "_id": "three"}},
            {"tenant_id": "t1", "n": 3},
            {"delete": {"_index": app_index, "_id": "three"}},
        ]
        bulk = writer.request("POST", "/_bulk?refresh=wait_for", lines, ndjson=True)
        assert bulk.status == 200 and bulk.json()["errors"] is False, bulk.body
        script = {"script": {"source": "ctx._source.n += params.by", "params": {"by": 10}}}
        updated = writer.request("POST", f"/{app_index}/_update/one?retry_on_conflict=20&refresh=wait_for", script)
        assert updated.status == 200, updated.body
        assert writer.request("POST", f"/{app_index}/_search", {}).status == 403  # and it still cannot read
    finally:
        writer.close()
    docs = adv.admin.request("POST", f"/{app_index}/_search", {"query": {"match_all": {}}}).json()["hits"]["hits"]
    assert {h["_id"]: h["_source"]["n"] for h in docs} == {"one": 11, "two": 2}
