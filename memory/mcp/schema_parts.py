"""The parts the MCP tools' JSON schemas are made of (memory.mcp.tools): subjects, ids, types, pages, times,
fact types, steps, and a memory's scope (docs/scoping.md)."""

from __future__ import annotations

from typing import Any

from memory.scoping import MAX_METADATA_KEYS, MAX_METADATA_STRING, METADATA_KEY
from memory.selectors import RECALL_TYPES
from memory.validation import FACT_TYPES, MAX_ID_CHARS, MAX_SHORT_CHARS, MAX_STEPS

MAX_PAGE_SIZE = 100

# --- schema parts ------------------------------------------------------------------------------------

SUBJECT = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_ID_CHARS,
    "description": (
        "Whose memory: the person's id in your system. Required with a tenant service token; with a "
        "personal (subject) token leave it out — it is the token's own person, and any other id is not found."
    ),
}
MEMORY_ID = {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS}
TYPES = {
    "type": "array",
    "items": {"type": "string", "enum": list(RECALL_TYPES)},
    "minItems": 1,
    "uniqueItems": True,
    "description": "Only these memory types (default: all four).",
}
PAGE = {
    "page_size": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": 20},
    "cursor": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "From next_cursor."},
}
TIMESTAMP = {"type": "string", "format": "date-time", "maxLength": 64}
FACT_TYPE = {
    "type": "string",
    "enum": list(FACT_TYPES),
    "description": (
        "preference (likes, wants), identity (who they are: name, job, family), constraint (must or "
        "must not: allergies, budgets, deadlines) or world (anything else true about their world)."
    ),
}
STEPS = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_STEPS,
    "description": "The steps in order: each the instruction alone, or an object with it and a tool.",
    "items": {
        "oneOf": [
            {"type": "string", "minLength": 1, "maxLength": 2000, "description": "The instruction alone."},
            {
                "type": "object",
                "properties": {
                    "instruction": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What to do."},
                    "tool": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_SHORT_CHARS,
                        "description": "Tool to use.",
                    },
                },
                "required": ["instruction"],
                "additionalProperties": False,
            },
        ]
    },
}


def schema_of(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**properties, "subject": SUBJECT},
        "required": required,
        "additionalProperties": False,
    }


SCOPE_ID = {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS}
#: What scopes a memory within its subject, as remember takes it (memory/scoping.py checks the values).
SCOPE = {
    "agent_id": {**SCOPE_ID, "description": "Which agent wrote it (you, by default none)."},
    "app_id": {**SCOPE_ID, "description": "Which application it was written from."},
    "run_id": {**SCOPE_ID, "description": "Which run (task, job, workflow) it belongs to."},
    "metadata": {
        "type": "object",
        "maxProperties": MAX_METADATA_KEYS,
        "propertyNames": {"pattern": f"^{METADATA_KEY.pattern}$"},
        "additionalProperties": {
            "oneOf": [{"type": "string", "maxLength": MAX_METADATA_STRING}, {"type": "number"}, {"type": "boolean"}]
        },
        "description": "Your own keys (a-z, 0-9, _) and values (strings, numbers, booleans, ISO 8601 dates) to "
        'filter by later, e.g. {"project": "apollo", "priority": 2}.',
    },
}
FILTERS = {
    "type": "object",
    "description": "Only memories of a scope: field (agent_id, app_id, run_id, session_id, metadata.<key>) to a "
    'value, or to one operator {"in": [...]}, {"gte"|"gt"|"lte"|"lt": number or date}, {"exists": true|false}; '
    '"not": {...} excludes. E.g. {"agent_id": "planner", "metadata.priority": {"gte": 2}}. The shared catalog '
    "has no scope and is left out.",
}
