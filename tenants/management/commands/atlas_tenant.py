"""atlas_tenant create|list|update|deactivate — manage tenants (each owns a DLS API key)."""

from __future__ import annotations

from tenants import selectors, services
from tenants.management.base import AtlasCommand
from tenants.models import Tenant


class Command(AtlasCommand):
    help = "Create, list, update and deactivate tenants."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a tenant and mint its API key")
        create.add_argument("slug")
        create.add_argument("--name", required=True)
        listing = sub.add_parser("list", help="list tenants")
        listing.add_argument("--json", action="store_true")
        update = sub.add_parser("update", help="change a tenant's settings")
        update.add_argument("slug")
        update.add_argument(
            "--review-mode",
            choices=Tenant.ReviewMode.values,
            required=True,
            help="off: everything is used at once; consolidation: what the nightly job writes waits for the "
            "person's review; agents: what agents write (REST, MCP) waits too",
        )
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
                    "review_mode": t.review_mode,
                    "tenant_id": str(t.es_id),
                }
                for t in Tenant.objects.all()
            ]
            self.emit(
                rows,
                as_json=options["json"],
                columns=["slug", "name", "active", "subjects", "review_mode", "tenant_id"],
            )
        elif action == "update":
            tenant = services.tenant_review_mode_set(
                tenant=selectors.tenant_get(slug=options["slug"]), review_mode=options["review_mode"], actor=self.actor
            )
            self.stdout.write(self.style.SUCCESS(f"tenant {tenant.slug}: review mode {tenant.review_mode}"))
        elif action == "deactivate":
            tenant = services.tenant_deactivate(tenant=selectors.tenant_get(slug=options["slug"]), actor=self.actor)
            self.stdout.write(self.style.SUCCESS(f"deactivated tenant {tenant.slug}; its keys are revoked"))
