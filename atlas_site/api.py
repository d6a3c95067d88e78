"""What every REST route shares: token authentication, scopes, problem details, rate limits, idempotency.

- Authentication: ``Authorization: Bearer atlas_…`` (tenants.tokens); the token's principal is
  ``request.auth``. No other scheme is accepted, so there is no session and no CSRF surface.
- Errors: one body everywhere, RFC 9457 problem details (``application/problem+json``: type, title,
  status, detail, and ``errors`` with a field and message each). The domain's AtlasError is mapped
  here once; "not yours" is the same 404 as "missing".
- Rate limits: per token, ``ATLAS_API_RATE`` (default 600/min) in Django's cache (Redis when
  ``REDIS_URL`` is set): 429 with ``Retry-After``.
- ``Idempotency-Key`` on POST: the first answer is stored for 24 hours per (token, key) and replayed
  to every retry with the same body; the same key with another body is a 422, and a retry that
  arrives while the first is still running is a 409.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.parsers import JSONParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle

from atlas_site.errors import AtlasError, ValidationFailed
from atlas_site.json_input import json_parse
from tenants.tokens import TokenPrincipal, token_authenticate

if TYPE_CHECKING:  # rest_framework.views imports this module through its settings: no import cycle
    from rest_framework.views import APIView

PROBLEM_JSON = "application/problem+json"
IDEMPOTENCY_TTL_SECONDS = 24 * 3600
_TITLES = {
    400: "Bad request",
    401: "Not authenticated",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    406: "Not acceptable",
    409: "Conflict",
    412: "Precondition failed",
    413: "Request too large",
    415: "Unsupported media type",
    422: "Unprocessable request",
    428: "Precondition required",
    429: "Too many requests",
    503: "Service unavailable",
}


class TokenUser:
    """``request.user`` for a token: authenticated, never staff, never a person."""

    is_authenticated = True
    is_anonymous = False
    is_staff = False
    is_superuser = False

    def __init__(self, principal: TokenPrincipal) -> None:
        self.principal = principal

    def __str__(self) -> str:
        return f"token:{self.principal.token.prefix}"


class BearerTokenAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request):
        header = get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer":
            raise exceptions.AuthenticationFailed("use Authorization: Bearer atlas_…")
        try:
            principal = token_authenticate(presented=presented.strip())
        except AtlasError as err:
            raise exceptions.AuthenticationFailed(err.message) from None
        return TokenUser(principal), principal

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="atlas-memory"'


class HasToken(BasePermission):
    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.auth, TokenPrincipal)


class TokenRateThrottle(SimpleRateThrottle):
    scope = "token"

    def get_rate(self) -> str:
        return settings.ATLAS_API_RATE

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        if not isinstance(request.auth, TokenPrincipal):
            return None  # refused by authentication anyway; nothing to count
        return f"throttle:token:{request.auth.token.prefix}"


class BoundedJSONParser(JSONParser):
    """JSON bodies through the one JSON reader (atlas_site.json_input): depth-bounded and strict, a
    refusal is a 400 naming ``body``."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        return json_parse(stream.read() if stream is not None else b"")


def principal_of(request: Request) -> TokenPrincipal:
    principal = request.auth
    if not isinstance(principal, TokenPrincipal):
        raise exceptions.NotAuthenticated()
    return principal


def actor_of(request: Request) -> str:
    return f"token:{principal_of(request).token.prefix}"


def problem(status_code: int, detail: str, *, code: str, errors: list[dict[str, str]] | None = None) -> Response:
    body: dict[str, Any] = {
        "type": f"urn:atlas-memory:problem:{code}",
        "title": _TITLES.get(status_code, "Error"),
        "status": status_code,
        "detail": detail,
    }
    if errors:
        body["errors"] = errors
    return Response(body, status=status_code, content_type=PROBLEM_JSON)


