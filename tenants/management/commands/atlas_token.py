"""atlas_token create|list|revoke — the bearer tokens agents use for the REST API and MCP."""

from __future__ import annotations

import json
import re
from datetime import timedelta

from django.conf import settings
from django.core.management.base import CommandError
from django.utils import timezone

from tenants import selectors, tokens
from tenants.management.base import AtlasCommand

_DURATION = re.compile(r"^(\d{1,5})([dh])$")


def _expiry(value: str | None):
    if not value:
        return None
    match = _DURATION.match(value)
    if not match:
        raise CommandError(f"--expires takes a duration such as 30d or 12h, not {value!r}")
    amount, unit = int(match.group(1)), match.group(2)
    return timezone.now() + (timedelta(days=amount) if unit == "d" else timedelta(hours=amount))


class Command(AtlasCommand):
    help = "Issue, list or revoke API tokens. A new token is printed once; only its prefix is kept in clear."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["create", "list", "revoke"])
        parser.add_argument("--tenant", required=True, help="the tenant's slug")
        parser.add_argument("--subject", help="create: a subject token for this external id (else a tenant token)")
        parser.add_argument("--name", help="create: what the token is for (shown in lists)")
        parser.add_argument("--scopes", default="read,write", help="create: comma-separated read,write,forget")
        parser.add_argument("--expires", help="create: lifetime such as 90d or 12h (default: no expiry)")
        parser.add_argument("--mcp", action="store_true", help="create: also print MCP client configurations")
        parser.add_argument("--token", help="revoke: the token or its prefix")
        parser.add_argument("--json", action="store_true", help="machine-readable output")

    def handle(self, *args, action: str, tenant: str, **options) -> None:
        owner = selectors.tenant_get(slug=tenant)
        if action == "create":
            self._create(owner, **options)
        elif action == "list":
            rows = [
                {
                    "prefix": f"atlas_{t.prefix}_…",
                    "name": t.name,
                    "kind": t.kind,
                    "subject": t.subject.external_id if t.subject else "",
                    "scopes": ",".join(t.scopes),
                    "created": f"{t.created_at:%Y-%m-%d %H:%M}",
                    "expires": f"{t.expires_at:%Y-%m-%d %H:%M}" if t.expires_at else "never",
                    "last_used": f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never",
                    "status": "active" if t.is_active else ("revoked" if t.revoked_at else "expired"),
                }
                for t in tokens.tokens_list(tenant=owner)
            ]
            columns = ["prefix", "name", "kind", "subject", "scopes", "created", "expires", "last_used", "status"]
            self.emit(rows, as_json=options["json"], columns=columns)
        else:
            if not options["token"]:
                raise CommandError("revoke needs --token (the token or its prefix)")
            token = tokens.token_get(tenant=owner, prefix=options["token"])
            changed = tokens.token_revoke(token=token, actor=self.actor)
            self.stdout.write(f"revoked {token}" if changed else f"{token} was already revoked")

    def _create(self, owner, *, subject, name, scopes, expires, mcp, json: bool, **_options) -> None:
        who = selectors.subject_get(tenant=owner, external_id=subject) if subject else None
        issued = tokens.token_create(
            tenant=owner,
            subject=who,
            name=name or (f"{subject} token" if subject else f"{owner.slug} service token"),
            scopes=scopes,
            expires_at=_expiry(expires),
            actor=self.actor,
        )
        configs = tokens.mcp_client_configs(secret=issued.secret, server_url=settings.ATLAS_PUBLIC_URL) if mcp else None
        if json:
            payload = {"token": issued.secret, "prefix": issued.token.prefix, "scopes": issued.token.scopes}
            if configs:
                payload["mcp"] = configs
            self.stdout.write(_dumps(payload))
            return
        self.stdout.write(f"token (shown once, store it now): {issued.secret}")
        self.stdout.write(f"  {issued.token.kind} token, scopes {','.join(issued.token.scopes)}")
        for client, config in (configs or {}).items():
            self.stdout.write(f"\n{client}:\n{_dumps(config)}")


def _dumps(value) -> str:
    return json.dumps(value, indent=2)
