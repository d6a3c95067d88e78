"""atlas_member add|remove — give a person (who has signed up) a role in a tenant, or take them out of it."""

from __future__ import annotations

from tenants import selectors, services
from tenants.management.base import AtlasCommand
from tenants.models import Membership


class Command(AtlasCommand):
    help = "Add a person to a tenant (or change their role), or remove them (unlinks their subjects there)."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add")
        add.add_argument("--tenant", required=True)
        add.add_argument("--email", required=True)
        add.add_argument("--role", default="member", help=f"one of {', '.join(Membership.Role.values)}")
        remove = sub.add_parser("remove", help="remove them: their subjects here are unlinked, their tokens revoked")
        remove.add_argument("--tenant", required=True)
        remove.add_argument("--email", required=True)

    def handle(self, *args, action: str, **options) -> None:
        tenant = selectors.tenant_get(slug=options["tenant"])
        if action == "remove":
            services.membership_remove(tenant=tenant, email=options["email"], actor=self.actor)
            self.stdout.write(self.style.SUCCESS(f"{options['email']} is no longer in {tenant.slug}"))
            return
        membership = services.membership_add(
            tenant=tenant, email=options["email"], role=options["role"], actor=self.actor
        )
        self.stdout.write(self.style.SUCCESS(f"{membership.person.email} is {membership.role} of {tenant.slug}"))
