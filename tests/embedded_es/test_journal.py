"""The journal's pure parts: which engine requests it keeps, and the ids it pins (journal.py)."""

from __future__ import annotations

import json

import pytest

from embedded_es import routes
from embedded_es.journal import _pin_ids, write_action


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/i/_doc/1"),
        ("HEAD", "/i"),
        ("POST", "/i/_search?size=1"),
        ("POST", "/_msearch"),
        ("POST", "/i/_count"),
        ("POST", "/_mget"),
        ("POST", "/i/_pit?keep_alive=1m"),
        ("DELETE", "/_pit"),
        ("POST", "/_search/scroll"),
        ("DELETE", "/_search/scroll"),
        ("POST", "/i/_refresh"),
        ("POST", "/i/_flush"),
        ("POST", "/_search/template"),
        ("POST", "/i/_analyze"),
        ("POST", "/i/_validate/query"),
    ],
)
def test_reads_are_not_journaled(method: str, path: str) -> None:
    assert write_action(method, path) is None


@pytest.mark.parametrize(
    ("method", "path", "action"),
    [
        ("PUT", "/i/_doc/1?refresh=wait_for", routes.INDEX_OP_INDEX),
        ("POST", "/i/_doc", routes.INDEX_OP_INDEX),
        ("PUT", "/i/_create/1", routes.INDEX_OP_CREATE),
        ("POST", "/i/_update/1", routes.UPDATE),
        ("DELETE", "/i/_doc/1", routes.DELETE),
        ("POST", "/_bulk", routes.BULK),
        ("POST", "/i/_delete_by_query", routes.DELETE_BY_QUERY),
        ("POST", "/i/_update_by_query", routes.UPDATE_BY_QUERY),
        ("POST", "/_reindex", routes.REINDEX),
        ("PUT", "/i", routes.CREATE_INDEX),
        ("DELETE", "/i", routes.DELETE_INDEX),
        ("PUT", "/i/_mapping", routes.PUT_MAPPING),
        ("POST", "/_aliases", routes.ALIASES),
        ("PUT", "/_index_template/t", "indices:admin/index_template/put"),
        ("PUT", "/_ingest/pipeline/p", "write"),  # not in the route table: journaled unless known to be a read
        ("PUT", "/_cluster/settings", "write"),
        ("POST", "/i/_close", "write"),
    ],
)
def test_writes_are_journaled(method: str, path: str, action: str) -> None:
    assert write_action(method, path) == action


def test_an_engine_generated_id_is_written_into_the_record() -> None:
    method, path, body = _pin_ids(
        routes.INDEX_OP_INDEX, "POST", "/i/_doc?refresh=true", b'{"a":1}', {"_id": "gen/1", "result": "created"}
    )
    assert (method, path, body) == ("PUT", "/i/_doc/gen%2F1?refresh=true", b'{"a":1}')


def test_bulk_items_without_an_id_get_the_engines() -> None:
    lines = [
        {"index": {"_index": "i"}},
        {"a": 1},
        {"delete": {"_index": "i", "_id": "x"}},
        {"create": {"_index": "i"}},
        {"a": 2},
        {"update": {"_index": "i", "_id": "u"}},
        {"doc": {"a": 3}},
        {"index": {"_index": "i", "_id": "kept"}},
        {"a": 4},
    ]
    body = b"\n".join(json.dumps(line).encode() for line in lines) + b"\n"
    answer = {
        "items": [
            {"index": {"_id": "g1", "status": 201}},
            {"delete": {"_id": "x", "status": 200}},
            {"create": {"_id": "g2", "status": 201}},
            {"update": {"_id": "u", "status": 200}},
            {"index": {"_id": "kept", "status": 200}},
        ]
    }
    _method, _path, pinned = _pin_ids(routes.BULK, "POST", "/_bulk", body, answer)
    out = [json.loads(line) for line in pinned.split(b"\n") if line.strip()]
    assert out[0] == {"index": {"_index": "i", "_id": "g1"}}
    assert out[3] == {"create": {"_index": "i", "_id": "g2"}}
    assert out[1] == {"a": 1} and out[4] == {"a": 2} and out[6] == {"doc": {"a": 3}}
    assert out[7] == {"index": {"_index": "i", "_id": "kept"}}


def test_a_body_that_cannot_be_read_is_journaled_as_sent() -> None:
    assert _pin_ids(routes.BULK, "POST", "/_bulk", b"not json\n", {"items": [{}]}) == ("POST", "/_bulk", b"not json\n")
