"""The ``Atlas-Signature`` header: ``t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`` — one
``v1`` per secret that signs (two during a rotation's overlap). Receivers verify as docs/webhooks.md shows."""

from __future__ import annotations

import hashlib
import hmac
import secrets

HEADER = "Atlas-Signature"
SECRET_PREFIX = "whsec_"  # noqa: S105 (a prefix that marks a secret, not one)


def secret_generate() -> str:
    """A new signing secret: 32 random bytes, URL-safe, with a prefix a secret scanner can recognise."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(*, secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signature_header(*, secrets_signing: list[str], timestamp: int, body: bytes) -> str:
    """The header's value: the time, then a ``v1`` for each secret (the current one first)."""
    return ",".join(
        [f"t={timestamp}", *(f"v1={signature(secret=s, timestamp=timestamp, body=body)}" for s in secrets_signing)]
    )
