"""Base for the operator commands: domain errors become a clear CommandError (exit 1), not a traceback."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from atlas_site.errors import AtlasError


class AtlasCommand(BaseCommand):
    actor_prefix = "cli"

    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except AtlasError as err:
            raise CommandError(err.message) from err

    @property
    def actor(self) -> str:
        return f"{self.actor_prefix}:{self.__module__.rsplit('.', 1)[-1]}"

    def emit(self, rows: list[dict[str, Any]], *, as_json: bool, columns: list[str]) -> None:
        """Print rows as JSON (for scripts) or as an aligned table (for people)."""
        if as_json:
            self.stdout.write(json.dumps(rows, indent=2, default=str))
            return
        widths = {c: max([len(c), *(len(str(r.get(c, ""))) for r in rows)]) for c in columns}
        self.stdout.write("  ".join(c.ljust(widths[c]) for c in columns))
        for row in rows:
            self.stdout.write("  ".join(str(row.get(c, "")).ljust(widths[c]) for c in columns))
