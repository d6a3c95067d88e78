"""API tokens: issuing, revoking and authenticating the bearer tokens of the REST API and MCP.

A token reads ``atlas_<prefix>_<secret>``. Only the secret's SHA-256 is stored; the whole token is
returned once, by ``token_create``, and never again (not by a list, not in a log, not in the audit).
``token_authenticate`` is the one way from a presented token to a ``TokenPrincipal``; every
interface calls it and then resolves the subject through ``TokenPrincipal.subject_for``, so a
tenant token naming another tenant's subject and a subject token naming anyone but itself both get
the same "not found" as a subject that does not exist.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from atlas_site.echo import echoed
from atlas_site.errors import Conflict, NotAuthenticated, NotFound, PermissionDenied, ValidationFailed

from .models import ApiToken, MemorySubject, Person, Tenant
from .selectors import unique_row
from .services import audit_record

TOKEN_PATTERN = re.compile(r"^atlas_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$")
SCOPES = tuple(ApiToken.Scope.values)
LAST_USED_RESOLUTION = timedelta(minutes=1)
MAX_NAME_CHARS = 100


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _scopes_validate(scopes: object) -> list[str]:
    if isinstance(scopes, str):
        scopes = [s.strip() for s in scopes.split(",") if s.strip()]
    if not isinstance(scopes, list | tuple) or not scopes:
        raise ValidationFailed(f"a token needs at least one scope of {', '.join(SCOPES)}", field="scopes")
    unknown = sorted({s for s in scopes if s not in SCOPES}, key=str)
    if unknown:
        raise ValidationFailed(
            f"unknown scope(s) {', '.join(map(str, unknown))}: choose from {', '.join(SCOPES)}", field="scopes"
        )
    return [s for s in SCOPES if s in scopes]


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # the whole ``atlas_…`` string: shown once, never stored

    def __repr__(self) -> str:  # keep the secret out of tracebacks and debug output
        return f"IssuedToken(token={self.token!r})"


def token_create(
    *,
    tenant: Tenant,
    name: str,
    scopes: object,
    actor: str,
    subject: MemorySubject | None = None,
    expires_at: datetime | None = None,
    person: Person | None = None,
) -> IssuedToken:
    """Issue a token for ``tenant`` (a service token) or for ``subject`` of that tenant (a subject token).

    ``person`` makes it a personal token: the subject's own person, asking for it in the dashboard. It
    then works only while they are active and linked to ``subject``."""
    prefix, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    token = _issue(
        tenant=tenant, subject=subject, name=name, scopes=scopes, actor=actor, expires_at=expires_at,
        prefix=prefix, secret=secret, action="token.create", person=person,
    )  # fmt: skip
    return IssuedToken(token=token, secret=f"atlas_{prefix}_{secret}")


def token_install(
    *, tenant: Tenant, subject: MemorySubject | None, name: str, scopes: object, token: str, actor: str
) -> ApiToken:
    """Record a token generated elsewhere — the development stack's demo token, kept in ``.data/dev.env``
    so every ``make run`` prints one that works. Idempotent; never replaces a token it did not record."""
    match = TOKEN_PATTERN.match(token or "")
    if match is None:
        raise ValidationFailed("not a token of the form atlas_<prefix>_<secret>", field="token")
    prefix, secret = match.groups()
    existing = ApiToken.objects.filter(prefix=prefix).first()
    if existing is not None:
        if not hmac.compare_digest(existing.secret_sha256, _digest(secret)) or existing.tenant_id != tenant.pk:
            raise Conflict(f"another token already uses the prefix {prefix}", field="token")
        return existing
    return _issue(
        tenant=tenant, subject=subject, name=name, scopes=scopes, actor=actor, expires_at=None,
        prefix=prefix, secret=secret, action="token.install",
    )  # fmt: skip


def _issue(
    *,
    tenant: Tenant,
    subject: MemorySubject | None,
    name: str,
    scopes: object,
    actor: str,
    expires_at: datetime | None,
    prefix: str,
    secret: str,
    action: str,
    person: Person | None = None,
) -> ApiToken:
    """Check what a token may be, then record it (only the secret's hash) and audit it."""
    name = (name or "").strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise ValidationFailed(f"a token needs a name of 1 to {MAX_NAME_CHARS} characters", field="name")
    scope_list = _scopes_validate(scopes)
    if not tenant.is_active:
        raise ValidationFailed(f"tenant {tenant.slug} is deactivated", field="tenant")
    if subject is not None and (subject.tenant_id != tenant.pk or not subject.is_active):
        raise NotFound(f"no active subject '{subject.external_id}' in tenant {tenant.slug}", field="subject")
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationFailed("the expiry must be in the future", field="expires_at")
    if person is not None and (subject is None or subject.person_id != person.pk or not person.is_active):
        raise NotFound("a personal token is only for a subject linked to its active person", field="subject")
    with transaction.atomic():
        # Under the subject's lock, as a relink takes it: one that commits first is seen here, and one that
        # comes after finds this token to revoke.
        if person is not None and not _subject_locked_to(subject=subject, person=person):
            raise NotFound("a personal token is only for a subject linked to its active person", field="subject")
        token = ApiToken.objects.create(
            kind=ApiToken.Kind.SUBJECT if subject is not None else ApiToken.Kind.TENANT,
            tenant=tenant,
            subject=subject,
            name=name,
            prefix=prefix,
            secret_sha256=_digest(secret),
            scopes=scope_list,
            created_by=actor,
            person=person,
            expires_at=expires_at,
        )
        audit_record(
            tenant=tenant,
            actor=actor,
            action=action,
            target=str(subject or tenant),
            detail={
                "prefix": prefix,
                "name": name,
                "kind": token.kind,
                "scopes": scope_list,
                **({"personal": True} if person is not None else {}),
            },
        )
    return token


def _subject_locked_to(*, subject: MemorySubject, person: Person) -> bool:
    return MemorySubject.objects.select_for_update().filter(pk=subject.pk, person=person, is_active=True).exists()


def token_revoke(*, token: ApiToken, actor: str) -> bool:
    """Revoke ``token``; False when it was revoked already (nothing changes then)."""
    with transaction.atomic():
        changed = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        if changed:
            audit_record(
                tenant=token.tenant,
                actor=actor,
                action="token.revoke",
                target=str(token.subject or token.tenant),
                detail={"prefix": token.prefix, "name": token.name},
            )
    token.refresh_from_db(fields=["revoked_at"])
    return bool(changed)


def token_get(*, tenant: Tenant | None, prefix: str) -> ApiToken:
    """A token by its prefix (``atlas_<prefix>_…`` or the bare prefix), within ``tenant`` when given."""
    match = re.match(r"^(?:atlas_)?([a-z0-9]{12})(?:_.*)?$", prefix or "")
    tokens = ApiToken.objects.select_related("tenant", "subject")
    if tenant is not None:
        tokens = tokens.filter(tenant=tenant)
    found = tokens.filter(prefix=match.group(1)).first() if match else None
    if found is None:
        raise NotFound(f"no token '{prefix}'", field="token")
    return found


def tokens_list(*, tenant: Tenant, subject: MemorySubject | None = None, active_only: bool = False) -> QuerySet:
    tokens = ApiToken.objects.filter(tenant=tenant).select_related("subject")
    if subject is not None:
        tokens = tokens.filter(subject=subject)
    if active_only:
        tokens = tokens.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())
        )
    return tokens


