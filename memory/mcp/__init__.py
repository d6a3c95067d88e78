"""The MCP bridge at ``/mcp/``: streamable HTTP, bearer tokens, the memory tools.

Built on the official ``mcp`` SDK (the low-level ``Server`` and its ``StreamableHTTPSessionManager``),
not ``django-mcpz``: the SDK is the protocol's reference implementation — the official client, which
our tests and most agents use, is developed and tested against it, and it follows each protocol
revision first (protocol negotiation, stateless streamable HTTP, JSON responses). ``django-mcpz`` is a
thin third-party layer over the same ideas that would put Django's request cycle under every MCP call
and lag the SDK; we need nothing from Django's request cycle here, since authentication is one call
(``tenants.tokens.token_authenticate``) and the tools call the memory services directly.

- ``server.py``: the ASGI endpoint (path, Origin and Host checks, bearer auth, then the SDK) and the
  SDK server with its two handlers (list tools, call a tool).
- ``auth.py``: what the endpoint checks before any MCP processing.
- ``tools.py``: the tools — each a JSON schema, a description, a scope and a thin handler calling one
  memory service or selector; every ``AtlasError`` becomes an MCP tool error result.
- ``threads.py``: running the synchronous services (ORM, Elasticsearch client) off the event loop.
"""
