"""atlas_forget --tenant SLUG [--user ID [--memory ID]] — real, complete deletion, audited."""

from __future__ import annotations

import json

from memory.services.forget import memory_forget, receipt_summary, subject_memories_forget, tenant_memories_forget
from tenants.management.base import AtlasCommand
from tenants.selectors import subject_get, tenant_get


class Command(AtlasCommand):
    help = "Forget one memory, every memory of a subject (archive included), or every memory of a tenant."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--user", help="a subject's external id (without it: the whole tenant)")
        parser.add_argument("--memory", help="one memory id of --user")
        parser.add_argument("--yes", action="store_true", help="confirm forgetting a whole tenant")

    def handle(self, *args, tenant: str, user: str | None, memory: str | None, yes: bool, **options) -> None:
        from django.core.management.base import CommandError

        owner = tenant_get(slug=tenant)
        if memory and not user:
            raise CommandError("--memory needs --user")
        if user:
            subject = subject_get(tenant=owner, external_id=user)
            if memory:
                result = memory_forget(subject=subject, memory_id=memory, actor=self.actor)
                self.stdout.write(self.style.SUCCESS(f"forgot memory {memory} of {subject}"))
                self._receipt(result["receipt"])
                return
            result = subject_memories_forget(subject=subject, actor=self.actor)
            self.stdout.write(
                self.style.SUCCESS(f"forgot every memory of {subject}: {result['counts'] or 'none stored'}")
            )
            self._receipt(result["receipt"])
            return
        if not yes:
            raise CommandError(f"this deletes every memory of tenant {owner.slug}, its catalog included; add --yes")
        result = tenant_memories_forget(tenant=owner, actor=self.actor)
        self.stdout.write(
            self.style.SUCCESS(f"forgot every memory of tenant {owner.slug}: {result['counts'] or 'none stored'}")
        )
        self._receipt(result["receipt"])

    def _receipt(self, receipt: dict) -> None:
        """The receipt: a line to read, then the whole of it (ids per store) as JSON."""
        self.stdout.write(f"receipt: {receipt_summary(receipt)}")
        self.stdout.write(json.dumps(receipt, indent=2))
