"""atlas_tenant create|list|update|deactivate — manage tenants (each owns a DLS API key)."""

from __future__ import annotations

from django.core.management.base import CommandError

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
            help="off: everything is used at once; consolidation: what the nightly job writes waits for the "
            "person's review; agents: what agents write (REST, MCP) waits too",
        )
        update.add_argument(
            "--merge-scopes",
            choices=("on", "off"),
            help="on: consolidation may distil one fact from episodes of different agents, apps, runs or metadata "
            "(it carries what they share); off (the default): it may not (docs/scoping.md)",
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
            self._update(options["slug"], review_mode=options["review_mode"], merge_scopes=options["merge_scopes"])
        elif action == "deactivate":
            tenant = services.tenant_deactivate(tenant=selectors.tenant_get(slug=options["slug"]), actor=self.actor)
            self.stdout.write(self.style.SUCCESS(f"deactivated tenant {tenant.slug}; its keys are revoked"))

    def _update(self, slug: str, *, review_mode: str | None, merge_scopes: str | None) -> None:
        if review_mode is None and merge_scopes is None:
            raise CommandError("say what to change: --review-mode and/or --merge-scopes")
        tenant = selectors.tenant_get(slug=slug)
        if review_mode is not None:
            tenant = services.tenant_review_mode_set(tenant=tenant, review_mode=review_mode, actor=self.actor)
            self.stdout.write(self.style.SUCCESS(f"tenant {tenant.slug}: review mode {tenant.review_mode}"))
        if merge_scopes is not None:
            tenant = services.tenant_consolidation_merge_scopes_set(
                tenant=tenant, merge=merge_scopes == "on", actor=self.actor
            )
            self.stdout.write(self.style.SUCCESS(f"tenant {tenant.slug}: consolidation merges scopes {merge_scopes}"))