def _field_errors(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            if isinstance(key, int):  # a list item's errors: field[n]
                name = f"{prefix}[{key}]"
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            out += _field_errors(value, "" if key == "non_field_errors" else name)
    elif isinstance(detail, list):
        for n, value in enumerate(detail):
            if isinstance(value, dict | list):
                out += _field_errors(value, f"{prefix}[{n}]" if prefix else f"[{n}]")
            else:
                out.append({"field": prefix, "message": str(value)})
    else:
        out.append({"field": prefix, "message": str(detail)})
    return out


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """Every error of every route as problem details — the one place errors get their shape."""
    if isinstance(exc, AtlasError):
        errors = [{"field": exc.field, "message": exc.message}] if exc.field else None
        return problem(exc.status, exc.message, code=exc.code, errors=errors)
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return problem(413, f"the request body is larger than {limit} bytes", code="too_large")
    if isinstance(exc, Http404):
        return problem(404, "not found", code="not_found")
    if isinstance(exc, exceptions.ValidationError):
        errors = _field_errors(exc.detail)
        detail = "; ".join(f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors)
        return problem(400, detail or "invalid request", code="invalid", errors=errors)
    if isinstance(exc, exceptions.APIException):
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        response = problem(
            exc.status_code, str(detail), code=exc.get_codes() if isinstance(exc.get_codes(), str) else "error"
        )
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            response["Retry-After"] = str(max(1, int(exc.wait + 0.999)))
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            response.status_code = 401
            response["WWW-Authenticate"] = 'Bearer realm="atlas-memory"'
        return response
    return None  # a bug: Django's 500 handler answers (and logs it once)


def _body_digest(request: Request) -> str:
    return hashlib.sha256(request.body).hexdigest()


def idempotent(view: Callable) -> Callable:
    """Replay the first answer to a retried POST that carries the same ``Idempotency-Key``."""

    @wraps(view)
    def wrapper(self: APIView, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get("Idempotency-Key")
        if key is None:
            return view(self, request, *args, **kwargs)
        if not 1 <= len(key) <= 255 or not key.isprintable():
            return problem(400, "Idempotency-Key must be 1 to 255 printable characters", code="invalid")
        principal = principal_of(request)
        slot = "idem:" + hashlib.sha256(f"{principal.token.pk}:{request.path}:{key}".encode()).hexdigest()
        digest = _body_digest(request)
        stored = cache.get(slot)
        if stored is None and not cache.add(slot, {"state": "running", "digest": digest}, 60):
            stored = cache.get(slot)
        if stored is not None:
            if stored["digest"] != digest:
                return problem(
                    422, "this Idempotency-Key was used with another request body", code="idempotency_mismatch"
                )
            if stored["state"] == "running":
                return problem(409, "a request with this Idempotency-Key is still running", code="idempotency_running")
            replay = Response(stored["body"], status=stored["status"], content_type=stored.get("content_type"))
            replay["Idempotent-Replayed"] = "true"
            return replay
        try:
            response = view(self, request, *args, **kwargs)
        except Exception:
            cache.delete(slot)  # nothing was stored: a retry may try again
            raise
        if response.status_code >= 500 or response.status_code == status.HTTP_429_TOO_MANY_REQUESTS:
            cache.delete(slot)
        else:
            record = {
                "state": "done",
                "digest": digest,
                "status": response.status_code,
                "body": response.data,
                "content_type": response.get("Content-Type"),
                "at": time.time(),
            }
            cache.set(slot, record, IDEMPOTENCY_TTL_SECONDS)
        return response

    return wrapper


# Query parameters: every route accepts the ones it names and refuses the rest (default deny).
def query_params(request: Request, allowed: set[str]) -> dict[str, str]:
    """Single-valued query parameters; an unknown one is refused, not ignored."""
    unknown = sorted(set(request.query_params) - allowed)
    if unknown:
        raise ValidationFailed(f"unknown query parameter {unknown[0]}", field=unknown[0])
    return {k: request.query_params.get(k) for k in request.query_params}


def flag_param(value: str | None, name: str) -> bool:
    if value in (None, "false", "0"):
        return False
    if value in ("true", "1", ""):
        return True
    raise ValidationFailed(f"{name} must be true or false", field=name)


def int_param(value: str, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValidationFailed(f"{name} must be an integer", field=name) from None
