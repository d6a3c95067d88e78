"""/mcp/ over real HTTP: the official client's handshake and tool list, bearer auth (401), the Origin and
Host rules (403, 400), stateless requests, and the router beside Django with its lifespan."""

from __future__ import annotations

import time
from datetime import timedelta

import anyio
import httpx2
import pytest
import requests
from django.utils import timezone
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from atlas_site.asgi import AtlasApplication, django_application
from memory.mcp.server import McpEndpoint
from tenants import services, tokens
from tenants.models import ApiToken
from tests.live_server import live_server

from .conftest import mcp_session, payload, run, tenant_with_subjects, token_for, tool_error

pytestmark = pytest.mark.django_db(transaction=True)

TOOL_NAMES = [
    "recall_memory",
    "remember",
    "update_fact",
    "forget_memory",
    "list_memories",
    "memory_chain",
    "memory_provenance",
    "record_outcome",
    "list_proposals",
    "review_proposal",
]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "raw"}},
}


def post(url: str, body: object, *, token: str | None = None, path: str = "/mcp/", **headers: str):
    sent = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    return requests.post(url + path, json=body, headers=sent, timeout=30)


@pytest.fixture
def alice():
    tenant, [alice] = tenant_with_subjects("srv", "alice")
    return tenant, alice


def test_initialize_and_the_tool_list_with_the_official_client(atlas_server, alice) -> None:
    tenant, subject = alice
    token = token_for(tenant, subject)

    async def go():
        async with mcp_session(atlas_server.url, token) as session:
            return session.initialize_result, await session.list_tools()

    init, listed = run(go)
    assert init.server_info.name == "atlas-memory" and init.capabilities.tools is not None
    assert "recall_memory" in init.instructions
    assert [tool.name for tool in listed.tools] == TOOL_NAMES
    by_name = {tool.name: tool for tool in listed.tools}
    for tool in listed.tools:
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert "subject" in schema["properties"] and "subject" not in schema["required"]
        assert all(prop.get("type") for prop in schema["properties"].values())
        assert len(tool.description) > 150, tool.name
    recall = by_name["recall_memory"].input_schema["properties"]
    assert (recall["k"]["minimum"], recall["k"]["maximum"], recall["k"]["type"]) == (1, 50, "integer")
    assert recall["types"]["items"]["enum"] == ["episodic", "semantic", "procedural", "catalog"]
    assert recall["fact_type"]["enum"] == ["preference", "identity", "constraint", "world"]
    assert (recall["since"]["format"], recall["until"]["format"]) == ("date-time", "date-time")
    remember = by_name["remember"].input_schema
    assert remember["required"] == []  # type, or its old name kind (memory.mcp.tools._remembered_type)
    assert remember["properties"]["type"]["enum"] == ["episodic", "semantic", "procedural"]
    assert remember["properties"]["kind"]["enum"] == ["episode", "fact", "playbook"]
    assert (remember["properties"]["kind"]["deprecated"], remember["properties"]["at"]["deprecated"]) == (True, True)
    assert remember["properties"]["fact_type"]["enum"] == ["preference", "identity", "constraint", "world"]
    update = by_name["update_fact"].input_schema
    assert update["required"] == ["memory_id", "text"]
    assert update["properties"]["contradiction"]["enum"] == ["natural", "harsh"]
    assert [t.name for t in listed.tools if t.annotations.read_only_hint] == [
        "recall_memory",
        "list_memories",
        "memory_chain",
        "memory_provenance",
        "list_proposals",
    ]
    # review_proposal's reject deletes the proposal.
    assert [t.name for t in listed.tools if t.annotations.destructive_hint] == ["forget_memory", "review_proposal"]


