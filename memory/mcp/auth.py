"""What /mcp/ checks before any MCP processing: the Origin and Host headers, then the bearer token.

Origin follows the streamable-HTTP transport's security rule (MCP spec 2025-11-25, "Security
Warning": servers MUST validate the Origin header of every incoming connection; one that is present
and invalid gets HTTP 403), which keeps a web page that rebinds its DNS name to this server from
driving the tools with a token the browser does not even hold. The Host header must be one Django
serves (ALLOWED_HOSTS), as for every other page.

The token is ``Authorization: Bearer atlas_…`` on every request (no cookie, no session), resolved by
``tenants.tokens.token_authenticate``; every failure is the same NotAuthenticated.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from atlas_site.errors import NotAuthenticated
from tenants.tokens import TokenPrincipal, token_authenticate

from .threads import run_sync

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_normalise(origin: str) -> str:
    """``scheme://host[:port]`` in lower case, without a default port or a trailing slash; "" when the
    value is not an origin of that shape (the opaque origin "null" stays "null")."""
    origin = origin.strip().lower()
    if origin == "null":
        return origin
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return ""
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return ""
    if parts.query or parts.fragment or parts.username or parts.password:
        return ""
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        host = f"{host}:{port}"
    return f"{parts.scheme}://{host}"


def origin_allowed(origin: str | None) -> bool:
    """No Origin (a non-browser client) passes; a present one must be in ATLAS_MCP_ALLOWED_ORIGINS."""
    if origin is None:
        return True
    normalised = origin_normalise(origin)
    allowed = {origin_normalise(o) for o in settings.ATLAS_MCP_ALLOWED_ORIGINS}
    return bool(normalised) and normalised in allowed


def host_allowed(host: str | None) -> bool:
    domain, _port = split_domain_port(host or "")
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (the scheme is case-insensitive)."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def principal_authenticate(*, authorization: str | None) -> TokenPrincipal:
    token = bearer_token(authorization)
    if token is None:
        raise NotAuthenticated("a bearer token is required: Authorization: Bearer atlas_…")
    return await run_sync(token_authenticate, presented=token)
