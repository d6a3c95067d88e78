"""atlas_import FILE.jsonl --tenant SLUG [--create] — import memories; per-line errors never stop the run."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import CommandError

from memory.services.importing import memories_import
from tenants.management.base import AtlasCommand
from tenants.models import Tenant
from tenants.selectors import tenant_get
from tenants.services import tenant_create


class Command(AtlasCommand):
    help = "Import memories from a JSON-lines file (format in the README)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--create", action="store_true", help="create the tenant and unknown subjects")
        parser.add_argument("--quiet", action="store_true", help="no progress on stderr")

    def handle(self, *args, file: Path, tenant: str, create: bool, quiet: bool, **options) -> None:
        if not file.is_file():
            raise CommandError(f"no such file: {file}")
        if create and not Tenant.objects.filter(slug=tenant).exists():
            owner = tenant_create(slug=tenant, name=tenant, actor=self.actor)
        else:
            owner = tenant_get(slug=tenant)
        total = sum(1 for line in file.open(encoding="utf-8") if line.strip())

        def progress(done: int, report) -> None:
            if not quiet:
                print(
                    f"\rimported {done}/{total} lines, {len(report.errors)} error(s)",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )

        with file.open(encoding="utf-8") as lines:
            report = memories_import(
                tenant=owner, lines=lines, create_subjects=create, actor=self.actor, progress=progress
            )
        if not quiet:
            print(file=sys.stderr)
        for line_no, message in report.errors:
            self.stderr.write(f"line {line_no}: {message}")
        written = ", ".join(f"{n} {t}" for t, n in sorted(report.written.items())) or "nothing"
        self.stdout.write(
            f"imported {sum(report.written.values())} of {report.lines} line(s) into {owner.slug}: {written}; "
            f"{report.supersessions} supersession link(s); {len(report.errors)} error(s)"
            + (f"; created subjects {', '.join(report.subjects_created)}" if report.subjects_created else "")
        )
