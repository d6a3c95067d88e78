"""A new token's secret carried across a form's redirect (post/redirect/get), shown once after it.

The answer to the POST is a redirect, so reloading the page that shows the secret asks for nothing
again (a reload used to create a second token). The secret waits in the person's session encrypted
with ATLAS_ENCRYPTION_KEYS — sessions are stored, and a secret is never stored in the clear — and the
first page that shows it takes it out, so it is shown only that once."""

from __future__ import annotations

from typing import Any

from .models import ApiToken, Tenant
from .secrets import secret_decrypt, secret_encrypt
from .tokens import IssuedToken

SESSION_KEY = "atlas.issued_token"


def secret_keep(*, session: Any, key: str, owner: int, secret: str) -> None:
    """Keep ``secret`` (of the row ``owner``: a token, a webhook endpoint) encrypted in the session under
    ``key`` until the next page takes it."""
    session[key] = {"owner": owner, "secret": secret_encrypt(secret)}


def secret_take(*, session: Any, key: str) -> tuple[Any, str] | None:
    """The row id and secret kept under ``key``, removing them: None after (or when none was kept)."""
    kept = session.pop(key, None)
    if not isinstance(kept, dict) or "secret" not in kept:
        return None
    return kept.get("owner"), secret_decrypt(kept["secret"])


def issued_keep(*, session: Any, issued: IssuedToken) -> None:
    secret_keep(session=session, key=SESSION_KEY, owner=issued.token.pk, secret=issued.secret)


def issued_take(*, session: Any, tenant: Tenant) -> IssuedToken | None:
    """The token issued in this session and not shown yet (for ``tenant``), removing it: None after."""
    kept = secret_take(session=session, key=SESSION_KEY)
    if kept is None:
        return None
    token = ApiToken.objects.filter(pk=kept[0], tenant=tenant).first()
    return IssuedToken(token=token, secret=kept[1]) if token is not None else None
