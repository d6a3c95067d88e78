"""atlas_forget_log export --since ISO | --since-backup DIR · replay FILE — forgets to re-apply after a restore."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from django.core.management.base import CommandError

from memory.services.forget_replay import forget_log_replay, forget_log_since
from memory.services.restore import backup_verify
from tenants.management.base import AtlasCommand


class Command(AtlasCommand):
    help = (
        "Export the forgets recorded since a time or a backup (JSON lines, from the database that saw them), "
        "or replay such a file on a restored deployment: memories forgotten after a backup come back with it."
    )

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        export = sub.add_parser("export", help="print the forgets recorded since --since or the backup's time")
        since = export.add_mutually_exclusive_group(required=True)
        since.add_argument("--since", help="an ISO 8601 time with its offset, e.g. 2026-12-01T02:00:00+00:00")
        since.add_argument("--since-backup", type=Path, help="a backup directory made by atlas_backup")
        replay = sub.add_parser("replay", help="forget again what a file exported by `export` names")
        replay.add_argument("file", type=Path)

    def handle(self, *args, action: str, **options) -> None:
        if action == "export":
            for entry in forget_log_since(since=self._since(options["since"], options["since_backup"])):
                self.stdout.write(json.dumps(entry))
            return
        try:
            lines = options["file"].read_text().splitlines()
            entries = [json.loads(line) for line in lines if line.strip()]
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from None
        report = forget_log_replay(entries=entries, actor=self.actor)
        outcomes = ", ".join(f"{n} {what}" for what, n in sorted(report.outcomes.items())) or "nothing to do"
        self.stdout.write(self.style.SUCCESS(f"replayed {len(entries)} forget(s): {outcomes}"))
        for number, message in report.failures:
            self.stderr.write(f"entry {number}: {message}")
        if report.failures:
            raise CommandError(f"{len(report.failures)} forget(s) could not be applied again; see above")

    @staticmethod
    def _since(since: str | None, since_backup: Path | None) -> datetime:
        text = backup_verify(source=since_backup)["created_at"] if since_backup else since
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise CommandError(f"--since: {text!r} is not an ISO 8601 time") from None
        if moment.tzinfo is None:
            raise CommandError("--since: give the time with its offset (e.g. +00:00)")
        return moment
