"""Elasticsearch-shaped error responses raised inside the gateway.

Every refusal the gateway makes (authentication, authorization, unsupported
operations) leaves as the same JSON envelope Elasticsearch uses:
``{"error": {"root_cause": [...], "type": ..., "reason": ...}, "status": N}``.
"""

from __future__ import annotations

from typing import Any


class EsError(Exception):
    """An error the gateway answers with, in Elasticsearch's body shape."""

    def __init__(
        self,
        status: int,
        error_type: str,
        reason: str,
        *,
        headers: list[tuple[str, str]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(reason)
        self.status = status
        self.error_type = error_type
        self.reason = reason
        self.headers = headers or []
        self.extra = extra or {}

    def cause(self) -> dict[str, Any]:
        return {"type": self.error_type, "reason": self.reason, **self.extra}

    def body(self) -> dict[str, Any]:
        return {"error": {"root_cause": [self.cause()], **self.cause()}, "status": self.status}


# The challenges Elasticsearch 8.15 (the version the engine reports) sends with
# every 401 of the security layer, as header lines and in the body's "header":
# the realm's Basic challenge, then ApiKey (security/Security.java builds the
# list; DefaultAuthenticationFailureHandler attaches it). Bearer is only added
# when the token service is on, which by default needs TLS on HTTP. 8.16 added
# a comma before charset (elasticsearch PR #110906); 8.15 has none.
AUTH_CHALLENGES = ['Basic realm="security" charset="UTF-8"', "ApiKey"]


def authentication_error(reason: str, *, unsuccessful: str | None = None) -> EsError:
    """A 401 as DefaultAuthenticationFailureHandler / AuthenticatorChain shape it."""
    extra: dict[str, Any] = {}
    if unsuccessful is not None:
        extra["additional_unsuccessful_credentials"] = unsuccessful
    extra["header"] = {"WWW-Authenticate": list(AUTH_CHALLENGES)}
    return EsError(
        401, "security_exception", reason, headers=[("WWW-Authenticate", c) for c in AUTH_CHALLENGES], extra=extra
    )


def security_forbidden(reason: str) -> EsError:
    return EsError(403, "security_exception", reason)


def illegal_argument(reason: str) -> EsError:
    return EsError(400, "illegal_argument_exception", reason)


def action_request_validation(reasons: list[str]) -> EsError:
    numbered = ";".join(f"{i + 1}: {r}" for i, r in enumerate(reasons))
    return EsError(400, "action_request_validation_exception", f"Validation Failed: {numbered};")


def unsupported(method: str, path: str, why: str) -> EsError:
    """The gateway cannot do this faithfully, so it refuses instead of guessing."""
    return EsError(
        400,
        "illegal_argument_exception",
        f"[embedded_es] [{method} {path}] is not supported: {why}",
    )


def resource_not_found(reason: str) -> EsError:
    return EsError(404, "resource_not_found_exception", reason)
