"""Base for the operator commands: domain errors and an unreachable Elasticsearch become one clear
CommandError line (exit 1), not a traceback."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from atlas_site.errors import AtlasError, ElasticsearchUnreachable
from memory.elastic.client import es_errors, es_url_shown

# The Elasticsearch client logs each failed attempt (with its traceback) before it gives up; a command
# reports the outcome itself, in one line, so only the client's errors are shown while it runs.
_TRANSPORT_LOGGER = logging.getLogger("elastic_transport")


class AtlasCommand(BaseCommand):
    actor_prefix = "cli"

    def execute(self, *args: Any, **options: Any) -> str | None:
        level = _TRANSPORT_LOGGER.level
        _TRANSPORT_LOGGER.setLevel(max(level, logging.ERROR))
        try:
            with es_errors(f"run {self.__module__.rsplit('.', 1)[-1]}"):
                return super().execute(*args, **options)
        except ElasticsearchUnreachable as err:
            raise CommandError(
                f"{err.message}: tried {es_url_shown()} (ATLAS_ES_URL; `make run` records the URL it started "
                "in its dev.env)"
            ) from err
        except AtlasError as err:
            raise CommandError(err.message) from err
        finally:
            _TRANSPORT_LOGGER.setLevel(level)

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
