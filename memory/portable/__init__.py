"""Memories that move with their owner: the documented export format (docs/export-format.md), its
export (a read: ``export``), its import (a write: ``importing``) and the converters that turn other
products' dumps into it (``foreign``). One package because the three share one schema (schema.json)
and must change together."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FORMAT = "atlas-memory-export"
VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("schema.json")


@cache
def export_schema() -> dict[str, Any]:
    """The JSON Schema every line of an export is valid against (committed beside this module)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
