"""The one exception type for domain errors, with the few kinds each interface maps.

Services raise these; the DRF handler, MCP tools, admin actions, management
commands and Celery tasks each translate them once (status code, message,
failure record). "Not found" and "not yours" are the same NotFound.
"""

from __future__ import annotations

from typing import Any


class AtlasError(Exception):
    """A domain error whose message is meant for the person or agent that caused it."""

    status = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None, extensions: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        # Members a caller acts on without parsing the message (RFC 9457's extension members), e.g. the
        # newest version of a replaced fact: ``{"newest": {"id": ..., "external_id": ...}}``.
        self.extensions = extensions or {}


class ValidationFailed(AtlasError):
    status = 400
    code = "invalid"


class NotFound(AtlasError):
    status = 404
    code = "not_found"


class Conflict(AtlasError):
    status = 409
    code = "conflict"


class DependencyUnavailable(AtlasError):
    """A backing service (Elasticsearch, the broker) is down or refused us: 503, not a stack trace."""

    status = 503
    code = "unavailable"


class ElasticsearchUnreachable(DependencyUnavailable):
    """No answer from Elasticsearch at all (connection refused, timeout): the operator CLI adds the URL it tried."""

    code = "unavailable"


class IsolationUnavailable(DependencyUnavailable):
    """The cluster cannot enforce per-tenant isolation (no DLS licence) and app-filter mode was not chosen."""

    code = "isolation_unavailable"


class NotAuthenticated(AtlasError):
    """No credential, or one that is unknown, revoked, expired or of a deactivated owner: 401.
    The message never says which, so a probe learns nothing about tokens it does not hold."""

    status = 401
    code = "not_authenticated"


class PermissionDenied(AtlasError):
    """A valid credential without the scope the operation needs: 403."""

    status = 403
    code = "forbidden"


class PreconditionFailed(AtlasError):
    """The caller's ``If-Match`` names a version that is no longer the current one: 412."""

    status = 412
    code = "precondition_failed"


class QuotaExceeded(AtlasError):
    """A tenant's daily write quota is spent: 429, with ``retry_after`` (seconds to the next UTC midnight)
    as an extension member and, on REST, as the ``Retry-After`` header."""

    status = 429
    code = "quota_exceeded"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, extensions={"retry_after": retry_after})
        self.retry_after = retry_after