def test_a_token_is_offered_only_the_tools_its_scopes_allow(atlas_server, alice) -> None:
    """The README's configuration has read,write: forget_memory must not be listed only to fail."""
    tenant, subject = alice

    def listed(scopes: str) -> list[str]:
        issued = tokens.token_create(tenant=tenant, subject=subject, name=scopes, scopes=scopes, actor="t")

        async def go() -> list[str]:
            async with mcp_session(atlas_server.url, issued.secret) as session:
                return [tool.name for tool in (await session.list_tools()).tools]

        return run(go)

    assert listed("read") == ["recall_memory", "list_memories", "memory_chain", "memory_provenance", "list_proposals"]
    assert listed("read,write") == [name for name in TOOL_NAMES if name not in ("forget_memory", "review_proposal")]
    assert listed("read,review") == [*listed("read"), "review_proposal"]
    assert listed("forget") == ["forget_memory"]


def test_the_official_client_in_its_default_mode_speaks_the_2026_protocol_too(atlas_server, alice) -> None:
    """``mcp.client.Client`` probes server/discover and adopts 2026-07-28 (per-request envelopes, no
    initialize); the same endpoint, auth and tools serve it."""
    tenant, subject = alice
    token = token_for(tenant, subject)

    async def go():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(f"{atlas_server.url}/mcp/", http_client=http)) as client:
                listed = await client.list_tools()
                stored = await client.call_tool("remember", {"kind": "fact", "text": "Alice speaks Basque"})
                bad = await client.call_tool("recall_memory", {"query": "Basque", "k": 0})
                return client.session.protocol_version, listed, stored, bad

    version, listed, stored, bad = run(go)
    assert version == "2026-07-28"
    assert [tool.name for tool in listed.tools] == TOOL_NAMES
    assert payload(stored)["text"] == "Alice speaks Basque"
    assert tool_error(bad) == {"code": "invalid", "field": "k", "message": bad.structured_content["error"]["message"]}
    assert (
        bad.content[0].text
        == "invalid: invalid arguments for recall_memory: k: 0 is less than the minimum of 1 (field: k)"
    )


