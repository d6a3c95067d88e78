"""atlas_export --tenant SLUG [--subject ID] [--out FILE] — export memories (docs/export-format.md).

JSON Lines on stdout, or in FILE: a header line, then one memory per line. Progress goes to stderr
every PROGRESS_EVERY memories, so a big export can be watched while stdout carries the data. With
--out the file appears only once the export is complete (written beside it, then renamed): a failed
export never leaves half a file that an import would take for all of it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from memory.portable.export import export_line, memories_export
from tenants.management.base import AtlasCommand
from tenants.selectors import subject_get, tenant_get

PROGRESS_EVERY = 1000


class Command(AtlasCommand):
    help = "Export memories as JSON Lines in the documented format (docs/export-format.md)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument(
            "--subject", help="only this subject's memories (its external id); default: all, and the catalog"
        )
        parser.add_argument("--out", type=Path, help="write to this file instead of stdout")
        parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
        parser.add_argument(
            "--filters",
            help='scope filters as JSON, e.g. \'{"agent_id": "planner", "metadata.priority": {"gte": 2}}\' (docs/scoping.md)',
        )

    def handle(self, *args, tenant: str, subject: str | None, out: Path | None, quiet: bool, **options) -> None:
        owner = tenant_get(slug=tenant)
        who = subject_get(tenant=owner, external_id=subject) if subject else None
        if out is not None and not out.parent.is_dir():
            raise CommandError(f"no such directory: {out.parent}")
        records = memories_export(tenant=owner, subject=who, filters=options.get("filters"))
        if out is None:
            count = self._write(records, lambda line: self.stdout.write(line, ending=""), quiet)
        else:
            handle, partial = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as stream:
                    count = self._write(records, stream.write, quiet)
                os.replace(partial, out)
            except BaseException:
                Path(partial).unlink(missing_ok=True)
                raise
        if not quiet:
            where = f" to {out}" if out else ""
            self.stderr.write(f"exported {count} memor{'y' if count == 1 else 'ies'} of {owner.slug}{where}")

    def _write(self, records: Iterator[dict[str, Any]], write: Callable[[str], Any], quiet: bool) -> int:
        count = -1  # the header is not a memory
        for record in records:
            write(export_line(record))
            count += 1
            if not quiet and count and count % PROGRESS_EVERY == 0:
                self.stderr.write(f"exported {count} memories…")
        return count
