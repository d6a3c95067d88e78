"""Base for the operator commands: domain errors and an unreachable Elasticsearch become one clear
CommandError line (exit 1), not a traceback."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from atlas_site.elastic.client import es_errors, es_url_shown
from atlas_site.errors import AtlasError, ElasticsearchUnreachable

# The Elasticsearch client logs each failed attempt (with its traceback) before it gives up; a command
# reports the outcome itself, in one line, so only the client's errors are shown while it runs.
_TRANSPORT_LOGGER = logging.getLogger("elastic_transport")


class _RenamedOption(argparse.Action):
    """An option's old name, accepted for one release: stores under the new name and says so on stderr."""

    def __init__(self, *args: Any, new_name: str, **kwargs: Any) -> None:
        self.new_name = new_name
        super().__init__(*args, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if getattr(namespace, self.dest, None) not in (None, values):
            parser.error(f"{option_string} is the old name of {self.new_name}: give {self.new_name} only")
        sys.stderr.write(f"warning: {option_string} is deprecated; use {self.new_name}\n")
        setattr(namespace, self.dest, values)


def subject_option(parser: argparse.ArgumentParser, *, help: str) -> None:
    """``--subject ID``, the name every command and the REST paths use; ``--user`` still works for one
    release, with a warning. (Not ``required=`` in argparse: the old name must be able to satisfy it, so a
    command that needs a subject checks with subject_required().)"""
    parser.add_argument("--subject", help=help)
    parser.add_argument("--user", dest="subject", action=_RenamedOption, new_name="--subject", help=argparse.SUPPRESS)


def subject_required(subject: str | None) -> str:
    if not subject:
        raise CommandError("--subject is required: the subject's external id")
    return subject


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