def test_no_invalid_revoked_or_expired_token_is_401_before_any_mcp_processing(atlas_server, alice) -> None:
    tenant, subject = alice
    revoked = tokens.token_create(tenant=tenant, subject=subject, name="revoked", scopes="read", actor="t")
    tokens.token_revoke(token=revoked.token, actor="t")
    expired = tokens.token_create(tenant=tenant, name="expired", scopes="read", actor="t")
    ApiToken.objects.filter(pk=expired.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    _, [gone] = tenant_with_subjects("gone", "gone")
    deactivated = token_for(gone.tenant, gone)
    services.subject_deactivate(subject=gone, actor="t")
    valid = token_for(tenant, subject, ["read"])
    cases = {
        "no header": ({}, False),
        "empty bearer": ({"Authorization": "Bearer "}, False),
        "another scheme": ({"Authorization": f"Basic {valid}"}, False),
        "malformed": ({"Authorization": "Bearer atlas_nope"}, True),
        "unknown secret": ({"Authorization": f"Bearer {valid[:-4]}AAAA"}, True),
        "revoked": ({"Authorization": f"Bearer {revoked.secret}"}, True),
        "expired": ({"Authorization": f"Bearer {expired.secret}"}, True),
        "deactivated subject": ({"Authorization": f"Bearer {deactivated}"}, True),
    }
    for case, (headers, presented) in cases.items():
        for body in (INITIALIZE, "not json at all"):  # refused before the body is even parsed
            response = post(atlas_server.url, body, **headers)
            assert response.status_code == 401, case
            challenge = response.headers["WWW-Authenticate"]
            assert challenge == 'Bearer realm="atlas-memory"' + (', error="invalid_token"' if presented else "")
            assert response.json()["error"]["message"] in (
                "the token is missing, malformed, unknown, expired or revoked",
                "a bearer token is required: Authorization: Bearer atlas_…",
            ), case
    assert post(atlas_server.url, INITIALIZE, token=valid).status_code == 200

    async def go():
        async with mcp_session(atlas_server.url, revoked.secret):
            pass

    with pytest.raises(ExceptionGroup) as refused:
        run(go)
    assert refused.group_contains(MCPError, match="expired or revoked", depth=2)


def test_an_origin_not_allowed_is_403_and_no_origin_passes(atlas_server, alice, settings) -> None:
    tenant, subject = alice
    token = token_for(tenant, subject, ["read"])
    # The default list: ATLAS_PUBLIC_URL's origin and loopback on its port (tests: http://127.0.0.1:8000).
    for allowed in ("http://127.0.0.1:8000", "http://localhost:8000", "HTTP://LocalHost:8000/"):
        assert post(atlas_server.url, INITIALIZE, token=token, Origin=allowed).status_code == 200, allowed
    for refused in ("http://evil.example", "http://127.0.0.1:8001", "https://127.0.0.1:8000", "null", "garbage"):
        response = post(atlas_server.url, INITIALIZE, token=token, Origin=refused)
        assert response.status_code == 403, refused
        assert post(atlas_server.url, INITIALIZE, Origin=refused).status_code == 403  # before the token check
    assert post(atlas_server.url, INITIALIZE, token=token).status_code == 200  # no Origin: not a browser
    settings.ATLAS_MCP_ALLOWED_ORIGINS = ["https://app.example.com"]
    assert post(atlas_server.url, INITIALIZE, token=token, Origin="https://app.example.com:443").status_code == 200
    assert post(atlas_server.url, INITIALIZE, token=token, Origin="http://127.0.0.1:8000").status_code == 403

    async def go():
        async with mcp_session(atlas_server.url, token, {"Origin": "http://evil.example"}):
            pass

    with pytest.raises(ExceptionGroup) as refused_group:
        run(go)
    assert refused_group.group_contains(MCPError, match="Origin not allowed", depth=2)


def test_a_host_django_does_not_serve_is_400(atlas_server, alice) -> None:
    tenant, subject = alice
    token = token_for(tenant, subject, ["read"])
    response = post(atlas_server.url, INITIALIZE, token=token, Host="rebound.evil.example")
    assert response.status_code == 400
    assert post(atlas_server.url, INITIALIZE, token=token, Host="localhost:9999").status_code == 200


def test_stateless_requests_need_no_session(atlas_server, alice) -> None:
    tenant, subject = alice
    token = token_for(tenant, subject)
    initialised = post(atlas_server.url, INITIALIZE, token=token)
    assert initialised.status_code == 200 and "mcp-session-id" not in initialised.headers
    assert initialised.headers["content-type"].startswith("application/json")
    # No initialize on this connection, no session id: each request stands alone with its token.
    remember = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": {"kind": "fact", "text": "Alice keeps bees"}},
    }
    response = post(atlas_server.url, remember, token=token)
    assert response.status_code == 200 and "mcp-session-id" not in response.headers
    result = response.json()
    assert result["id"] == 7 and result["result"]["isError"] is False
    assert result["result"]["structuredContent"]["text"] == "Alice keeps bees"
    listed = post(atlas_server.url, {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}, token=token).json()
    assert len(listed["result"]["tools"]) == len(TOOL_NAMES)

    async def go():  # the official client over two separate sessions sees the same memory
        async with mcp_session(atlas_server.url, token) as session:
            return await session.call_tool("list_memories", {"types": ["semantic"]})

    assert [m["text"] for m in payload(run(go))["memories"]] == ["Alice keeps bees"]


def test_stateful_mode_binds_each_session_to_the_token_that_opened_it(alice, settings, django_db_blocker) -> None:
    """ATLAS_MCP_STATELESS=false: the SDK's sessions (Mcp-Session-Id, SSE answers); the token is still
    checked on every request, and a session id presented with another token is an unknown session."""
    tenant, subject = alice
    token, other = token_for(tenant, subject), token_for(tenant, subject)
    settings.ATLAS_MCP_STATELESS = False  # read when the endpoint starts, i.e. at the server's lifespan
    app = AtlasApplication(django_app=django_application, mcp_endpoint=McpEndpoint())
    with live_server(app, django_db_blocker) as server:

        async def go():
            async with mcp_session(server.url, token) as session:
                return await session.call_tool("remember", {"kind": "fact", "text": "Alice sails"})

        assert payload(run(go))["text"] == "Alice sails"
        opened = post(server.url, INITIALIZE, token=token)
        assert opened.status_code == 200 and opened.headers["content-type"].startswith("text/event-stream")
        session_id = opened.headers["mcp-session-id"]
        initialised = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert post(server.url, initialised, token=token, Mcp_Session_Id=session_id).status_code == 202
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        assert post(server.url, listing, token=other, Mcp_Session_Id=session_id).status_code == 404
        assert post(server.url, listing, token=None, Mcp_Session_Id=session_id).status_code == 401
        listed = post(server.url, listing, token=token, Mcp_Session_Id=session_id)
        assert listed.status_code == 200 and '"recall_memory"' in listed.text


