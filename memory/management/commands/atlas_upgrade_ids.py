"""atlas_upgrade_ids [--dry-run] — move memories written before ids included their owner to their new ids."""

from __future__ import annotations

from memory.services.id_upgrade import memory_ids_upgrade
from tenants.management.base import AtlasCommand


def _counts(per_type: dict[str, int]) -> str:
    return ", ".join(f"{n} {t}" for t, n in sorted(per_type.items())) or "none"


class Command(AtlasCommand):
    help = (
        "Move every memory still under a pre-owner id (an external id's or a consolidation item's) to its "
        "owner-scoped id, with supersession chains, source episodes and previous turns relinked, in every "
        "index and the archive. Safe to run again: a second run changes nothing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="only count the memories that would move")

    def handle(self, *args, dry_run: bool, **options) -> None:
        def progress(step: str, done: int, total: int) -> None:
            self.stderr.write(f"\r{step} {done}/{total}", ending="")
            self.stderr.flush()

        report = memory_ids_upgrade(dry_run=dry_run, progress=progress)
        self.stderr.write("")
        if dry_run:
            self.stdout.write(f"would move {_counts(report.legacy)} (dry run: nothing changed)")
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"moved {_counts(report.moved)}; kept {report.kept_newer} newer document(s) already under the new id; "
                f"relinked {report.relinked} document(s); rewrote {report.runs_rewritten} consolidation run(s) and "
                f"{report.watermarks_rewritten} watermark(s); deleted {report.deleted} legacy document(s)"
            )
        )
