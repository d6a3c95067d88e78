"""MCP bridge tests: the live server, tokens, and the official ``mcp`` client speaking to /mcp/ over HTTP."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tenants import services, tokens
from tenants.models import ApiKeyCredential, MemorySubject, Tenant

ALL_SCOPES = ["read", "write", "forget", "review"]


@pytest.fixture(autouse=True)
def _no_usage_bumps(settings):
    settings.ATLAS_USAGE_RECORDING = "off"  # no Celery worker here; recall must not write either


def tenant_with_subjects(slug_prefix: str, *external_ids: str) -> tuple[Tenant, list[MemorySubject]]:
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"{slug_prefix}-{uuid.uuid4().hex[:8]}", name=slug_prefix, actor="test")
    return tenant, [services.subject_create(tenant=tenant, external_id=e, actor="test") for e in external_ids]


def token_for(tenant: Tenant, subject: MemorySubject | None = None, scopes: list[str] | None = None) -> str:
    issued = tokens.token_create(
        tenant=tenant, subject=subject, name=f"mcp test {uuid.uuid4().hex[:6]}", scopes=scopes or ALL_SCOPES, actor="t"
    )
    return issued.secret


@asynccontextmanager
async def mcp_session(url: str, token: str | None, headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """An initialised official-client session on ``url``/mcp/ with ``token`` as the bearer."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient(headers=sent, timeout=60) as http:
        async with streamable_http_client(f"{url}/mcp/", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run the client part of a test on its own event loop (the test itself stays sync, for the ORM)."""
    return anyio.run(fn)


def call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One tools/call in a fresh session; the CallToolResult."""

    async def go():
        async with mcp_session(url, token) as session:
            return await session.call_tool(tool, arguments)

    return run(go)


def payload(result: Any) -> Any:
    """The JSON a tool answered (its text content), asserting it was not a tool error."""
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def tool_error(result: Any) -> dict[str, Any]:
    """The code/message/field of a tool error result, asserting it was one."""
    assert result.is_error, result.content
    error = result.structured_content["error"]
    text = result.content[0].text
    assert text.startswith(f"{error['code']}: {error['message']}")
    return error