def test_the_router_sends_mcp_paths_to_mcp_and_the_rest_to_django(atlas_server, alice) -> None:
    tenant, subject = alice
    token = token_for(tenant, subject, ["read"])
    assert post(atlas_server.url, INITIALIZE, token=token, path="/mcp").status_code == 200
    other = post(atlas_server.url, INITIALIZE, token=token, path="/mcp/other")
    assert other.status_code == 404 and other.json()["error"]["message"] == "not found: the MCP endpoint is /mcp/"
    django_404 = post(atlas_server.url, INITIALIZE, token=token, path="/mcpx/")
    assert django_404.status_code == 404 and "jsonrpc" not in django_404.text
    health = requests.get(atlas_server.url + "/healthz", timeout=30)
    assert health.headers["content-type"].startswith("application/json") and "checks" in health.json()


def test_an_unknown_tool_is_a_protocol_error(atlas_server, alice) -> None:
    tenant, subject = alice
    token = token_for(tenant, subject)

    async def go():
        async with mcp_session(atlas_server.url, token) as session:
            await session.call_tool("drop_everything", {})

    with pytest.raises(ExceptionGroup) as refused:
        run(go)
    assert refused.group_contains(MCPError, match="Unknown tool: drop_everything", depth=2)


def test_the_lifespan_starts_and_stops_the_mcp_endpoint() -> None:
    """Django's ASGI handler has no lifespan; the router answers it and runs the session manager."""
    endpoint = McpEndpoint()
    app = AtlasApplication(django_app=None, mcp_endpoint=endpoint)
    sent: list[dict] = []

    async def go():
        to_app, app_inbox = anyio.create_memory_object_stream(2)

        async def send(message):
            sent.append({**message, "running": bool(endpoint._managers)})

        async with anyio.create_task_group() as tg:
            tg.start_soon(app, {"type": "lifespan"}, app_inbox.receive, send)
            await to_app.send({"type": "lifespan.startup"})
            while not sent:
                await anyio.sleep(0.01)
            await to_app.send({"type": "lifespan.shutdown"})

    anyio.run(go)
    assert sent == [
        {"type": "lifespan.startup.complete", "running": True},
        {"type": "lifespan.shutdown.complete", "running": False},
    ]


def test_without_a_lifespan_the_endpoint_answers_503(atlas_server, alice) -> None:
    tenant, subject = alice
    token = token_for(tenant, subject, ["read"])
    endpoint = McpEndpoint()  # never started
    messages: list[dict] = []

    async def go():
        async def receive():
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message):
            messages.append(message)

        headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode())]
        await endpoint({"type": "http", "path": "/mcp/", "method": "POST", "headers": headers}, receive, send)

    anyio.run(go)
    assert messages[0]["status"] == 503


def test_one_rate_limit_per_token_across_rest_and_mcp(atlas_server, alice, settings) -> None:
    """ATLAS_API_RATE is one budget per token whichever interface spends it (issue 24, finding 4): REST
    requests use it up and MCP answers 429 with Retry-After before doing anything; and the reverse."""
    settings.ATLAS_API_RATE = "3/min"
    tenant, subject = alice
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    remember = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": {"kind": "fact", "text": "Alice keeps goats"}},
    }

    def rest_me(token: str) -> requests.Response:
        return requests.get(f"{atlas_server.url}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)

    # REST first, then MCP.
    token = token_for(tenant, subject)
    assert [rest_me(token).status_code for _ in range(3)] == [200, 200, 200]
    for body in (listing, remember):
        refused = post(atlas_server.url, body, token=token)
        assert refused.status_code == 429
        assert int(refused.headers["Retry-After"]) >= 1
        assert refused.json()["error"]["message"].startswith("too many requests for this token")
    # MCP first, then REST (problem details, as every REST refusal).
    other = token_for(tenant, subject)
    assert [post(atlas_server.url, listing, token=other).status_code for _ in range(3)] == [200, 200, 200]
    limited = rest_me(other)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert post(atlas_server.url, remember, token=other).status_code == 429
    # Nothing the refused calls asked for was done; a third token still has its own budget.
    fresh = token_for(tenant, subject)
    listed = post(
        atlas_server.url,
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "list_memories", "arguments": {}}},
        token=fresh,
    )
    assert listed.status_code == 200
    assert listed.json()["result"]["structuredContent"]["memories"] == []


