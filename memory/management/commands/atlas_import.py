"""atlas_import FILE --tenant SLUG [--from mem0|graphiti] [--subject ID] [--create] [--allow-partial].

FILE is an export (docs/export-format.md: its first line is the header), the older line format (the
README's "Importing memories"), or with --from another product's dump (mem0's get_all JSON, a
Graphiti/Zep episode dump). Every line is checked before anything is written: with any bad line
(reported with its number, in order) nothing is imported and the command exits 1; --allow-partial
imports the other lines instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import CommandError

from memory.portable.foreign import SOURCES
from memory.portable.importing import foreign_import
from memory.portable.lines import memories_import
from tenants.management.base import AtlasCommand
from tenants.models import Tenant
from tenants.selectors import tenant_get
from tenants.services import tenant_create


class Command(AtlasCommand):
    help = 'Import memories from a JSON-lines file (format in the README, "Importing memories").'

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--tenant", required=True)
        parser.add_argument(
            "--from",
            dest="source",
            choices=SOURCES,
            help="FILE is another product's dump: mem0's get_all JSON or a Graphiti/Zep episode dump",
        )
        parser.add_argument(
            "--subject", help="put an export's memories under this subject (its external id) whatever the file names"
        )
        parser.add_argument("--create", action="store_true", help="create the tenant and unknown subjects")
        parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
        parser.add_argument(
            "--allow-partial",
            action="store_true",
            help="import the valid lines when some are bad (reported and skipped), and exit 0",
        )

    def handle(
        self,
        *args,
        file: Path,
        tenant: str,
        source: str | None,
        subject: str | None,
        create: bool,
        quiet: bool,
        allow_partial: bool,
        **options,
    ) -> None:
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

        given = {
            "tenant": owner,
            "create_subjects": create,
            "actor": self.actor,
            "subject_name": subject,
            "partial": allow_partial,
            "progress": progress,
        }
        if source is not None:
            try:
                text = file.read_text(encoding="utf-8")
            except UnicodeDecodeError as err:
                raise CommandError(f"{file} is not UTF-8 text (byte {err.start})") from None
            report = foreign_import(source=source, text=text, **given)
        else:
            with file.open(encoding="utf-8", errors="surrogateescape") as lines:
                report = memories_import(lines=lines, **given)
        if show_progress:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
        for line_no, message in report.errors:
            self.stderr.write(f"{report.unit} {line_no}: {message}")
        written = ", ".join(f"{n} {t}" for t, n in sorted(report.written.items())) or "nothing"
        if report.unchanged:
            written += f" ({sum(report.unchanged.values())} already stored as they are, left unchanged)"
        self.stdout.write(
            f"imported {sum(report.written.values())} of {report.lines} {report.unit}(s) into {owner.slug}: {written}; "
            f"{report.supersessions} supersession link(s); {len(report.errors)} error(s)"
            + (f"; created subjects {', '.join(report.subjects_created)}" if report.subjects_created else "")
        )
        if report.errors and not allow_partial:
            raise CommandError(
                f"nothing was imported: fix the {report.unit}s above and import the file again, or pass --allow-partial "
                f"to import the other {report.unit}s (re-importing leaves what is stored as it is)"
            )
