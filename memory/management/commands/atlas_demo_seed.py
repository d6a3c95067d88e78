"""atlas_demo_seed — a demo tenant with two subjects and a demo login, for `make run`. Idempotent."""

from __future__ import annotations

import os
from pathlib import Path

from allauth.account.models import EmailAddress
from django.core.management.base import CommandError
from django.db import transaction

from tenants.management.base import AtlasCommand
from tenants.models import MemorySubject, Person, Tenant
from tenants.services import membership_add, subject_create, tenant_create
from tenants.tokens import token_install

DEMO_TENANT = "demo"
DEMO_SUBJECTS = (("alice", "Alice Example"), ("bob", "Bob Example"))
TOKEN_ENV = "ATLAS_DEMO_TOKEN"  # noqa: S105 (the variable's name): alice's API token, installed when set
PASSWORD_ENV = "ATLAS_DEMO_PASSWORD"  # noqa: S105 (the variable's name, not a password)


class Command(AtlasCommand):
    help = "Seed the demo tenant, its subjects and a demo login (reused when they exist)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--email", default="demo@atlas.local")
        # Not the password itself: a command line is visible to every user in ps.
        parser.add_argument(
            "--password-file", type=Path, help=f"file holding the demo login's password (default: ${PASSWORD_ENV})"
        )

    def handle(self, *args, email: str, password_file: Path | None, **options) -> None:
        password = _demo_password(password_file)
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
        demo_token = os.environ.get(TOKEN_ENV)
        if demo_token:
            token_install(
                tenant=tenant,
                subject=MemorySubject.objects.get(tenant=tenant, external_id="alice"),
                name="demo token (make run)",
                scopes="read,write,forget",
                token=demo_token,
                actor=self.actor,
            )
        self.stdout.write(self.style.SUCCESS(f"demo tenant '{tenant.slug}' with subjects alice, bob; login {email}"))


def _demo_password(password_file: Path | None) -> str:
    if password_file is not None:
        try:
            password = password_file.read_text().removesuffix("\n")
        except OSError as exc:
            raise CommandError(f"cannot read the password file {password_file}: {exc.strerror}") from None
    else:
        password = os.environ.get(PASSWORD_ENV, "")
    if not password:
        raise CommandError(f"the demo login needs a password: set {PASSWORD_ENV} or pass --password-file")
    return password
