"""Problem details (RFC 9457) answers as exceptions: one class per status a caller handles differently.

Every error of the API is ``application/problem+json`` with ``type``, ``title``, ``status``, ``detail``
and, for bad input, ``errors`` naming each field. ``AtlasError`` carries them all; the subclasses add
what a caller needs to act (the newest version of a replaced fact, the seconds to wait).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class FieldError:
    """One refused field (the problem's ``errors``: FieldErrorOut)."""

    field: str
    message: str


class AtlasError(Exception):
    """An answer of the API that is not a success, or no answer at all (``status`` None)."""

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        type: str = "about:blank",  # the problem's own member name
        title: str = "",
        errors: list[FieldError] | None = None,
        headers: httpx.Headers | None = None,
        newest: str | None = None,
        newest_external_id: str | None = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}" if status else detail)
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or httpx.Headers()
        # The problem's ``newest`` member (a 409 or 412 about a replaced fact): its newest version's id and
        # external id, as the server gives them (never parsed out of the detail).
        self.newest = newest
        self.newest_external_id = newest_external_id

    @property
    def code(self) -> str:
        """The problem's code: the last part of ``urn:atlas-memory:problem:<code>``."""
        return self.type.rsplit(":", 1)[-1]


class ConnectionFailed(AtlasError):
    """No answer from the server (refused, reset, timed out) after every attempt the budget allowed."""


class ValidationError(AtlasError):
    """400 or 422: the request was refused; ``errors`` names each field and what was wrong with it."""

    @property
    def fields(self) -> dict[str, str]:
        return {e.field: e.message for e in self.errors}


class Unauthorized(AtlasError):
    """401: no token, or one that is unknown, revoked or expired."""


class Forbidden(AtlasError):
    """403: the token lacks the scope the operation needs (or may not decide its own proposal)."""


class NotFound(AtlasError):
    """404: missing, or not this token's (the API answers both alike)."""


# A changed proposal's current version is named in the detail only (memory/services/gate.py version_check);
# the tests run against the live server keep this in step with its wording.
_VERSION = re.compile(r"\(version ([^)\s]+)\)")


class Conflict(AtlasError):
    """409: the write collides with what is stored. ``newest`` is the id of a replaced fact's newest
    version (edit that one instead) and ``newest_external_id`` its external id, from the problem's
    ``newest`` member; ``version`` is a changed proposal's current version."""

    @property
    def version(self) -> str | None:
        found = _VERSION.search(self.detail)
        return found.group(1) if found else None


class PreconditionFailed(Conflict):
    """412: ``If-Match`` named a version that is no longer current (read it again; ``newest`` when replaced)."""


class StillRunning(Conflict):
    """409 ``idempotency_running``: a request with this Idempotency-Key is still running (retried until the
    budget ran out)."""


class RateLimited(AtlasError):
    """429: this token's rate limit; ``retry_after`` is the seconds the server asked to wait."""

    @property
    def retry_after(self) -> float | None:
        return retry_after_of(self.headers)


class QuotaExceeded(RateLimited):
    """429 ``quota_exceeded``: the tenant's daily write quota is spent; ``retry_after`` is the seconds to the
    next UTC midnight, when writes are accepted again (never retried within a call's budget)."""


class Unavailable(AtlasError):
    """503: a dependency of the server (Elasticsearch, the broker) is down or busy."""

    @property
    def retry_after(self) -> float | None:
        return retry_after_of(self.headers)


_BY_STATUS: dict[int, type[AtlasError]] = {
    400: ValidationError,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    413: ValidationError,
    415: ValidationError,
    422: ValidationError,
    429: RateLimited,
    503: Unavailable,
}


def retry_after_of(headers: httpx.Headers) -> float | None:
    """The ``Retry-After`` header in seconds (delta-seconds only: the API never sends a date)."""
    value = headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def error_from(response: httpx.Response) -> AtlasError:
    """The exception for a non-success answer, from its problem details (or its status alone)."""
    body: Any = None
    if "json" in response.headers.get("Content-Type", ""):
        try:
            body = response.json()
        except ValueError:
            body = None
    if not isinstance(body, dict):
        body = {"detail": response.text[:500] or response.reason_phrase}
    kind = _BY_STATUS.get(response.status_code, AtlasError)
    problem_type = str(body.get("type", "about:blank"))
    if kind is Conflict and problem_type.endswith(":idempotency_running"):
        kind = StillRunning
    if kind is RateLimited and problem_type.endswith(":quota_exceeded"):
        kind = QuotaExceeded
    errors = [
        FieldError(field=str(e.get("field", "")), message=str(e.get("message", "")))
        for e in body.get("errors") or []
        if isinstance(e, dict)
    ]
    newest = body.get("newest") if isinstance(body.get("newest"), dict) else {}
    return kind(
        str(body.get("detail", "")),
        status=response.status_code,
        type=problem_type,
        title=str(body.get("title", response.reason_phrase)),
        errors=errors,
        headers=response.headers,
        newest=_text_or_none(newest.get("id")),
        newest_external_id=_text_or_none(newest.get("external_id")),
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
