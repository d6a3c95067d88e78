"""atlas_forget --tenant SLUG [--subject ID [--memory ID | --filters JSON]] [--yes] — real, complete deletion,
audited. ``--filters`` forgets what scope filters match (docs/scoping.md): everything one agent wrote.

Forgetting a whole subject or tenant asks first, on the terminal: it names what goes and how much,
and the operator types the subject's id (or the tenant's slug) back. ``--yes`` is for scripts; without
it and without a terminal to ask on, nothing is deleted.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import CommandError

from memory.selectors import memory_counts, memory_list, tenant_memory_counts
from memory.services.forget import (
    memory_forget,
    receipt_summary,
    scoped_memories_forget,
    subject_memories_forget,
    tenant_memories_forget,
)
from tenants.management.base import AtlasCommand, subject_option
from tenants.selectors import subject_get, tenant_get

TYPE_NAMES = {
    "semantic": ("fact", "facts"),
    "replaced": ("older fact version", "older fact versions"),
    "archive": ("archived fact version", "archived fact versions"),
    "episodic": ("conversation turn", "conversation turns"),
    "procedural": ("playbook", "playbooks"),
    "pending": ("proposal waiting for review", "proposals waiting for review"),
    "catalog": ("catalog entry", "catalog entries"),
}


def _amounts(counts: dict[str, int]) -> str:
    listed = ", ".join(f"{counts[t]} {names[counts[t] != 1]}" for t, names in TYPE_NAMES.items() if counts.get(t))
    total = sum(counts.values())
    return f"{total} memor{'y' if total == 1 else 'ies'} ({listed})" if listed else "no stored memories"


class Command(AtlasCommand):
    help = "Forget one memory, every memory of a subject (archive included), or every memory of a tenant."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", required=True)
        subject_option(parser, help="a subject's external id (without it: the whole tenant)")
        parser.add_argument("--memory", help="one memory id of --subject")
        parser.add_argument(
            "--filters", help="the memories of --subject these scope filters match, as JSON (docs/scoping.md)"
        )
        parser.add_argument(
            "--yes", action="store_true", help="do not ask before forgetting a whole subject or tenant (for scripts)"
        )

    def handle(self, *args, tenant: str, subject: str | None, memory: str | None, yes: bool, **options) -> None:
        owner = tenant_get(slug=tenant)
        filters = options.get("filters")
        if (memory or filters) and not subject:
            raise CommandError("--memory and --filters need --subject")
        if memory and filters:
            raise CommandError("give --memory or --filters, not both")
        if subject:
            subject = subject_get(tenant=owner, external_id=subject)
            if filters:
                self._scoped_forget(subject, filters, yes=yes)
                return
            if memory:
                result = memory_forget(subject=subject, memory_id=memory, actor=self.actor)
                self.stdout.write(self.style.SUCCESS(f"forgot memory {memory} of {subject}"))
                self._receipt(result["receipt"])
                return
            if not yes:
                what = f"every memory of {subject}: {_amounts(memory_counts(subject=subject))}"
                self._confirm(what, typed=subject.external_id)
            result = subject_memories_forget(subject=subject, actor=self.actor)
            self.stdout.write(
                self.style.SUCCESS(f"forgot every memory of {subject}: {result['counts'] or 'none stored'}")
            )
            self._receipt(result["receipt"])
            return
        if not yes:
            subjects = owner.subjects.count()
            what = (
                f"every memory of tenant {owner.slug} ({subjects} subject{'s' if subjects != 1 else ''}), its "
                f"catalog included: {_amounts(tenant_memory_counts(tenant=owner))}"
            )
            self._confirm(what, typed=owner.slug)
        result = tenant_memories_forget(tenant=owner, actor=self.actor)
        self.stdout.write(
            self.style.SUCCESS(f"forgot every memory of tenant {owner.slug}: {result['counts'] or 'none stored'}")
        )
        self._receipt(result["receipt"])

    def _scoped_forget(self, subject, filters: str, *, yes: bool) -> None:
        if not yes:
            matched = memory_list(subject=subject, filters=filters, page_size=200)["memories"]
            count = f"{len(matched)}{'+' if len(matched) == 200 else ''}"
            self._confirm(f"the memories of {subject} matching {filters}: {count}", typed=subject.external_id)
        result = scoped_memories_forget(subject=subject, filters=filters, actor=self.actor)
        self.stdout.write(
            self.style.SUCCESS(
                f"forgot {len(result['ids'])} memories of {subject}: {result['counts'] or 'none matched'}"
            )
        )
        self._receipt(result["receipt"])

    def _confirm(self, what: str, *, typed: str) -> None:
        """Ask on the terminal; anything but the exact name back deletes nothing."""
        if not sys.stdin.isatty():
            raise CommandError(f"this deletes {what}; there is no terminal to confirm on: add --yes")
        self.stdout.write(f"This deletes {what}, and every other copy of their text. It cannot be undone.")
        self.stdout.write(f"Type {typed} to confirm: ", ending="")
        self.stdout.flush()
        answer = sys.stdin.readline().strip()
        if answer != typed:
            raise CommandError("not confirmed: nothing was deleted")

    def _receipt(self, receipt: dict) -> None:
        """The receipt: a line to read, then the whole of it (ids per store) as JSON."""
        self.stdout.write(f"receipt: {receipt_summary(receipt)}")
        self.stdout.write(json.dumps(receipt, indent=2))
