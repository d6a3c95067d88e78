"""Index privileges from role descriptors, and what DLS does (and does not do) to writes.

Privilege → action mapping: x-pack/plugin/core/.../security/authz/privilege/IndexPrivilege.java and
the reference page https://www.elastic.co/guide/en/elasticsearch/reference/8.15/security-privileges.html.
Denial messages: security/authz/AuthorizationDenialMessages.java.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from elasticsearch import AuthorizationException, BadRequestError, ConflictError, Elasticsearch

from .conftest import Cluster, mint_key
from .documents import load_memories, read_role, user_dls


@pytest.fixture
def memories(admin: Elasticsearch) -> Iterator[str]:
    index = f"priv-{uuid.uuid4().hex[:10]}"
    load_memories(admin, index)
    yield index
    admin.options(ignore_status=404).indices.delete(index=index)


def key_id(encoded: str) -> str:
    import base64

    return base64.b64decode(encoded).decode().split(":")[0]


def test_read_only_key_cannot_write(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """``read`` grants indices:data/read/* only: index and delete are 403 with ES's message."""
    encoded = mint_key(admin, "reader", read_role([memories]))
    reader = cluster.with_key(encoded)
    with pytest.raises(AuthorizationException) as info:
        reader.index(index=memories, id="new", document={"text": "x"})
    assert info.value.body["status"] == 403
    assert info.value.body["error"]["type"] == "security_exception"
    assert info.value.body["error"]["reason"] == (
        f"action [indices:data/write/index:op_type/index] is unauthorized for API key id [{key_id(encoded)}] "
        f"of user [elastic] on indices [{memories}], this action is granted by the index privileges [create,index,write,all]"
    )
    with pytest.raises(AuthorizationException) as info:
        reader.delete(index=memories, id="u1-pie")
    assert "this action is granted by the index privileges [delete,write,all]" in info.value.body["error"]["reason"]
    with pytest.raises(AuthorizationException):
        reader.delete_by_query(index=memories, query={"match_all": {}})
    with pytest.raises(AuthorizationException):
        reader.indices.delete(index=memories)
    assert admin.count(index=memories)["count"] == 6
    assert admin.exists(index=memories, id="new").body is False


def test_bulk_denies_items_one_by_one(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """A bulk request is not refused whole: each item is authorised and a forbidden one gets a 403 item
    (AuthorizationService.authorizeBulkItems)."""
    writer = cluster.with_key(mint_key(admin, "writer", read_role([memories], privileges=["create_doc"])))
    response = writer.bulk(
        operations=[
            {"create": {"_index": memories, "_id": "ok-new"}},
            {"text": "created"},
            {"index": {"_index": memories, "_id": "u1-pie"}},
            {"text": "overwrite attempt"},
            {"create": {"_index": "other-index", "_id": "x"}},
            {"text": "elsewhere"},
        ],
        refresh="wait_for",
    )
    assert response["errors"] is True
    statuses = [next(iter(item.values()))["status"] for item in response["items"]]
    assert statuses == [201, 403, 403]
    assert next(iter(response["items"][1].values()))["error"]["type"] == "security_exception"
    assert admin.get(index=memories, id="u1-pie")["_source"]["text"] == "apple pie recipe from grandma"
    assert admin.get(index=memories, id="ok-new")["_source"]["text"] == "created"


def test_create_doc_cannot_overwrite(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """``create_doc`` only allows the op_type=create form of indexing (IndexPrivilege.CREATE_DOC)."""
    writer = cluster.with_key(mint_key(admin, "create-only", read_role([memories], privileges=["create_doc"])))
    writer.create(index=memories, id="brand-new", document={"text": "new"})
    with pytest.raises(ConflictError):
        writer.create(index=memories, id="brand-new", document={"text": "again"})
    with pytest.raises(AuthorizationException):
        writer.index(index=memories, id="brand-new", document={"text": "overwrite"})
    assert admin.get(index=memories, id="brand-new")["_source"] == {"text": "new"}


def test_write_only_key_cannot_read(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """``write`` grants indices:data/write/* and nothing under indices:data/read/*."""
    writer = cluster.with_key(mint_key(admin, "write-only", read_role([memories], privileges=["write"])))
    writer.index(index=memories, id="w1", document={"text": "written"}, refresh="wait_for")
    for read in (
        lambda: writer.search(index=memories),
        lambda: writer.get(index=memories, id="w1"),
        lambda: writer.count(index=memories),
    ):
        with pytest.raises(AuthorizationException) as info:
            read()
        assert "this action is granted by the index privileges [read,all]" in info.value.body["error"]["reason"]


def test_a_write_key_reads_what_it_updates_with_source_as_elasticsearch_allows(
    admin: Elasticsearch, cluster: Cluster, memories: str
) -> None:
    """The update API returns the updated document when asked (``_source=true``), and Elasticsearch
    authorizes that with the update privilege alone (no read needed: the get result belongs to the
    update action, TransportUpdateAction / UpdateHelper.extractGetResult). The embedded gateway
    matches it — which is why Atlas's write-capable key never leaves the service.
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/docs-update.html#docs-update-api-query-params"""
    writer = cluster.with_key(mint_key(admin, "write-only-update", read_role([memories], privileges=["index"])))
    response = writer.update(index=memories, id="u2-tart", script={"source": "ctx.op = 'none'"}, source=True)
    assert response["get"]["_source"]["text"] == "apple tart with cinnamon"
    with pytest.raises(AuthorizationException):
        writer.get(index=memories, id="u2-tart")


def test_index_creation_needs_manage_or_create_index(admin: Elasticsearch, cluster: Cluster) -> None:
    """indices:admin/create is granted by create_index, manage and all — not by write."""
    name = f"new-{uuid.uuid4().hex[:8]}"
    writer = cluster.with_key(mint_key(admin, "no-create", read_role([f"{name}*"], privileges=["write"])))
    with pytest.raises(AuthorizationException) as info:
        writer.indices.create(index=name)
    assert info.value.body["error"]["reason"].endswith(
        "this action is granted by the index privileges [create_index,manage,all]"
    )
    assert admin.indices.exists(index=name).body is False
    manager = cluster.with_key(mint_key(admin, "manager", read_role([f"{name}*"], privileges=["manage"])))
    manager.indices.create(index=name)
    assert admin.indices.exists(index=name).body is True
    manager.indices.delete(index=name)


def test_cluster_actions_need_cluster_privileges(admin: Elasticsearch, cluster: Cluster) -> None:
    """Cluster actions are checked against cluster privileges (ClusterPrivilegeResolver)."""
    encoded = mint_key(admin, "no-cluster", read_role(["x"]))
    client = cluster.with_key(encoded)
    with pytest.raises(AuthorizationException) as info:
        client.cluster.health()
    assert info.value.body["error"]["reason"] == (
        f"action [cluster:monitor/health] is unauthorized for API key id [{key_id(encoded)}] of user [elastic], "
        "this action is granted by the cluster privileges [monitor,manage,all]"
    )
    monitor = cluster.with_key(mint_key(admin, "monitor", {"m": {"cluster": ["monitor"], "indices": []}}))
    assert monitor.cluster.health()["status"] in ("green", "yellow")


def test_writes_are_not_filtered_by_dls(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """ "Document level security doesn't apply to write APIs" (field-and-document-access-control.asciidoc):
    a DLS-restricted writer can index and delete documents its role query hides. This is why Atlas
    never gives clients write-capable keys."""
    role = read_role([memories], user_dls("t1", "u1"), privileges=["read", "write"])
    client = cluster.with_key(mint_key(admin, "dls-writer", role))
    client.index(index=memories, id="foreign", document={"tenant_id": "t2", "user_id": "u9", "text": "x"}, refresh=True)
    assert admin.get(index=memories, id="foreign")["found"] is True
    client.delete(index=memories, id="u2-tart", refresh=True)
    assert admin.exists(index=memories, id="u2-tart").body is False


def test_update_is_refused_under_dls(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """The update API is refused when DLS applies (security/authz/interceptor/UpdateRequestInterceptor.java;
    DocumentLevelSecurityTests.testUpdateApiIsBlocked), even for a visible document."""
    role = read_role([memories], user_dls("t1", "u1"), privileges=["read", "write"])
    client = cluster.with_key(mint_key(admin, "dls-updater", role))
    with pytest.raises(BadRequestError) as info:
        client.update(index=memories, id="u1-pie", doc={"text": "changed"})
    assert info.value.body["status"] == 400
    assert info.value.body["error"]["type"] == "security_exception"
    assert (
        info.value.body["error"]["reason"]
        == "Can't execute an update request if field or document level security is enabled"
    )
    assert admin.get(index=memories, id="u1-pie")["_source"]["text"] == "apple pie recipe from grandma"


def test_bulk_update_items_are_refused_under_dls(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """Bulk update items fail alone under DLS (security/authz/interceptor/BulkShardRequestInterceptor.java)."""
    role = read_role([memories], user_dls("t1", "u1"), privileges=["read", "write"])
    client = cluster.with_key(mint_key(admin, "dls-bulk", role))
    response = client.bulk(
        operations=[
            {"update": {"_index": memories, "_id": "u1-pie"}},
            {"doc": {"text": "changed"}},
            {"index": {"_index": memories, "_id": "u1-new"}},
            {"tenant_id": "t1", "user_id": "u1", "text": "new"},
        ],
        refresh="wait_for",
    )
    update_item, index_item = (next(iter(i.values())) for i in response["items"])
    assert response["errors"] is True
    assert update_item["status"] == 400
    assert update_item["error"]["reason"] == (
        "Can't execute a bulk item request with update requests embedded if field or document level security is enabled"
    )
    assert index_item["status"] == 201
    assert admin.get(index=memories, id="u1-pie")["_source"]["text"] == "apple pie recipe from grandma"


def test_update_without_dls_is_allowed(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """Without DLS the update API works for a key with ``index`` (IndexPrivilege.INDEX covers update*)."""
    client = cluster.with_key(mint_key(admin, "plain-updater", read_role([memories], privileges=["index"])))
    client.update(index=memories, id="u1-pie", doc={"text": "changed"}, refresh=True)
    assert admin.get(index=memories, id="u1-pie")["_source"]["text"] == "changed"


def test_delete_by_query_only_deletes_visible_documents(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """delete-by-query searches with the caller's privileges, so it needs read too and DLS narrows it
    (docs: delete-by-query "read, delete or write" privileges; the search runs as the user)."""
    role = read_role([memories], user_dls("t1", "u1"), privileges=["read", "delete"])
    client = cluster.with_key(mint_key(admin, "dls-deleter", role))
    result = client.delete_by_query(index=memories, query={"match_all": {}}, refresh=True)
    assert result["deleted"] == 3
    remaining = {h["_id"] for h in admin.search(index=memories, size=20)["hits"]["hits"]}
    assert remaining == {"u2-tart", "t2-juice", "t2-cat"}


def test_alias_changes_are_refused_under_dls(admin: Elasticsearch, cluster: Cluster, memories: str) -> None:
    """Adding an alias is refused when DLS applies (security/authz/interceptor/IndicesAliasesRequestInterceptor.java)."""
    role = read_role([f"{memories}*"], user_dls("t1", "u1"), privileges=["read", "manage"])
    client = cluster.with_key(mint_key(admin, "dls-aliaser", role))
    with pytest.raises(BadRequestError) as info:
        client.indices.update_aliases(actions=[{"add": {"index": memories, "alias": f"{memories}-mine"}}])
    assert info.value.body["error"]["reason"] == (
        "Alias requests are not allowed for users who have field or document level security enabled on one of the indices"
    )
    assert admin.indices.exists_alias(name=f"{memories}-mine").body is False


def test_unknown_endpoints_fail_loudly_for_api_keys(admin: Elasticsearch, cluster: Cluster) -> None:
    """What the gateway cannot authorise faithfully is refused, never passed through."""
    client = cluster.with_key(mint_key(admin, "explorer", read_role(["*"])))
    with pytest.raises(BadRequestError) as info:
        client.perform_request("GET", "/_cat/indices")
    assert info.value.body["error"]["type"] == "illegal_argument_exception"
    assert "[embedded_es]" in info.value.body["error"]["reason"]


def test_index_less_refresh_only_reaches_authorised_indices(
    admin: Elasticsearch, cluster: Cluster, memories: str
) -> None:
    """`POST /_refresh` expands to the indices the caller may refresh (``maintenance`` grants indices:admin/refresh)."""
    client = cluster.with_key(mint_key(admin, "refresher", read_role([memories], privileges=["maintenance"])))
    assert client.indices.refresh()["_shards"]["failed"] == 0
    nobody = cluster.with_key(mint_key(admin, "no-refresh", read_role(["nothing-here-*"], privileges=["maintenance"])))
    assert nobody.indices.refresh()["_shards"] == {"total": 0, "successful": 0, "failed": 0}


@pytest.mark.parametrize(
    "attempt",
    [
        lambda es: es.indices.create(index="Planted"),
        lambda es: es.index(index="planted/_search?q=*:*&", id="x", document={"a": 1}),
        lambda es: es.bulk(operations=[{"index": {"_index": "planted,all", "_id": "x"}}, {"a": 1}]),
        lambda es: es.indices.update_aliases(actions=[{"add": {"index": "*", "alias": "all_the#things"}}]),
        lambda es: es.reindex(source={"index": "*"}, dest={"index": "_stolen"}),
    ],
)
def test_no_principal_creates_a_name_elasticsearch_refuses(admin: Elasticsearch, attempt) -> None:
    """Not even the superuser: a planted name with ``/``, ``?`` or ``,`` would otherwise be a path an index
    expression could be confused with (MetadataCreateIndexService.validateIndexOrAliasName)."""
    before = sorted(admin.indices.get_alias(index="*"))
    with pytest.raises(BadRequestError) as info:
        attempt(admin)
    assert info.value.body["error"]["type"] == "invalid_index_name_exception"
    assert sorted(admin.indices.get_alias(index="*")) == before


# --- Writes through aliases (issue 24): Elasticsearch's own YAML test, security/authz/12_index_alias.yml ----


@pytest.fixture
def alias_world(admin: Elasticsearch) -> Iterator[dict[str, str]]:
    """12_index_alias.yml's setup, under a unique prefix: read_index behind can_read_1/2, write_index_1
    behind can_write_1/2, write_index_2 behind can_write_3; the role grants on the alias names only."""
    p = f"alias-{uuid.uuid4().hex[:8]}-"
    names = {n: p + n for n in ("read_index", "write_index_1", "write_index_2")}
    names |= {n: p + n for n in ("can_read_1", "can_read_2", "can_write_1", "can_write_2", "can_write_3")}
    for index in ("read_index", "write_index_1", "write_index_2"):
        admin.indices.create(index=names[index], mappings={"properties": {"name": {"type": "keyword"}}})
    for index, alias in (
        ("read_index", "can_read_1"),
        ("read_index", "can_read_2"),
        ("write_index_1", "can_write_1"),
        ("write_index_1", "can_write_2"),
        ("write_index_2", "can_write_3"),
    ):
        admin.indices.put_alias(index=names[index], name=names[alias])
    yield names
    admin.options(ignore_status=404).indices.delete(
        index=[names[n] for n in ("read_index", "write_index_1", "write_index_2")]
    )


def _mixed_role_key(admin: Elasticsearch, cluster: Cluster, names: dict[str, str]) -> Elasticsearch:
    role = {
        "mixed_role": {
            "indices": [
                {"names": [names["can_read_1"], names["can_read_2"]], "privileges": ["read"]},
                {
                    "names": [names["can_write_1"], names["can_write_2"], names["can_write_3"]],
                    "privileges": ["read", "write"],
                },
            ]
        }
    }
    return cluster.with_key(mint_key(admin, "mixed", role))


def _ids(admin: Elasticsearch, index: str) -> list[str]:
    admin.indices.refresh(index=index)
    return sorted(hit["_id"] for hit in admin.search(index=index, size=100)["hits"]["hits"])


def test_bulk_into_aliases_is_authorised_per_shard_request_then_per_item(
    admin: Elasticsearch, cluster: Cluster, alias_world: dict[str, str]
) -> None:
    """ "Test bulk indexing into an alias when resolved to write index" (elastic/elasticsearch,
    x-pack/plugin/src/yamlRestTest/resources/rest-api-spec/test/security/authz/12_index_alias.yml).

    After the alias swap can_write_2 and can_read_2 both write to write_index_2, so their items share one
    shard request. BulkShardRequest.indices() exposes the names the items used ("authorization works with
    aliases too"), and that request needs ``indices:data/write/bulk[s]`` on each: can_read_2 is read-only,
    so Elasticsearch refuses both items — can_write_2's too (403), though its own ``index`` action is
    granted. The gateway authorised each item alone and stored doc 23 (201). Items through can_write_3
    (write index write_index_1) share write_index_1's shard request with can_write_1: all granted."""
    n = alias_world
    admin.indices.update_aliases(
        actions=[
            {"add": {"index": n["write_index_2"], "alias": n["can_write_2"], "is_write_index": True}},
            {"add": {"index": n["write_index_2"], "alias": n["can_read_2"], "is_write_index": True}},
            {"add": {"index": n["write_index_1"], "alias": n["can_write_3"], "is_write_index": True}},
            {"add": {"index": n["write_index_2"], "alias": n["can_write_3"], "is_write_index": False}},
        ]
    )
    user = _mixed_role_key(admin, cluster, n)
    response = user.bulk(
        refresh=True,
        operations=[
            {"index": {"_index": n["can_read_1"], "_id": "20"}},
            {"name": "doc20"},
            {"index": {"_index": n["can_write_1"], "_id": "21"}},
            {"name": "doc21"},
            {"index": {"_index": n["can_read_2"], "_id": "22"}},
            {"name": "doc22"},
            {"index": {"_index": n["can_write_2"], "_id": "23"}},
            {"name": "doc23"},
            {"index": {"_index": n["can_write_3"], "_id": "24"}},
            {"name": "doc24"},
            {"update": {"_index": n["can_write_3"], "_id": "24"}},
            {"doc": {"name": "doc_24"}},
            {"delete": {"_index": n["can_write_3"], "_id": "24"}},
        ],
    ).body
    assert response["errors"] is True
    items = [next(iter(item.values())) for item in response["items"]]
    assert [item["status"] for item in items] == [403, 201, 403, 403, 201, 200, 200]
    for refused in (items[0], items[2], items[3]):
        assert refused["error"]["type"] == "security_exception"
    assert items[3]["error"]["reason"].startswith(
        f"action [indices:data/write/bulk[s]] is unauthorized for API key id [{user_key_id(user)}] "
        f"of user [elastic] on indices [{n['can_read_2']}]"
    )
    # The refused items changed nothing; the granted ones landed in the write indices.
    assert _ids(admin, n["write_index_1"]) == ["21"]
    assert _ids(admin, n["write_index_2"]) == []
    assert _ids(admin, n["read_index"]) == []


def test_bulk_into_aliases_when_only_some_are_allowed(
    admin: Elasticsearch, cluster: Cluster, alias_world: dict[str, str]
) -> None:
    """12_index_alias.yml, "Test bulk indexing into an alias when only some are allowed": items through
    read-only aliases are 403 each, the rest are written (different shards, so no item takes another down)."""
    n = alias_world
    user = _mixed_role_key(admin, cluster, n)
    operations: list[dict] = []
    for alias, doc_id in (
        ("can_read_1", "15"),
        ("can_write_1", "16"),
        ("can_read_2", "17"),
        ("can_write_2", "18"),
        ("can_write_3", "19"),
    ):
        operations += [{"index": {"_index": n[alias], "_id": doc_id}}, {"name": f"doc{doc_id}"}]
    response = user.bulk(refresh=True, operations=operations).body
    assert [next(iter(item.values()))["status"] for item in response["items"]] == [403, 201, 403, 201, 201]
    assert _ids(admin, n["write_index_1"]) == ["16", "18"]
    assert _ids(admin, n["write_index_2"]) == ["19"]
    assert _ids(admin, n["read_index"]) == []


def test_single_document_writes_through_an_alias_are_authorised_on_the_alias(
    admin: Elasticsearch, cluster: Cluster, alias_world: dict[str, str]
) -> None:
    """12_index_alias.yml, "Test indexing documents into an alias, when permitted / when forbidden":
    create, index, update and delete name an alias, and the alias's privileges decide (the request's
    own index name is what IndicesAndAliasesResolver authorises; the concrete index is not named in
    the role at all). A read-only alias refuses every write and stores nothing."""
    n = alias_world
    user = _mixed_role_key(admin, cluster, n)
    assert user.create(index=n["can_write_1"], id="1", document={"name": "doc1"})["result"] == "created"
    assert user.create(index=n["can_write_2"], id="2", document={"name": "doc2"})["result"] == "created"
    assert user.index(index=n["can_write_3"], id="9", document={"name": "doc9"})["result"] == "created"
    assert user.update(index=n["can_write_1"], id="1", doc={"name": "doc1b"})["result"] == "updated"
    assert user.delete(index=n["can_write_2"], id="2")["result"] == "deleted"
    for write in (
        lambda: user.create(index=n["can_read_1"], id="7", document={"name": "doc7"}),
        lambda: user.index(index=n["can_read_2"], id="8", document={"name": "doc8"}),
        lambda: user.update(index=n["can_read_1"], id="1", doc={"name": "x"}),
        lambda: user.delete(index=n["can_read_1"], id="1"),
    ):
        with pytest.raises(AuthorizationException):
            write()
    # The concrete index is not granted by the alias: naming it is refused.
    with pytest.raises(AuthorizationException):
        user.index(index=n["write_index_1"], id="3", document={"name": "doc3"})
    assert _ids(admin, n["write_index_1"]) == ["1"]
    assert admin.get(index=n["write_index_1"], id="1")["_source"] == {"name": "doc1b"}
    assert _ids(admin, n["write_index_2"]) == ["9"]
    assert _ids(admin, n["read_index"]) == []


def user_key_id(client: Elasticsearch) -> str:
    return client.security.authenticate()["api_key"]["id"]
