"""atlas_tenant create|list|deactivate — manage tenants (each owns a DLS API key)."""

from __future__ import annotations

from tenants import selectors, services
from tenants.management.base import AtlasCommand
from tenants.models import Tenant


class Command(AtlasCommand):
    help = "Create, list and deactivate tenants."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a tenant and mint its API key")
        create.add_argument("slug")
        create.add_argument("--name", required=True)
        listing = sub.add_parser("list", help="list tenants")
        listing.add_argument("--json", action="store_true")
        deactivate = sub.add_parser("deactivate", help="deactivate a tenant and revoke its and its subjects' keys")
        deactivate.add_argument("slug")

    def handle(self, *args, action: str, **options) -> None:
        if action == "create":
            tenant = services.tenant_create(slug=options["slug"], name=options["name"], actor=self.actor)
            self.stdout.write(self.style.SUCCESS(f"created tenant {tenant.slug} (tenant_id {tenant.es_id})"))
        elif action == "list":
            rows = [
                {
                    "slug": t.slug,
                    "name": t.name,
                    "active": t.is_active,
                    "subjects": t.subjects.count(),
                    "tenant_id": str(t.es_id),
                }
                for t in Tenant.objects.all()
            ]
            self.emit(rows, as_json=options["json"], columns=["slug", "name", "active", "subjects", "tenant_id"])
        elif action == "deactivate":
            tenant = services.tenant_deactivate(tenant=selectors.tenant_get(slug=options["slug"]), actor=self.actor)
            self.stdout.write(self.style.SUCCESS(f"deactivated tenant {tenant.slug}; its keys are revoked"))
