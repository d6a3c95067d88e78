"""atlas_reindex TYPE [--reembed] — move a memory index to a new version and swap its alias."""

from __future__ import annotations

import sys

from memory.elastic.indices import MEMORY_TYPES
from memory.services.reindex import index_reindex
from tenants.management.base import AtlasCommand


class Command(AtlasCommand):
    help = "Reindex a memory index into a new version (current mapping; new embeddings where the model changed)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("memory_type", choices=MEMORY_TYPES)
        parser.add_argument("--reembed", action="store_true", help="recompute every embedding, not only other models'")

    def handle(self, *args, memory_type: str, reembed: bool, **options) -> None:
        def progress(done: int, total: int) -> None:
            print(f"\rcopied {done}/{total}", end="", file=sys.stderr, flush=True)

        report = index_reindex(memory_type=memory_type, reembed=reembed, progress=progress)
        print(file=sys.stderr)
        self.stdout.write(
            self.style.SUCCESS(
                f"{report.alias}: {report.source_index} → {report.target_index}, {report.copied} document(s), "
                f"re-embedded: {', '.join(f'{n} in {field}' for field, n in report.reembedded.items())}"
            )
        )
