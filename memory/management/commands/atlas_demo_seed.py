"""atlas_demo_seed — a demo tenant with two subjects, their memories and two demo logins, for `make run`.

The operator (staff, owner of the demo tenant) and an end user linked to the subject alice, both with the
demo password. Idempotent: people, tenant and subjects are reused; the memories are written only while the
demo tenant has none (so a second run, or a run after someone edited or forgot some, changes nothing).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from allauth.account.models import EmailAddress
from django.core.management.base import CommandError
from django.db import transaction

from memory import selectors
from memory.demo_data import ROUTER_OUTCOMES, demo_records
from memory.portable.lines import memories_import
from memory.services.prepare import memory_id_for
from memory.services.writes import playbook_outcome_record
from tenants.management.base import AtlasCommand
from tenants.models import MemorySubject, Person, Tenant
from tenants.services import membership_add, subject_create, subject_person_link, tenant_create
from tenants.tokens import token_install

DEMO_TENANT = "demo"
DEMO_SUBJECTS = (("alice", "Alice Example"), ("bob", "Bob Example"))
END_USER_EMAIL = "alice@atlas.local"  # the end user who logs in as the subject alice
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
        _person_ensure(email, password, "Demo Operator", operator=True)
        _person_ensure(END_USER_EMAIL, password, "Alice Example", operator=False)
        tenant = Tenant.objects.filter(slug=DEMO_TENANT).first() or tenant_create(
            slug=DEMO_TENANT, name="Demo tenant", actor=self.actor
        )
        membership_add(tenant=tenant, email=email, role="owner", actor=self.actor)
        membership_add(tenant=tenant, email=END_USER_EMAIL, role="member", actor=self.actor)
        for external_id, name in DEMO_SUBJECTS:
            if not MemorySubject.objects.filter(tenant=tenant, external_id=external_id).exists():
                subject_create(tenant=tenant, external_id=external_id, display_name=name, actor=self.actor)
        alice = MemorySubject.objects.select_related("tenant").get(tenant=tenant, external_id="alice")
        subject_person_link(subject=alice, email=END_USER_EMAIL, actor=self.actor)
        seeded = self._memories_seed(tenant, alice)
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
        self.stdout.write(
            self.style.SUCCESS(
                f"demo tenant '{tenant.slug}' with subjects alice, bob ({seeded}); "
                f"logins {email} (operator) and {END_USER_EMAIL} (end user alice)"
            )
        )

    def _memories_seed(self, tenant: Tenant, alice: MemorySubject) -> str:
        if selectors.catalog_list(tenant=tenant, page_size=1)["memories"] or any(
            selectors.memory_list(subject=s, include_superseded=True, page_size=1)["memories"]
            for s in tenant.subjects.filter(is_active=True)
        ):
            return "memories kept as they are"
        lines = [json.dumps(record) for record in demo_records()]
        report = memories_import(tenant=tenant, lines=lines, create_subjects=False, actor=self.actor)
        if report.errors:
            raise CommandError(f"the demo memories did not import: {report.errors[:3]}")
        router = memory_id_for(
            tenant_id=str(tenant.es_id), user_id=str(alice.es_id), memory_type="procedural", external_id="p-router"
        )
        for success, steps in ROUTER_OUTCOMES:
            playbook_outcome_record(subject=alice, playbook_id=router, success=success, refined_steps=steps)
        return f"{sum(report.written.values())} memories written"


def _person_ensure(email: str, password: str, full_name: str, *, operator: bool) -> Person:
    """A demo person who can log in at once (a verified primary address); an existing one is kept as is."""
    with transaction.atomic():
        person = Person.objects.filter(email=email).first()
        if person is None:
            create = Person.objects.create_superuser if operator else Person.objects.create_user
            person = create(email=email, password=password, full_name=full_name)
            EmailAddress.objects.create(user=person, email=email, verified=True, primary=True)
    return person


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
