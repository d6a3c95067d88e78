"""atlas_language_census [--tenant SLUG] [--unknown-only] — recompute which subjects and catalogs hold a
memory that does not read as English (recall leaves the cross-lingual leg out where none does)."""

from __future__ import annotations

import sys

from memory.services.non_english_flags import non_english_census
from tenants.management.base import AtlasCommand
from tenants.models import Tenant
from tenants.selectors import tenant_get


class Command(AtlasCommand):
    help = (
        "Recompute the non-English flags of subjects and tenant catalogs from the stored memories "
        "(run once after upgrading: rows from before the flags were kept are 'not known', and recall "
        "searches the cross-lingual leg for them on every English question)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", help="one tenant's slug (without it: every active tenant)")
        parser.add_argument(
            "--unknown-only", action="store_true", help="only tenants with a subject or catalog not known yet"
        )

    def handle(self, *args, tenant: str | None, unknown_only: bool, **options) -> None:
        tenants = [tenant_get(slug=tenant)] if tenant else list(Tenant.objects.filter(is_active=True))
        if unknown_only:
            tenants = [
                t
                for t in tenants
                if t.non_english_catalog is None or t.subjects.filter(non_english_memories__isnull=True).exists()
            ]
        subjects = catalogs = 0
        for done, owner in enumerate(tenants, start=1):
            found = non_english_census(tenant=owner)
            subjects += found["subjects"]
            catalogs += found["catalogs"]
            print(f"\rtenants {done}/{len(tenants)}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        self.stdout.write(
            self.style.SUCCESS(
                f"{len(tenants)} tenant(s) counted: {subjects} subject(s) and {catalogs} catalog(s) hold a memory "
                "that does not read as English"
            )
        )
