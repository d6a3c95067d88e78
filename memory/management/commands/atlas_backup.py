"""atlas_backup --to DIR — a consistent backup of the embedded default while it runs (docs/operations.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from memory.services.backup import site_backup, write_block_lift
from tenants.management.base import AtlasCommand


def _progress(message: str) -> None:
    print(f"atlas_backup: {message}", file=sys.stderr, flush=True)


class Command(AtlasCommand):
    help = (
        "Back up the embedded default (SQLite database, embedded Elasticsearch's documents and API keys) into a "
        "new directory, while `make run` serves: writes answer 503 for the second or two the copy takes. "
        "The encryption keys (ATLAS_ENCRYPTION_KEYS) are NOT included. With PostgreSQL or a cluster of your own, "
        "see docs/operations.md."
    )

    def add_arguments(self, parser) -> None:
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--to", type=Path, help="a new (or empty) directory for the backup")
        target.add_argument(
            "--lift-write-block",
            action="store_true",
            help="only lift the write block an interrupted backup left on the indices (not while atlas_reindex runs: "
            "it holds a block of its own)",
        )

    def handle(self, *args, to: Path | None, lift_write_block: bool, **options) -> None:
        if lift_write_block:
            names = write_block_lift()
            self.stdout.write(self.style.SUCCESS(f"write block lifted from {len(names)} index(es)"))
            return
        report = site_backup(destination=to, progress=_progress)
        manifest = report.manifest
        docs = sum(index["docs"] for index in manifest["indices"].values())
        self.stdout.write(
            self.style.SUCCESS(
                f"backed up to {report.destination}: {docs} document(s) in {len(manifest['indices'])} index(es), "
                f"{manifest['credentials']['active_in_database']} active API key(s)"
            )
        )
        missing = manifest["credentials"]["missing_from_key_store"]
        if missing:
            self.stderr.write(
                f"warning: {len(missing)} active API key(s) of the database are not usable in the key store "
                f"({', '.join(missing[:3])}); the credentials reconciler replaces them after a restore"
            )
        self.stderr.write(
            self.style.WARNING(
                "NOT in the backup: ATLAS_ENCRYPTION_KEYS (in .data/dev.env for `make run`). A restore needs the "
                "same keys: keep them, apart from the backups."
            )
        )