def test_stateless_mode_answers_every_method_but_post_with_405_at_once(atlas_server, alice) -> None:
    """A GET used to open a server-to-client stream that nothing ever wrote to and that never ended
    (issue 24, finding 5: 19,800 of them took the web process to 2 GB). The spec's other answer is
    405 (streamable HTTP, "Listening for Messages from the Server"): now every method but POST gets it,
    with ``Allow: POST``, before authentication — a read timeout here would be the old, held stream."""
    tenant, subject = alice
    token = token_for(tenant, subject, ["read"])
    for method in ("GET", "DELETE", "PUT", "PATCH", "OPTIONS"):
        for headers in ({"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}, {}):
            response = requests.request(method, f"{atlas_server.url}/mcp/", headers=headers, timeout=(5, 5))
            assert response.status_code == 405, (method, response.text)
            assert response.headers["Allow"] == "POST"
            assert response.json()["error"]["message"] == "method not allowed: this MCP endpoint serves only POST"
    assert post(atlas_server.url, INITIALIZE, token=token).status_code == 200


def test_stateful_streams_are_capped_per_token_and_closed_after_a_while(alice, settings, django_db_blocker) -> None:
    """With sessions on, GET opens the session's SSE stream: a token holds at most
    ATLAS_MCP_STREAMS_PER_TOKEN of them (429 beyond), each ends after ATLAS_MCP_STREAM_SECONDS, and then
    the token may open one again; methods the transport does not serve are 405 naming the three it does."""
    tenant, subject = alice
    token, other = token_for(tenant, subject), token_for(tenant, subject)
    settings.ATLAS_MCP_STATELESS = False
    settings.ATLAS_MCP_STREAMS_PER_TOKEN = 1
    settings.ATLAS_MCP_STREAM_SECONDS = 2
    app = AtlasApplication(django_app=django_application, mcp_endpoint=McpEndpoint())
    with live_server(app, django_db_blocker) as server:

        def session_for(bearer: str) -> str:
            opened = post(server.url, INITIALIZE, token=bearer)
            session_id = opened.headers["mcp-session-id"]
            initialised = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert post(server.url, initialised, token=bearer, Mcp_Session_Id=session_id).status_code == 202
            return session_id

        def stream(bearer: str, session_id: str) -> requests.Response:
            headers = {
                "Authorization": f"Bearer {bearer}",
                "Accept": "text/event-stream",
                "Mcp-Session-Id": session_id,
                "MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION,
            }
            return requests.get(f"{server.url}/mcp/", headers=headers, stream=True, timeout=(5, 30))

        first, second = session_for(token), session_for(token)
        held = stream(token, first)
        assert held.status_code == 200 and held.headers["content-type"].startswith("text/event-stream")
        refused = stream(token, second)
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "5"
        elsewhere = stream(other, session_for(other))  # another token has its own allowance
        assert elsewhere.status_code == 200
        elsewhere.close()
        started = time.monotonic()
        for _chunk in held.iter_content(chunk_size=None):  # ends when the server closes the stream
            pass
        assert time.monotonic() - started < 25
        again = stream(token, second)
        assert again.status_code == 200
        again.close()
        put = requests.put(f"{server.url}/mcp/", headers={"Authorization": f"Bearer {token}"}, timeout=(5, 5))
        assert put.status_code == 405 and put.headers["Allow"] == "GET, POST, DELETE"
