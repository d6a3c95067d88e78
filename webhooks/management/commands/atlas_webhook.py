"""atlas_webhook add|list|remove|rotate|enable|disable — a tenant's webhook endpoints (docs/webhooks.md)."""

from __future__ import annotations

from django.core.management.base import CommandError

from tenants import selectors as tenant_selectors
from tenants.management.base import AtlasCommand
from webhooks import selectors, services
from webhooks.events import EVENT_TYPES


class Command(AtlasCommand):
    help = "Register, list, remove, enable or disable webhook endpoints, or rotate one's signing secret (printed once)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["add", "list", "remove", "rotate", "enable", "disable"])
        parser.add_argument("--tenant", required=True, help="the tenant's slug")
        parser.add_argument("--url", help="add: the https:// URL to deliver to")
        parser.add_argument("--events", help=f"add: comma-separated, of {','.join(EVENT_TYPES)}")
        parser.add_argument("--description", default="", help="add: what the endpoint is for")
        parser.add_argument("--id", help="remove, rotate, enable, disable: the endpoint's id (from list)")
        parser.add_argument("--json", action="store_true", help="list: machine-readable output")

    def handle(self, *args, action: str, tenant: str, **options) -> None:
        owner = tenant_selectors.tenant_get(slug=tenant)
        if action == "add":
            if not options["url"] or not options["events"]:
                raise CommandError("add needs --url and --events")
            endpoint, secret = services.endpoint_create(
                tenant=owner, url=options["url"], events=options["events"], description=options["description"],
                actor=self.actor,
            )  # fmt: skip
            self.stdout.write(f"webhook {endpoint.pk} → {endpoint.url} ({', '.join(endpoint.events)})")
            self.stdout.write(f"signing secret (shown once; verify Atlas-Signature with it): {secret}")
            return
        if action == "list":
            rows = [
                {
                    "id": e.pk,
                    "url": e.url,
                    "events": ",".join(e.events),
                    "status": "enabled" if e.is_enabled else f"disabled: {e.disabled_reason}",
                    "created": f"{e.created_at:%Y-%m-%d %H:%M}",
                }
                for e in selectors.endpoints_list(tenant=owner)
            ]
            self.emit(rows, as_json=options["json"], columns=["id", "url", "events", "status", "created"])
            return
        if not options["id"]:
            raise CommandError(f"{action} needs --id (the endpoint's id, from list)")
        endpoint = selectors.endpoint_get(tenant=owner, endpoint_id=options["id"])
        if action == "remove":
            services.endpoint_delete(endpoint=endpoint, actor=self.actor)
            self.stdout.write(f"removed webhook {options['id']}")
        elif action == "rotate":
            secret = services.endpoint_secret_rotate(endpoint=endpoint, actor=self.actor)
            self.stdout.write(f"new signing secret (shown once; the old one keeps signing until "
                              f"{endpoint.previous_secret_expires_at:%Y-%m-%d %H:%M} UTC): {secret}")  # fmt: skip
        else:
            services.endpoint_update(endpoint=endpoint, enabled=action == "enable", actor=self.actor)
            self.stdout.write(f"webhook {endpoint.pk} {action}d")
