"""atlas_demo_seed — a demo tenant with two subjects and a demo login, for `make run`. Idempotent."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.db import transaction

from tenants.management.base import AtlasCommand
from tenants.models import MemorySubject, Person, Tenant
from tenants.services import membership_add, subject_create, tenant_create

DEMO_TENANT = "demo"
DEMO_SUBJECTS = (("alice", "Alice Example"), ("bob", "Bob Example"))


class Command(AtlasCommand):
    help = "Seed the demo tenant, its subjects and a demo login (reused when they exist)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--email", default="demo@atlas.local")
        parser.add_argument("--password", required=True)

    def handle(self, *args, email: str, password: str, **options) -> None:
        with transaction.atomic():
            person = Person.objects.filter(email=email).first()
            if person is None:
                person = Person.objects.create_superuser(email=email, password=password, full_name="Demo Operator")
                EmailAddress.objects.create(user=person, email=email, verified=True, primary=True)
        tenant = Tenant.objects.filter(slug=DEMO_TENANT).first() or tenant_create(
            slug=DEMO_TENANT, name="Demo tenant", actor=self.actor
        )
        membership_add(tenant=tenant, email=email, role="owner", actor=self.actor)
        for external_id, name in DEMO_SUBJECTS:
            if not MemorySubject.objects.filter(tenant=tenant, external_id=external_id).exists():
                subject_create(
                    tenant=tenant,
                    external_id=external_id,
                    display_name=name,
                    person=person if external_id == "alice" else None,
                    actor=self.actor,
                )
        self.stdout.write(self.style.SUCCESS(f"demo tenant '{tenant.slug}' with subjects alice, bob; login {email}"))
