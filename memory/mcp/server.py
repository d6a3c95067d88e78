"""The MCP endpoint: an ASGI app that checks path, Origin, Host and the bearer token, then hands the
request to the SDK's streamable-HTTP session manager, which runs the memory tools.

Every authenticated request counts against the token's rate limit, the one the REST API keeps
(``atlas_site.api.token_rate_wait``): over it, a 429 with ``Retry-After`` before any MCP processing.

Stateless by default (``ATLAS_MCP_STATELESS``): each POST carries its bearer token and gets a JSON
answer; no ``Mcp-Session-Id`` is kept, so any worker serves any request and a revoked token stops
working on its next request. Only POST is served: any other method (GET, which would open a
server-to-client stream nothing ever writes to) is a 405 with ``Allow: POST`` at once (MCP spec,
streamable HTTP: "the server MUST either return Content-Type: text/event-stream in response to this
HTTP GET, or else return HTTP 405 Method Not Allowed"). ``ATLAS_MCP_STATELESS=false`` keeps the SDK's
in-memory sessions (SSE streams), which need sticky routing across workers; the token is still
checked on every request, a token holds at most ``ATLAS_MCP_STREAMS_PER_TOKEN`` GET streams at once
(429 beyond), and each is closed after ``ATLAS_MCP_STREAM_SECONDS`` (the client reopens it).

The session manager needs a running task group: ``running()`` starts it, and the ASGI app in
``atlas_site.asgi`` enters it from the server's lifespan (``StreamableHTTPSessionManager.run`` can be
entered once per manager, so each lifespan gets a fresh one).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from typing import Any

import anyio
import mcp_types as types
from django.conf import settings
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from atlas_site.api import retry_after, token_rate_wait
from atlas_site.echo import shortened
from atlas_site.errors import NotAuthenticated
from tenants.tokens import TokenPrincipal

from .auth import bearer_token, host_allowed, origin_allowed, principal_authenticate
from .body import INVALID_REQUEST, BodyRefused, body_checked
from .calls import tool_call
from .threads import run_sync
from .tools import TOOLS, TOOLS_BY_NAME

MCP_PATH = "/mcp"
STATELESS_METHODS = ("POST",)
STATEFUL_METHODS = ("GET", "POST", "DELETE")  # DELETE ends a session; GET opens its SSE stream
PRINCIPAL_SCOPE_KEY = "atlas.principal"  # set on the ASGI scope once the token is authenticated
SERVER_NAME = "atlas-memory"
INSTRUCTIONS = (
    "Atlas Memory remembers what users tell you across conversations. Call recall_memory before "
    "answering when the past may matter; store each user turn with remember (type=episodic) and durable "
    "facts or procedures as they become clear; correct facts with update_fact; forget_memory only when "
    "the user asks. With a tenant service token, name the user in every call (subject)."
)


def _version() -> str:
    try:
        return metadata.version("atlas-memory")
    except metadata.PackageNotFoundError:
        return ""


def _principal(ctx: Any) -> TokenPrincipal:
    request = getattr(ctx, "request", None)
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY) if request is not None else None
    if not isinstance(principal, TokenPrincipal):  # only reachable if the endpoint were bypassed
        raise MCPError(code=types.INTERNAL_ERROR, message="unauthenticated request reached the MCP server")
    return principal


def mcp_server_build() -> Server:
    """The SDK server: the tool list, and tools/call for the principal the endpoint authenticated."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        # Only what the token may call: a read,write token is not offered forget_memory to fail on.
        scopes = _principal(ctx).scopes
        return types.ListToolsResult(tools=[spec.tool for spec in TOOLS if spec.scope in scopes])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        principal = _principal(ctx)
        spec = TOOLS_BY_NAME.get(params.name)
        if spec is None:  # a protocol error, as the spec says for an unknown tool
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {shortened(params.name)}")
        return await run_sync(tool_call, principal=principal, spec=spec, arguments=params.arguments or {})

    return Server(
        SERVER_NAME,
        version=_version(),
        title="Atlas Memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _refuse(
    send: Send, status: int, message: str, headers: dict[str, str] | None = None, *, code: int = INVALID_REQUEST
) -> None:
    """An HTTP refusal before any MCP processing, with a JSON-RPC error body (no request id)."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


def _www_authenticate(presented: bool) -> str:
    # RFC 6750 §3: no error code when the request carried no bearer token; invalid_token when it did.
    challenge = f'Bearer realm="{SERVER_NAME}"'
    return challenge + ', error="invalid_token"' if presented else challenge


def is_mcp_path(scope: Scope) -> bool:
    path = _path(scope)
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


def _path(scope: Scope) -> str:
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


class McpEndpoint:
    """ASGI app for ``/mcp`` and ``/mcp/``: refuses what is not for it, authenticates, then the SDK."""

    def __init__(self) -> None:
        self._managers: list[StreamableHTTPSessionManager] = []
        self._streams: Counter[str] = Counter()  # open GET streams per token (stateful mode)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        stateless = settings.ATLAS_MCP_STATELESS
        # The SDK's own Host/Origin checks stay off (security_settings=None): ours run first, with
        # Django's ALLOWED_HOSTS and ATLAS_MCP_ALLOWED_ORIGINS; the SDK still requires JSON bodies.
        manager = StreamableHTTPSessionManager(app=mcp_server_build(), stateless=stateless, json_response=stateless)
        async with manager.run():
            self._managers.append(manager)
            try:
                yield
            finally:
                self._managers.remove(manager)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        if _path(scope) not in (MCP_PATH, MCP_PATH + "/"):
            await _refuse(send, 404, "not found: the MCP endpoint is /mcp/")
            return
        allowed = STATELESS_METHODS if self._stateless() else STATEFUL_METHODS
        if scope.get("method") not in allowed:
            detail = "only POST" if allowed == STATELESS_METHODS else "GET, POST and DELETE"
            message = f"method not allowed: this MCP endpoint serves {detail}"
            await _refuse(send, 405, message, {"Allow": ", ".join(allowed)})
            return
        if not all(origin_allowed(origin) for origin in headers.getlist("origin")):
            await _refuse(send, 403, "Origin not allowed (ATLAS_MCP_ALLOWED_ORIGINS)")
            return
        if not host_allowed(headers.get("host")):
            await _refuse(send, 400, "Host not allowed (DJANGO_ALLOWED_HOSTS)")
            return
        authorization = headers.get("authorization")
        try:
            principal = await principal_authenticate(authorization=authorization)
        except NotAuthenticated as error:
            challenge = _www_authenticate(presented=bearer_token(authorization) is not None)
            await _refuse(send, 401, error.message, {"WWW-Authenticate": challenge})
            return
        # The token's one rate limit, shared with the REST API, before any MCP processing.
        wait = await run_sync(token_rate_wait, principal=principal)
        if wait is not None:
            message = "too many requests for this token (ATLAS_API_RATE, shared with the REST API)"
            await _refuse(send, 429, message, {"Retry-After": retry_after(wait)})
            return
        if not self._managers:
            await _refuse(send, 503, "the MCP endpoint is not running: serve the app with the ASGI lifespan on")
            return
        if scope.get("method") == "POST":
            try:
                checked = await body_checked(receive)
            except BodyRefused as refused:
                await _refuse(send, refused.status, refused.message, code=refused.code)
                return
            if checked is None:
                return
            receive = checked
        # The SDK binds a stateful session to the credential that opened it (scope["user"]): another
        # token presenting that session id gets the same 404 as an unknown session.
        user = AuthenticatedUser(
            AccessToken(
                token=principal.token.prefix,  # an identifier, never the secret
                client_id=f"atlas-token:{principal.token.prefix}",
                scopes=sorted(principal.scopes),
            )
        )
        scope = {**scope, PRINCIPAL_SCOPE_KEY: principal, "user": user}
        if scope["method"] != "GET":
            await self._managers[-1].handle_request(scope, receive, send)
            return
        # Stateful mode's server-to-client stream: bounded per token, and closed after a while.
        holder = principal.token.prefix
        if self._streams[holder] >= settings.ATLAS_MCP_STREAMS_PER_TOKEN:
            limit = settings.ATLAS_MCP_STREAMS_PER_TOKEN
            message = f"this token already holds {limit} open MCP streams (ATLAS_MCP_STREAMS_PER_TOKEN)"
            await _refuse(send, 429, message, {"Retry-After": "5"})
            return
        self._streams[holder] += 1
        state = {"started": False, "done": False}

        async def tracked(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                state["done"] = True
            await send(message)

        try:
            with anyio.move_on_after(settings.ATLAS_MCP_STREAM_SECONDS):
                await self._managers[-1].handle_request(scope, receive, tracked)
            if state["started"] and not state["done"]:  # time is up: end the stream cleanly
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self._streams[holder] -= 1
            if self._streams[holder] <= 0:
                del self._streams[holder]

    def _stateless(self) -> bool:
        return self._managers[-1].stateless if self._managers else settings.ATLAS_MCP_STATELESS
