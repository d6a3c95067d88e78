"""A document id of "." or ".." is an id, never a step up the URL path.

Elasticsearch decodes each path component on its own (``RestUtils.decodeComponent``,
server/src/main/java/org/elasticsearch/rest/RestUtils.java) and does not normalise dot segments, so
``/idx/_doc/%2E%2E`` addresses the document whose id is ``..``; the only rule on an id's text is its length
(``IndexRequest.validate``: at most 512 bytes). The gateway forwarded ids escaped by ``urllib.parse.quote``,
which leaves dots alone, and aiohttp's URL normalised ``/idx/_doc/..`` to ``/idx/`` — a document read
became an index read (CI, stop 42: ``HEAD /…/_doc/%2E%2E`` answered 500), and a document delete would have
become an index delete. Each request below is tried with a DLS-restricted key and with the superuser.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from .adversarial import RawClient
from .conftest import mint_key


@pytest.fixture
def world(cluster, admin) -> Iterator[tuple[str, RawClient, RawClient]]:
    index = f"dots-{uuid.uuid4().hex[:8]}"
    admin.indices.create(index=index, mappings={"properties": {"user_id": {"type": "keyword"}}})
    for doc_id, user in (("..", "u1"), (".", "u1"), ("keep", "u1"), ("other", "u2")):
        admin.index(index=index, id=doc_id, document={"user_id": user})
    admin.indices.refresh(index=index)
    role = {"names": [index], "privileges": ["read", "write"], "query": {"term": {"user_id": "u1"}}}
    key = mint_key(admin, "dots", {"r": {"cluster": [], "indices": [role]}})
    user = RawClient.api_key(cluster.url, key)
    superuser = RawClient.basic(cluster.url, cluster.username, cluster.password)
    yield index, user, superuser
    user.close()
    superuser.close()
    admin.indices.delete(index=index, ignore_unavailable=True)


@pytest.mark.parametrize("who", ["user", "superuser"])
@pytest.mark.parametrize(("escaped", "doc_id"), [("%2E%2E", ".."), ("%2e%2E", ".."), ("%2E", ".")])
def test_a_dot_id_is_read_as_a_document(world, who: str, escaped: str, doc_id: str) -> None:
    index, user, superuser = world
    client = user if who == "user" else superuser
    got = client.request("GET", f"/{index}/_doc/{escaped}")
    assert got.status == 200, got.body[:300]
    assert (got.json()["_index"], got.json()["_id"], got.json()["found"]) == (index, doc_id, True)
    assert client.request("HEAD", f"/{index}/_doc/{escaped}").status == 200
    source = client.request("GET", f"/{index}/_source/{escaped}")
    assert (source.status, source.json()) == (200, {"user_id": "u1"})


@pytest.mark.parametrize("who", ["user", "superuser"])
def test_a_dot_id_that_is_not_there_is_a_404_not_the_index(world, who: str) -> None:
    index, user, superuser = world
    client = user if who == "user" else superuser
    assert client.request("DELETE", f"/{index}/_doc/%2E%2E?refresh=true").status == 200
    got = client.request("GET", f"/{index}/_doc/%2E%2E")
    assert (got.status, got.json()) == (404, {"_index": index, "_id": "..", "found": False})
    assert client.request("HEAD", f"/{index}/_doc/%2E%2E").status == 404


@pytest.mark.parametrize("who", ["user", "superuser"])
def test_deleting_a_dot_id_deletes_that_document_and_nothing_else(world, admin, who: str) -> None:
    index, user, superuser = world
    client = user if who == "user" else superuser
    deleted = client.request("DELETE", f"/{index}/_doc/%2E%2E?refresh=true")
    assert (deleted.status, deleted.json()["result"], deleted.json()["_id"]) == (200, "deleted", "..")
    left = admin.search(index=index, query={"match_all": {}}, size=10)
    assert sorted(hit["_id"] for hit in left["hits"]["hits"]) == [".", "keep", "other"]


@pytest.mark.parametrize("who", ["user", "superuser"])
def test_writing_a_dot_id_writes_that_document(world, admin, who: str) -> None:
    index, user, superuser = world
    client = user if who == "user" else superuser
    put = client.request("PUT", f"/{index}/_doc/%2E?refresh=true", {"user_id": "u1", "note": "put"})
    assert (put.status, put.json()["_id"], put.json()["result"]) == (200, ".", "updated")
    updated = client.request("POST", f"/{index}/_update/%2E%2E?refresh=true", {"doc": {"note": "upd"}})
    if who == "user":  # TransportUpdateAction refuses an update under document level security
        assert (updated.status, updated.json()["error"]["type"]) == (400, "security_exception")
        assert admin.get(index=index, id="..")["_source"] == {"user_id": "u1"}
    else:
        assert (updated.status, updated.json()["_id"]) == (200, "..")
        assert admin.get(index=index, id="..")["_source"] == {"user_id": "u1", "note": "upd"}
    assert admin.get(index=index, id=".")["_source"] == {"user_id": "u1", "note": "put"}
    assert admin.indices.exists(index=index)


def test_a_dot_id_of_another_user_stays_hidden(world, admin) -> None:
    index, user, _ = world
    admin.index(index=index, id="..", document={"user_id": "u2"}, refresh=True)
    got = user.request("GET", f"/{index}/_doc/%2E%2E")
    assert (got.status, got.json()) == (404, {"_index": index, "_id": "..", "found": False})
    assert user.request("HEAD", f"/{index}/_doc/%2E%2E").status == 404
