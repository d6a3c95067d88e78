"""Validation shared by reads and writes: the limits and vocabularies of memory fields, ids, ISO 8601
timestamps and the narrowing filters a list and a recall take. A leaf: the selectors, recall and the
services (memory.services.prepare) all build on it, and it imports none of them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from difflib import get_close_matches
from typing import Any

from atlas_site.echo import echoed, names_listed
from atlas_site.errors import ValidationFailed
from memory.elastic import queries

MAX_TEXT_CHARS = 8000
MAX_SHORT_CHARS = 300
MAX_ID_CHARS = 128
MAX_STEPS = 50
MAX_STEP_ORDER = 2**31 - 1  # the mapping's integer field
MAX_TAGS = 30
MAX_LINKS = 50
FACT_TYPES = ("preference", "identity", "constraint", "world")
CONTRADICTIONS = ("natural", "harsh")
#: What people call the memory types (routes, the dashboard, MCP's old ``kind``): the type each means.
MEMORY_TYPE_WORDS = {
    "fact": "semantic",
    "facts": "semantic",
    "episode": "episodic",
    "episodes": "episodic",
    "turn": "episodic",
    "turns": "episodic",
    "playbook": "procedural",
    "playbooks": "procedural",
    "entry": "catalog",
    "entries": "catalog",
}


def memory_types_refusal(names: Iterable[Any], *, allowed: Iterable[str]) -> str | None:
    """Why ``names`` are not all memory types of ``allowed`` — naming the valid ones and what each unknown
    name most likely meant ("fact": semantic) — or None when they all are."""
    allowed = tuple(allowed)
    unknown = [name for name in names if name not in allowed]
    if not unknown:
        return None
    meant = []
    for name in unknown:
        word = name.strip().lower() if isinstance(name, str) else ""
        guess = MEMORY_TYPE_WORDS.get(word) or next(iter(get_close_matches(word, allowed, n=1, cutoff=0.6)), None)
        if guess in allowed and guess not in meant:
            meant.append(guess)
    hint = f" (did you mean {' and '.join(meant)}?)" if meant else ""
    return f"unknown memory type(s) {names_listed(map(echoed, unknown))}: use {', '.join(allowed)}{hint}"


def memory_types_check(names: Any, *, allowed: Iterable[str], field: str = "types") -> None:
    refusal = memory_types_refusal(names, allowed=allowed)
    if refusal is not None:
        raise ValidationFailed(refusal, field=field)


def require_text(value: Any, *, field_name: str, max_chars: int = MAX_TEXT_CHARS, required: bool = True) -> str:
    if value is None:
        if required:
            raise ValidationFailed(f"{field_name} is required", field=field_name)
        return ""
    if not isinstance(value, str):
        raise ValidationFailed(f"{field_name} must be a string", field=field_name)
    value = value.strip()
    if required and not value:
        raise ValidationFailed(f"{field_name} must not be empty", field=field_name)
    if len(value) > max_chars:
        raise ValidationFailed(f"{field_name} is longer than {max_chars} characters", field=field_name)
    return value


def optional_id(value: Any, *, field_name: str) -> str | None:
    if value is None:
        return None
    return require_text(value, field_name=field_name, max_chars=MAX_ID_CHARS)


def id_list(value: Any, *, field_name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValidationFailed(f"{field_name} must be a list of ids", field=field_name)
    if len(value) > MAX_LINKS:
        raise ValidationFailed(f"{field_name} has more than {MAX_LINKS} ids", field=field_name)
    return list(dict.fromkeys(v.strip() for v in value))


def timestamp(value: Any, *, field_name: str, default: datetime | None = None) -> datetime | None:
    if value is None:
        return default
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValidationFailed(
                f"{field_name} must be an ISO 8601 date-time, not {echoed(value)}", field=field_name
            ) from None
    else:
        raise ValidationFailed(f"{field_name} must be an ISO 8601 date-time", field=field_name)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        parsed.astimezone(UTC)  # an offset that moves year 1 or 9999 out of range cannot be compared or stored
    except OverflowError:
        raise ValidationFailed(f"{field_name} is out of range", field=field_name) from None
    return parsed


def list_filters(*, fact_type: Any, since: Any, until: Any) -> list[dict[str, Any]]:
    """The filters a list or a recall narrows by: facts of one ``fact_type``, memories created in
    [``since``, ``until``) (ISO 8601 date-times or datetimes; naive ones are UTC)."""
    filters: list[dict[str, Any]] = []
    if fact_type is not None:
        if not isinstance(fact_type, str) or fact_type not in FACT_TYPES:
            raise ValidationFailed(f"fact_type must be one of {', '.join(FACT_TYPES)}", field="fact_type")
        filters.append(queries.field_equals("fact_type", fact_type))
    start, end = timestamp(since, field_name="since"), timestamp(until, field_name="until")
    if start is not None and end is not None and start > end:
        raise ValidationFailed("since is after until", field="since")
    return filters + queries.created_between(since=start, until=end)