@dataclass(frozen=True)
class TokenPrincipal:
    """Who is calling, as far as a token says: its tenant, its own subject (subject tokens) and scopes."""

    token: ApiToken
    tenant: Tenant
    subject: MemorySubject | None
    scopes: frozenset[str]

    @property
    def is_tenant_token(self) -> bool:
        return self.subject is None

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise PermissionDenied(f"this token lacks the '{scope}' scope")

    def require_tenant_token(self) -> None:
        if not self.is_tenant_token:
            raise PermissionDenied("only a tenant service token may do this")

    def subject_for(self, external_id: object) -> MemorySubject:
        """The active subject this call acts for; every other answer is the same "not found"."""
        if not isinstance(external_id, str) or not external_id:
            raise ValidationFailed("a subject id is required", field="subject")
        missing = NotFound(f"no subject {echoed(external_id)}", field="subject")
        if self.subject is not None:
            if external_id != self.subject.external_id:
                raise missing
            return self.subject
        subject = unique_row(
            MemorySubject.objects.select_related("tenant").filter(
                tenant=self.tenant, external_id=external_id, is_active=True
            )
        )
        if subject is None:
            raise missing
        return subject


def _still_theirs(token: ApiToken) -> bool:
    """A personal token acts for its person: only while they are active and still the subject's person.

    The services revoke such a token the moment that stops being true; this holds even on a path that
    forgot to (a raw update, a bulk action, a future interface)."""
    return token.person.is_active and token.subject is not None and token.subject.person_id == token.person_id


def token_authenticate(*, presented: str | None) -> TokenPrincipal:
    """The principal behind a presented token, or NotAuthenticated — one message for every failure."""
    refused = NotAuthenticated("the token is missing, malformed, unknown, expired or revoked")
    match = TOKEN_PATTERN.match(presented or "")
    if match is None:
        raise refused
    prefix, secret = match.groups()
    token = unique_row(ApiToken.objects.select_related("tenant", "subject", "person").filter(prefix=prefix))
    # Compare even when the prefix is unknown, so timing does not tell which prefixes exist.
    expected = token.secret_sha256 if token is not None else "0" * 64
    if not hmac.compare_digest(expected, _digest(secret)) or token is None:
        raise refused
    now = timezone.now()
    if token.revoked_at is not None or (token.expires_at is not None and token.expires_at <= now):
        raise refused
    if not token.tenant.is_active or (token.subject is not None and not token.subject.is_active):
        raise refused
    if token.person_id is not None and not _still_theirs(token):
        raise refused
    # At most one write a minute per token (checked on the row just read, so a busy token costs no
    # write at all), and the conditional UPDATE loses nothing between concurrent requests.
    if token.last_used_at is None or token.last_used_at < now - LAST_USED_RESOLUTION:
        stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ApiToken.objects.filter(stale, pk=token.pk).update(last_used_at=now)
    return TokenPrincipal(token=token, tenant=token.tenant, subject=token.subject, scopes=frozenset(token.scopes))


def mcp_client_configs(*, secret: str, server_url: str, name: str = "atlas-memory") -> dict[str, dict]:
    """Paste-ready MCP client configurations for a freshly issued token (the only time it is known).

    Cursor and VS Code speak streamable HTTP with headers themselves; Claude Desktop's configuration
    file starts local (stdio) servers, so it reaches a remote one through the ``mcp-remote`` bridge.
    """
    url = server_url.rstrip("/") + "/mcp/"
    header = f"Bearer {secret}"
    return {
        "claude_desktop": {
            "mcpServers": {
                name: {"command": "npx", "args": ["-y", "mcp-remote", url, "--header", f"Authorization:{header}"]}
            }
        },
        "cursor": {"mcpServers": {name: {"url": url, "headers": {"Authorization": header}}}},
        "vscode": {"servers": {name: {"type": "http", "url": url, "headers": {"Authorization": header}}}},
    }
