"""atlas_subject add|list|link|deactivate — manage memory subjects (each owns a DLS API key)."""

from __future__ import annotations

from atlas_site.errors import NotFound
from tenants import selectors, services
from tenants.management.base import AtlasCommand
from tenants.models import Person


class Command(AtlasCommand):
    help = "Add, list and deactivate the memory subjects (end users) of a tenant."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="add a subject and mint its API key")
        add.add_argument("--tenant", required=True)
        add.add_argument("--external-id", required=True)
        add.add_argument("--name", default="")
        add.add_argument("--person", help="email of the person this subject is (for dashboard access)")
        listing = sub.add_parser("list")
        listing.add_argument("--tenant", required=True)
        listing.add_argument("--json", action="store_true")
        link = sub.add_parser("link", help="link the person who logs in as the subject; without --person, unlink")
        link.add_argument("--tenant", required=True)
        link.add_argument("--external-id", required=True)
        link.add_argument("--person", default="", help="their email (the previous person's tokens are revoked)")
        deactivate = sub.add_parser("deactivate", help="deactivate a subject and revoke its key")
        deactivate.add_argument("--tenant", required=True)
        deactivate.add_argument("--external-id", required=True)

    def handle(self, *args, action: str, **options) -> None:
        tenant = selectors.tenant_get(slug=options["tenant"])
        if action == "add":
            person = None
            if options.get("person"):
                person = Person.objects.filter(email=options["person"].strip().lower()).first()
                if person is None:
                    raise NotFound(f"no person with the email '{options['person']}'")
            subject = services.subject_create(
                tenant=tenant,
                external_id=options["external_id"],
                display_name=options["name"],
                person=person,
                actor=self.actor,
            )
            self.stdout.write(self.style.SUCCESS(f"created subject {subject} (user_id {subject.es_id})"))
        elif action == "list":
            rows = [
                {"external_id": s.external_id, "name": s.display_name, "active": s.is_active, "user_id": str(s.es_id)}
                for s in tenant.subjects.all()
            ]
            self.emit(rows, as_json=options["json"], columns=["external_id", "name", "active", "user_id"])
        elif action == "link":
            subject = selectors.subject_get(tenant=tenant, external_id=options["external_id"])
            subject = services.subject_person_link(subject=subject, email=options["person"], actor=self.actor)
            who = subject.person.email if subject.person else "nobody"
            self.stdout.write(self.style.SUCCESS(f"{subject} is linked to {who}"))
        elif action == "deactivate":
            subject = selectors.subject_get(tenant=tenant, external_id=options["external_id"])
            services.subject_deactivate(subject=subject, actor=self.actor)
            self.stdout.write(self.style.SUCCESS(f"deactivated subject {subject}; its key is revoked"))
