"""atlas_tenant create|list|update|deactivate — manage tenants (each owns a DLS API key)."""

from __future__ import annotations

import argparse

from django.core.management.base import CommandError

from tenants import selectors, services
from tenants.management.base import AtlasCommand
from tenants.models import Tenant
from tenants.usage import tenant_budgets_set


def _limit(value: str) -> int | None:
    """A budget's value on the command line: a whole number >= 0, or ``none`` for no limit."""
    if value.lower() == "none":
        return None
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number >= 0 or none")
    return int(value)


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
        update.add_argument(
            "--llm-token-budget",
            type=_limit,
            default=...,
            metavar="N|none",
            help="LLM tokens consolidation may spend per UTC month (none: no limit)",
        )
        update.add_argument(
            "--daily-write-quota",
            type=_limit,
            default=...,
            metavar="N|none",
            help="memories agents and people may write per UTC day; past it writes answer 429 (none: no limit)",
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
                    "llm_token_budget": t.llm_token_budget,
                    "daily_write_quota": t.daily_write_quota,
                    "tenant_id": str(t.es_id),
                }
                for t in Tenant.objects.all()
            ]
            self.emit(
                rows,
                as_json=options["json"],
                columns=[
                    "slug",
                    "name",
                    "active",
                    "subjects",
                    "review_mode",
                    "llm_token_budget",
                    "daily_write_quota",
                    "tenant_id",
                ],
            )
        elif action == "update":
            self._update(options)
        elif action == "deactivate":
            tenant = services.tenant_deactivate(tenant=selectors.tenant_get(slug=options["slug"]), actor=self.actor)
            self.stdout.write(self.style.SUCCESS(f"deactivated tenant {tenant.slug}; its keys are revoked"))

    def _update(self, options: dict) -> None:
        budget, quota = options["llm_token_budget"], options["daily_write_quota"]
        mode, merge = options["review_mode"], options["merge_scopes"]
        if mode is None and merge is None and budget is ... and quota is ...:
            raise CommandError(
                "nothing to change: give --review-mode, --merge-scopes, --llm-token-budget or --daily-write-quota"
            )
        tenant = selectors.tenant_get(slug=options["slug"])
        said = []
        if mode is not None:
            tenant = services.tenant_review_mode_set(tenant=tenant, review_mode=mode, actor=self.actor)
            said.append(f"review mode {tenant.review_mode}")
        if merge is not None:
            tenant = services.tenant_consolidation_merge_scopes_set(
                tenant=tenant, merge=merge == "on", actor=self.actor
            )
            said.append(f"consolidation merges scopes {merge}")
        tenant = tenant_budgets_set(tenant=tenant, actor=self.actor, llm_token_budget=budget, daily_write_quota=quota)
        if budget is not ...:
            said.append(f"LLM token budget {_shown(tenant.llm_token_budget)} per month")
        if quota is not ...:
            said.append(f"daily write quota {_shown(tenant.daily_write_quota)}")
        self.stdout.write(self.style.SUCCESS(f"tenant {tenant.slug}: {', '.join(said)}"))


def _shown(limit: int | None) -> str:
    return "none" if limit is None else str(limit)
