"""What every REST route shares: token authentication, scopes, problem details, rate limits, idempotency.

- Authentication: ``Authorization: Bearer atlas_…`` (tenants.tokens); the token's principal is
  ``request.auth``. No other scheme is accepted, so there is no session and no CSRF surface.
- Errors: one body everywhere, RFC 9457 problem details (``application/problem+json``: type, title,
  status, detail, and ``errors`` with a field and message each). The domain's AtlasError is mapped
  here once; "not yours" is the same 404 as "missing".
- Rate limits: per token, ``ATLAS_API_RATE`` (default 600/min) in Django's cache (Redis when
  ``REDIS_URL`` is set): 429 with ``Retry-After``. One budget per token across interfaces: the MCP
  endpoint counts its requests against the same key (``token_rate_wait``).
- ``Idempotency-Key`` on POST: the first answer is stored for 24 hours per (token, key) and replayed
  to every retry with the same body; the same key with another body is a 422, and a retry that
  arrives while the first is still running is a 409. The answer holds memory text, so it is stored
  under the subject (or the tenant) it is about, where forgetting finds it (atlas_site.idempotency).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from functools import wraps
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.parsers import JSONParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle

from atlas_site.echo import MESSAGE_CHARS, shortened
from atlas_site.errors import AtlasError, QuotaExceeded, ValidationFailed
from atlas_site.idempotency import (
    idempotency_lease_held,
    idempotency_record_claim,
    idempotency_record_get,
    idempotency_record_release,
    idempotency_record_store,
)
from atlas_site.json_input import json_parse
from tenants.tokens import TokenPrincipal, token_authenticate

if TYPE_CHECKING:  # rest_framework.views imports this module through its settings: no import cycle
    from rest_framework.views import APIView

PROBLEM_JSON = "application/problem+json"
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


def token_rate_wait(*, principal: TokenPrincipal) -> float | None:
    """Count one request of ``principal`` against its token's limit — the very budget REST's throttle
    keeps (same cache key, same ``ATLAS_API_RATE``), so a token cannot double it by switching
    interface: None when the request may go on, else the seconds until it may."""
    throttle = TokenRateThrottle()
    if throttle.allow_request(SimpleNamespace(auth=principal), None):
        return None
    return throttle.wait() or 1.0


def retry_after(wait: float) -> str:
    """The ``Retry-After`` value for a wait in seconds: whole seconds, at least 1."""
    return str(max(1, int(wait + 0.999)))


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


def problem(
    status_code: int,
    detail: str,
    *,
    code: str,
    errors: list[dict[str, str]] | None = None,
    extensions: dict[str, Any] | None = None,
) -> Response:
    body: dict[str, Any] = {
        **(extensions or {}),
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
                out.append({"field": prefix, "message": shortened(str(value), MESSAGE_CHARS)})
    else:
        out.append({"field": prefix, "message": shortened(str(detail), MESSAGE_CHARS)})
    return out


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """Every error of every route as problem details — the one place errors get their shape."""
    if isinstance(exc, AtlasError):
        message = shortened(exc.message, MESSAGE_CHARS)
        errors = [{"field": exc.field, "message": message}] if exc.field else None
        response = problem(exc.status, message, code=exc.code, errors=errors, extensions=exc.extensions)
        if exc.status == 503:  # a dependency is down or busy: say when a retry makes sense
            response["Retry-After"] = str(RETRY_AFTER_UNAVAILABLE_SECONDS)
        if isinstance(exc, QuotaExceeded):  # a spent daily quota: retry when the next day starts
            response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return problem(413, f"the request body is larger than {limit} bytes", code="too_large")
    if isinstance(exc, Http404):
        return problem(404, "not found", code="not_found")
    if isinstance(exc, exceptions.UnsupportedMediaType):
        sent = shortened(getattr(context.get("request"), "content_type", "") or "not given")
        detail = f"the request body's Content-Type is {sent}: send JSON (Content-Type: application/json)"
        return problem(415, detail, code="unsupported_media_type")
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
            response["Retry-After"] = retry_after(exc.wait)
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            response.status_code = 401
            response["WWW-Authenticate"] = 'Bearer realm="atlas-memory"'
        return response
    return None  # a bug: Django's 500 handler answers (and logs it once)


#: Retry-After on a 503 (Elasticsearch or the broker down or busy) and on a 409 "still running".
RETRY_AFTER_UNAVAILABLE_SECONDS = 5
RETRY_AFTER_RUNNING_SECONDS = 2


def retry_key(request: Request, fields: dict[str, Any]) -> str | None:
    """The key a keyed write's memory id derives from: the Idempotency-Key's slot, unless the caller
    named the memory itself (``external_id``, which decides its id)."""
    slot = getattr(request, "idempotency_slot", None)
    if slot is None or fields.get("external_id") is not None:
        return None
    return f"request:{slot}"


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
        stored = idempotency_record_get(slot=slot)
        if stored is None and not idempotency_record_claim(slot=slot, digest=digest):
            stored = idempotency_record_get(slot=slot)
        if stored is not None:
            if stored["digest"] != digest:
                return problem(
                    422, "this Idempotency-Key was used with another request body", code="idempotency_mismatch"
                )
            if stored["state"] == "running":
                running = problem(
                    409, "a request with this Idempotency-Key is still running", code="idempotency_running"
                )
                running["Retry-After"] = str(RETRY_AFTER_RUNNING_SECONDS)
                return running
            replay = Response(stored["body"], status=stored["status"], content_type=stored.get("content_type"))
            replay["Idempotent-Replayed"] = "true"
            return replay
        # The memory a keyed write stores gets its id from the key (writes.retry_key), so a retry of a
        # write whose fate is unknown — a 5xx or a lost answer after it reached the engine — lands on the
        # same document: releasing the key below can never make a second copy.
        request.idempotency_slot = slot
        try:
            with idempotency_lease_held(slot=slot):
                response = view(self, request, *args, **kwargs)
        except Exception:
            idempotency_record_release(slot=slot)  # a retry may try again, onto the same document
            raise
        if response.status_code >= 500 or response.status_code == status.HTTP_429_TOO_MANY_REQUESTS:
            idempotency_record_release(slot=slot)
        else:
            record = {
                "state": "done",
                "digest": digest,
                "status": response.status_code,
                "body": response.data,
                "content_type": response.get("Content-Type"),
                "at": time.time(),
            }
            # Whose answer it is: the subject the route names, or the tenant (the catalog's routes).
            idempotency_record_store(
                slot=slot, record=record, tenant_id=str(principal.tenant.es_id), subject=str(kwargs.get("subject", ""))
            )
        return response

    return wrapper


# Query parameters: every route accepts the ones it names and refuses the rest (default deny).
#: When the old names of the memory-type and replaced-versions filters (REST ``?type=``, ``?superseded=``,
#: recall's ``memory_types``) were deprecated; they are accepted for one release (RFC 9745's Deprecation).
DEPRECATED_AT = "@1796256000"  # 2026-12-03


def renamed(values: dict[str, Any], *, old: str, new: str) -> tuple[Any, bool]:
    """The value given under ``new`` or, deprecated, ``old`` (and whether the old name was used); both at
    once is a 400."""
    if old in values and new in values:
        raise ValidationFailed(f"{old} is the old name of {new}: give {new} only", field=old)
    if old in values:
        return values[old], True
    return values.get(new), False


def deprecation_mark(response: Response, *, names: list[str]) -> Response:
    """Tell a caller that used old parameter names so (RFC 9745), and which ones."""
    if names:
        response["Deprecation"] = DEPRECATED_AT
        response["Link"] = '</api/v1/docs/>; rel="deprecation"'
        response["X-Atlas-Deprecated"] = ", ".join(names)
    return response


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
