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


def issued_keep(*, session: Any, issued: IssuedToken) -> None:
    session[SESSION_KEY] = {"token": issued.token.pk, "secret": secret_encrypt(issued.secret)}


def issued_take(*, session: Any, tenant: Tenant) -> IssuedToken | None:
    """The token issued in this session and not shown yet (for ``tenant``), removing it: None after."""
    kept = session.pop(SESSION_KEY, None)
    if not isinstance(kept, dict):
        return None
    token = ApiToken.objects.filter(pk=kept.get("token"), tenant=tenant).first()
    if token is None:
        return None
    return IssuedToken(token=token, secret=secret_decrypt(kept["secret"]))
