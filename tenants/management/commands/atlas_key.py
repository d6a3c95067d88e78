"""atlas_key rotate|revoke — rotate or revoke the API key of a tenant, a subject or the service writer."""

from __future__ import annotations

from django.core.management.base import CommandError

from tenants import selectors, services
from tenants.management.base import AtlasCommand


class Command(AtlasCommand):
    help = (
        "Rotate (mint → swap → invalidate old) or revoke an owner's Elasticsearch API key. Secrets are never printed."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["rotate", "revoke", "reconcile"])
        owner = parser.add_mutually_exclusive_group()
        owner.add_argument("--tenant", help="the tenant's key (with --subject: that subject's key)")
        owner.add_argument("--writer", action="store_true", help="the service writer key")
        parser.add_argument("--subject", help="external id of a subject of --tenant")

    def handle(self, *args, action: str, tenant: str | None, writer: bool, subject: str | None, **options) -> None:
        if action == "reconcile":
            report = services.credentials_reconcile(actor=self.actor)
            self.stdout.write(self.style.SUCCESS(f"reconciled: {report}"))
            return
        if subject and not tenant:
            raise CommandError("--subject needs --tenant")
        if not tenant and not writer:
            raise CommandError("name the key's owner: --tenant SLUG [--subject ID] or --writer")
        owner_tenant = selectors.tenant_get(slug=tenant) if tenant else None
        owner_subject = selectors.subject_get(tenant=owner_tenant, external_id=subject) if subject else None
        if action == "rotate":
            new = services.credential_rotate(
                actor=self.actor, tenant=None if owner_subject else owner_tenant, subject=owner_subject
            )
            self.stdout.write(self.style.SUCCESS(f"rotated: new key id {new.es_key_id}; the old key is invalidated"))
        else:
            ids = services.credential_revoke(
                actor=self.actor, tenant=None if owner_subject else owner_tenant, subject=owner_subject
            )
            self.stdout.write(self.style.SUCCESS(f"revoked {len(ids)} key(s): {', '.join(ids) or '-'}"))
