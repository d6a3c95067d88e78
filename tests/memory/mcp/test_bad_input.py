"""/mcp/ with malformed input: a page cursor the server never handed out is a tool error naming
``cursor`` (never "internal"), and a JSON-RPC body nested deeper than any message is a 400 naming the
body before the SDK parses it — through the official client and raw HTTP."""

from __future__ import annotations

import json

import pytest
import requests
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from memory.services import writes
from tests.bad_inputs import MALFORMED_CURSORS, NESTING_DEPTHS, nested_json

from .conftest import mcp_session, payload, run, tenant_with_subjects, token_for, tool_error

pytestmark = pytest.mark.django_db(transaction=True)
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION,
}


@pytest.fixture
def alice():
    tenant, [alice] = tenant_with_subjects("bad", "alice")
    for n in range(3):
        writes.fact_write(subject=alice, text=f"Alice fact {n}", fact_type="world")
    return tenant, alice


def test_a_malformed_cursor_is_a_tool_error_naming_the_cursor(atlas_server, alice) -> None:
    tenant, subject = alice
    token = token_for(tenant, subject)

    async def go():
        async with mcp_session(atlas_server.url, token) as session:
            first = payload(await session.call_tool("list_memories", {"page_size": 2}))
            second = payload(await session.call_tool("list_memories", {"cursor": first["next_cursor"]}))
            refused = {}
            for what, cursor in MALFORMED_CURSORS:
                refused[what] = await session.call_tool("list_memories", {"cursor": cursor})
            return first, second, refused

    first, second, refused = run(go)
    assert len(first["memories"]) == 2 and [m["text"] for m in second["memories"]] == ["Alice fact 0"]
    for what, result in refused.items():
        error = tool_error(result)
        assert error["code"] == "invalid" and error["field"] == "cursor", (what, error)
        # the tool's own schema refuses a cursor over 1,000 characters; the decoder everything else
        assert "cursor is not one this service handed out" in error["message"] or (
            len(dict(MALFORMED_CURSORS)[what]) > 1000 and "cursor" in error["message"]
        ), (what, error)


def _post(url: str, token: str, body: bytes) -> requests.Response:
    return requests.post(url + "/mcp/", data=body, headers={**HEADERS, "Authorization": f"Bearer {token}"}, timeout=60)


@pytest.mark.parametrize("depth", NESTING_DEPTHS)
def test_a_deeply_nested_body_is_a_400_naming_the_body(atlas_server, alice, depth) -> None:
    tenant, subject = alice
    token = token_for(tenant, subject)
    # Deep inside a well-formed tools/call (the arguments of remember), and a bare deep value.
    call = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "remember", "arguments": {"x": 0}}}
    ).encode()
    inside = call.replace(b'{"x": 0}', b'{"kind": "fact", "text": "hello", "x": ' + nested_json(depth) + b"}")
    for body in (inside, nested_json(depth)):
        response = _post(atlas_server.url, token, body)
        assert response.status_code == 400, response.text[:300]
        error = response.json()["error"]
        assert error["code"] == -32700 and error["message"] == "the request body is nested deeper than 32 levels"
    listed = run(lambda: _listed(atlas_server.url, token))
    assert sorted(m["text"] for m in listed) == ["Alice fact 0", "Alice fact 1", "Alice fact 2"]  # nothing written


async def _listed(url: str, token: str) -> list[dict]:
    async with mcp_session(url, token) as session:
        return payload(await session.call_tool("list_memories", {"types": ["semantic"]}))["memories"]


def test_a_message_as_deep_as_a_real_one_passes(atlas_server, alice) -> None:
    """A remember of a playbook with steps (5 levels: message, params, arguments, steps, step)."""
    tenant, subject = alice
    token = token_for(tenant, subject)
    arguments = {
        "kind": "playbook",
        "name": "vet visit",
        "trigger_text": "the cat has to see the vet",
        "steps": [{"instruction": "put a towel in the carrier"}, {"instruction": "book", "tool": "calendar"}],
    }
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "remember", "arguments": arguments}}
    response = _post(atlas_server.url, token, json.dumps(body).encode())
    assert response.status_code == 200, response.text
    assert response.json()["result"]["isError"] is False, response.text


def test_malformed_json_still_gets_the_sdks_parse_error(atlas_server, alice) -> None:
    tenant, subject = alice
    response = _post(atlas_server.url, token_for(tenant, subject), b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert response.status_code == 400 and response.json()["error"]["code"] == -32700


def test_a_body_over_the_upload_limit_is_413_before_the_sdk_reads_it(atlas_server, alice, settings) -> None:
    """The body is read here to check its nesting, so it is held to the REST API's size limit too."""
    tenant, subject = alice
    text = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": {"text": text}},
    }

    def chunks():  # no Content-Length: the body arrives in pieces, as a streaming client sends it
        raw = json.dumps(body).encode()
        for start in range(0, len(raw), 64 * 1024):
            yield raw[start : start + 64 * 1024]

    response = requests.post(
        atlas_server.url + "/mcp/",
        data=chunks(),
        headers={**HEADERS, "Authorization": f"Bearer {token_for(tenant, subject)}"},
        timeout=60,
    )
    assert response.status_code == 413
    assert (
        response.json()["error"]["message"]
        == f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"
    )


def test_a_tool_error_lists_twenty_unknown_arguments_and_80_characters_of_a_value(atlas_server, alice) -> None:
    """Issue 32, finding 10: the tool's schema error quoted every unexpected argument (60,000 of them made
    a message of megabytes) and a too-long value whole; the first twenty are named, and 80 characters of
    the value with its length."""
    tenant, subject = alice
    token = token_for(tenant, subject)

    async def go():
        async with mcp_session(atlas_server.url, token) as session:
            many = await session.call_tool("recall_memory", {"query": "x", **{f"k{n:05}": 0 for n in range(60_000)}})
            long = await session.call_tool("list_memories", {"cursor": "c" * 200_000})
            return tool_error(many), tool_error(long)

    many, long = run(go)
    named = ", ".join(f"'k{n:05}'" for n in range(20))
    assert many == {
        "code": "invalid",
        "message": f"invalid arguments for recall_memory: Additional properties are not allowed ({named}, … and "
        "59980 more were unexpected)",
        "field": "k00000",
    }
    assert long == {
        "code": "invalid",
        "message": f"invalid arguments for list_memories: cursor: {'c' * 80!r}… (200000 characters) is too long",
        "field": "cursor",
    }
