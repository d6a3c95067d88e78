"""ASGI entry point (uvicorn atlas_site.asgi:application): ``/mcp`` and ``/mcp/…`` go to the MCP endpoint
(memory/mcp), everything else to Django.

Django's ASGI handler serves HTTP only (it has no lifespan protocol), so this router answers the
lifespan itself: startup starts the MCP endpoint's session manager (its task group must outlive every
request), shutdown stops it. Under a server without lifespan support the MCP endpoint answers 503 and
Django serves as before.
"""

from __future__ import annotations

import logging
import os
from contextlib import AsyncExitStack

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_site.settings")
django_application = get_asgi_application()  # sets Django up: import the apps' code after it

from atlas_site.body_limit import ChunkedBodyLimit  # noqa: E402
from atlas_site.observability.http import asgi_measured  # noqa: E402
from memory.mcp.server import McpEndpoint, is_mcp_path  # noqa: E402

log = logging.getLogger(__name__)


class AtlasApplication:
    """Routes by path: the MCP endpoint or Django; runs the MCP endpoint for the server's lifespan."""

    def __init__(self, *, django_app, mcp_endpoint: McpEndpoint) -> None:
        self.django_app = django_app
        self.mcp_endpoint = mcp_endpoint

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http" and is_mcp_path(scope):
            await asgi_measured(self.mcp_endpoint, scope, receive, send)
        else:
            await self.django_app(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        # Entered and left in this one task, as the session manager's task group requires.
        async with AsyncExitStack() as stack:
            await receive()  # lifespan.startup
            try:
                await stack.enter_async_context(self.mcp_endpoint.running())
            except Exception as exc:
                log.exception("the MCP endpoint did not start")
                await send({"type": "lifespan.startup.failed", "message": f"MCP endpoint: {exc}"})
                return
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            try:
                await stack.aclose()
            except Exception as exc:
                log.exception("the MCP endpoint did not stop cleanly")
                await send({"type": "lifespan.shutdown.failed", "message": f"MCP endpoint: {exc}"})
                return
        await send({"type": "lifespan.shutdown.complete"})


application = AtlasApplication(django_app=ChunkedBodyLimit(django_application), mcp_endpoint=McpEndpoint())
