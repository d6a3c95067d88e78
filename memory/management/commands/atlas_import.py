"""atlas_import FILE.jsonl --tenant SLUG [--create] [--allow-partial] — import memories.

A bad line is reported with its number and skipped; the other lines are imported. The command exits 1
when any line failed, unless --allow-partial accepts a partial import.
"""

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
    help = 'Import memories from a JSON-lines file (format in the README, "Importing memories").'

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--create", action="store_true", help="create the tenant and unknown subjects")
        parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
        parser.add_argument(
            "--allow-partial",
            action="store_true",
            help="exit 0 even when some lines failed (they are reported and skipped either way)",
        )

    def handle(self, *args, file: Path, tenant: str, create: bool, quiet: bool, allow_partial: bool, **options) -> None:
        if not file.is_file():
            raise CommandError(f"no such file: {file}")
        if create and not Tenant.objects.filter(slug=tenant).exists():
            owner = tenant_create(slug=tenant, name=tenant, actor=self.actor)
        else:
            owner = tenant_get(slug=tenant)
        # surrogateescape: a line that is not UTF-8 becomes that line's error, not the whole run's.
        with file.open(encoding="utf-8", errors="surrogateescape") as lines:
            total = sum(1 for line in lines if line.strip())
        # Progress is for a person watching a terminal; it is erased at the end so that the summary
        # below is the one account of the run.
        show_progress = not quiet and sys.stderr.isatty()

        def progress(done: int, report) -> None:
            if show_progress:
                print(f"\rread {done}/{total} line(s)…", end="", file=sys.stderr, flush=True)

        with file.open(encoding="utf-8", errors="surrogateescape") as lines:
            report = memories_import(
                tenant=owner, lines=lines, create_subjects=create, actor=self.actor, progress=progress
            )
        if show_progress:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
        for line_no, message in report.errors:
            self.stderr.write(f"line {line_no}: {message}")
        written = ", ".join(f"{n} {t}" for t, n in sorted(report.written.items())) or "nothing"
        self.stdout.write(
            f"imported {sum(report.written.values())} of {report.lines} line(s) into {owner.slug}: {written}; "
            f"{report.supersessions} supersession link(s); {len(report.errors)} error(s)"
            + (f"; created subjects {', '.join(report.subjects_created)}" if report.subjects_created else "")
        )
        if report.errors and not allow_partial:
            raise CommandError(
                "the import is partial (the lines above were skipped): fix them and import the file again "
                "(re-importing overwrites, it does not duplicate), or pass --allow-partial to accept it"
            )
