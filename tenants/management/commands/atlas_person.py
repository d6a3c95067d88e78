"""atlas_person deactivate — stop a person logging in; every personal token they made is revoked at once."""

from __future__ import annotations

from atlas_site.errors import NotFound
from tenants import services
from tenants.management.base import AtlasCommand
from tenants.models import Person


class Command(AtlasCommand):
    help = "Deactivate a person: no more log-ins, and their personal tokens are revoked (audited)."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        deactivate = sub.add_parser("deactivate")
        deactivate.add_argument("--email", required=True)

    def handle(self, *args, action: str, email: str, **options) -> None:
        person = Person.objects.filter(email__iexact=email.strip()).first()
        if person is None:
            raise NotFound(f"no person with the email '{email}'")
        services.person_deactivate(person=person, actor=self.actor)
        self.stdout.write(self.style.SUCCESS(f"{person.email} is deactivated; their personal tokens are revoked"))
