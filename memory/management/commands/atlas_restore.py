"""atlas_restore --from DIR — restore a backup of the embedded default into an empty data directory."""

from __future__ import annotations

import sys
from pathlib import Path

from django.conf import settings

from memory.services.restore import site_restore
from tenants.management.base import AtlasCommand


def _progress(message: str) -> None:
    print(f"atlas_restore: {message}", file=sys.stderr, flush=True)


class Command(AtlasCommand):
    help = (
        "Restore a backup made by atlas_backup into the empty data directory ATLAS_DATA_DIR (it may hold dev.env "
        "only), after checking every file's checksum and that ATLAS_ENCRYPTION_KEYS open its API keys."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("--from", dest="source", type=Path, required=True, help="the backup's directory")

    def handle(self, *args, source: Path, **options) -> None:
        report = site_restore(source=source, progress=_progress)
        self.stdout.write(
            self.style.SUCCESS(
                f"restored the backup of {report.manifest['created_at']} into {settings.DATA_DIR}: "
                f"{sum(report.documents.values())} document(s); start the stack with `make run` "
                "(it applies newer migrations)"
            )
        )
        if not (settings.DATA_DIR / "dev.env").is_file():
            self.stderr.write(
                self.style.WARNING(
                    f"{settings.DATA_DIR / 'dev.env'} is missing: `make run` would generate NEW secrets, and a new "
                    "encryption key cannot open the restored API keys. Copy the backed-up deployment's dev.env there "
                    "first (or set ATLAS_ENCRYPTION_KEYS and ATLAS_ES_PASSWORD in the environment)."
                )
            )
