"""Scope within a subject: the agent, app and run that wrote a memory and the caller's own metadata — the
limits, the fields a write stores, and the ``filters`` recall, lists, export and forget take.

A leaf, as memory.validation: the write path (memory.services.prepare) and the reads both build on it.
Every limit lives here; every refusal is a ValidationFailed naming the field (a 400 on every interface).
Filters only ever narrow: they are ANDed with the subject's own filters and its key's document level
security by whoever reads (never in place of them). docs/scoping.md describes the shape.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from atlas_site.echo import echoed
from atlas_site.errors import ValidationFailed
from atlas_site.json_input import json_parse
from memory.elastic import scope_queries as sq
from memory.validation import MAX_ID_CHARS, optional_id

#: The ids a write may stamp on any memory (episodes also carry ``session_id``).
SCOPE_IDS = ("agent_id", "app_id", "run_id")
#: The id fields a filter may name (``metadata.<key>`` besides).
FILTER_IDS = (*SCOPE_IDS, "session_id")
MAX_METADATA_KEYS = 16
METADATA_KEY = re.compile(r"[a-z][a-z0-9_]{0,39}")
MAX_METADATA_STRING = 256
#: The most values one ``in`` lists, and the most conditions one filter (``not`` included) holds.
MAX_IN_VALUES = 50
MAX_CONDITIONS = 20
#: The largest JSON text a ``filters`` query parameter (GET lists, the CLI) may hold.
MAX_FILTERS_JSON = 8000
RANGE_OPERATORS = ("gte", "gt", "lte", "lt")
OPERATORS = ("in", *RANGE_OPERATORS, "exists")
# An ISO 8601 date or date-time: such a string is a date too (compared as one by gte/gt/lte/lt).
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")


# ---------------------------------------------------------------- writes


def _iso_date(value: str) -> str | None:
    """``value`` as a stored date (ISO 8601), or None when it is no date."""
    if not _ISO_DATE.fullmatch(value):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if len(value) == 10 else parsed.isoformat()


def _unpaired_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone ``\\ud800``-``\\udfff`` (JSON escapes allow it; Elasticsearch cannot store it)."""
    return any("\ud800" <= c <= "\udfff" for c in text)


def value_type(value: Any) -> str | None:
    """A metadata value's type — boolean, number, date, string — or None when metadata cannot hold it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number" if math.isfinite(value) and abs(value) < 2**53 else None
    if isinstance(value, str):
        if _unpaired_surrogate(value):
            return None
        return "date" if _iso_date(value) is not None else "string"
    return None


def metadata_validate(value: Any, *, field_name: str = "metadata") -> dict[str, Any]:
    """A memory's metadata: a flat object of at most MAX_METADATA_KEYS keys (lower-case, digits and ``_``,
    starting with a letter, ≤ 40 characters) holding strings (≤ MAX_METADATA_STRING characters),
    numbers, booleans or ISO 8601 dates."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationFailed(f"{field_name} must be an object of keys to values", field=field_name)
    if len(value) > MAX_METADATA_KEYS:
        raise ValidationFailed(f"{field_name} has more than {MAX_METADATA_KEYS} keys", field=field_name)
    for key, item in value.items():
        if not isinstance(key, str) or not METADATA_KEY.fullmatch(key):
            raise ValidationFailed(
                f"{field_name} key {echoed(key)} must start with a lower-case letter and hold only a-z, 0-9 "
                "and _ (at most 40 characters)",
                field=field_name,
            )
        where = f"{field_name}.{key}"
        if value_type(item) is None:
            raise ValidationFailed(
                f"{where} must be a string, a number, a boolean or an ISO 8601 date (no lists, objects or null)",
                field=where,
            )
        if isinstance(item, str) and len(item) > MAX_METADATA_STRING:
            raise ValidationFailed(f"{where} is longer than {MAX_METADATA_STRING} characters", field=where)
    return dict(value)


def metadata_entries(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """The typed entries filters search (memory.elastic.scope_queries): a date string is also a string,
    so equality on its text and a range on its time both find it."""
    entries = []
    for key, value in metadata.items():
        kind = value_type(value)
        entry: dict[str, Any] = {"key": key}
        if kind == "date":
            entry.update(kw=value, date=_iso_date(value))
        else:
            entry[sq.ENTRY_FIELDS[kind or "string"]] = value
        entries.append(entry)
    return entries


def scope_fields(
    *, agent_id: Any = None, app_id: Any = None, run_id: Any = None, metadata: Any = None
) -> dict[str, Any]:
    """The scope fields a write stores (only those given): the ids, ``metadata`` as written and its entries."""
    out: dict[str, Any] = {}
    for name, value in (("agent_id", agent_id), ("app_id", app_id), ("run_id", run_id)):
        checked = optional_id(value, field_name=name)
        if checked:
            out[name] = checked
    checked_metadata = metadata_validate(metadata)
    if checked_metadata:
        out["metadata"] = checked_metadata
        out["metadata_entries"] = metadata_entries(checked_metadata)
    return out


def scope_of(source: dict[str, Any]) -> dict[str, Any]:
    """A stored memory's scope, as a write takes it (what consolidation carries from episodes to a fact)."""
    return {name: source[name] for name in (*SCOPE_IDS, "metadata") if source.get(name)}


def scopes_shared(scopes: list[dict[str, Any]]) -> dict[str, Any]:
    """What every one of ``scopes`` has in common: the ids they all carry alike and the metadata keys they all
    hold with one value (what a fact distilled from episodes of several scopes may carry)."""
    if not scopes:
        return {}
    first, rest = scopes[0], scopes[1:]
    shared = {
        name: first[name] for name in SCOPE_IDS if name in first and all(s.get(name) == first[name] for s in rest)
    }
    metadata = {
        key: value
        for key, value in (first.get("metadata") or {}).items()
        if all((s.get("metadata") or {}).get(key, _ABSENT) == value for s in rest)
    }
    return shared | ({"metadata": metadata} if metadata else {})


_ABSENT = object()


# ---------------------------------------------------------------- filters


def filters_parse(value: Any, *, field_name: str = "filters") -> list[dict[str, Any]]:
    """``filters`` as query clauses to AND with a read's own: [] when absent. ``value`` is the object, or
    its JSON text (a GET list's query parameter, the CLI's ``--filters``)."""
    if value is None or value == {} or value == "":
        return []
    if isinstance(value, str):
        value = _json_object(value, field_name=field_name)
    if not isinstance(value, dict):
        raise ValidationFailed(f"{field_name} must be an object of field to condition", field=field_name)
    conditions = dict(value)
    excluded = conditions.pop("not", None)
    if len(conditions) + (len(excluded) if isinstance(excluded, dict) else 0) > MAX_CONDITIONS:
        raise ValidationFailed(f"{field_name} holds more than {MAX_CONDITIONS} conditions", field=field_name)
    clauses = _conditions(conditions, field_name=field_name)
    if excluded is not None:
        if not isinstance(excluded, dict) or not excluded or "not" in excluded:
            raise ValidationFailed(
                f"{field_name}.not must be a non-empty object of conditions (without another not)",
                field=f"{field_name}.not",
            )
        clauses.append(sq.none_of(_conditions(excluded, field_name=f"{field_name}.not")))
    return [sq.OWN_MEMORIES, *clauses]


def filters_fields(value: Any) -> list[str]:
    """The fields a valid ``filters`` names (``not``'s too): what an audit record keeps of it."""
    if isinstance(value, str):
        value = _json_object(value, field_name="filters")
    named = [name for name in value if name != "not"]
    return named + [f"not.{name}" for name in value.get("not") or {}]


def _json_object(text: str, *, field_name: str) -> Any:
    if len(text) > MAX_FILTERS_JSON:
        raise ValidationFailed(f"{field_name} is longer than {MAX_FILTERS_JSON} characters", field=field_name)
    try:  # the one strict, depth-bounded reader every interface uses
        return json_parse(text, field=field_name, what=field_name)
    except ValidationFailed as refused:
        raise ValidationFailed(
            f'{refused.message}: it must be a JSON object, e.g. {{"agent_id": "planner"}}', field=field_name
        ) from None


def _conditions(conditions: dict[str, Any], *, field_name: str) -> list[dict[str, Any]]:
    clauses = []
    for name, condition in conditions.items():
        where = f"{field_name}.{name}" if isinstance(name, str) else field_name
        if name in FILTER_IDS:
            clauses.append(_id_clause(name, condition, where=where))
        elif isinstance(name, str) and name.startswith("metadata."):
            key = name.removeprefix("metadata.")
            if not METADATA_KEY.fullmatch(key):
                raise ValidationFailed(f"{echoed(key)} is not a metadata key (a-z, 0-9 and _)", field=where)
            clauses.append(_metadata_clause(key, condition, where=where))
        else:
            raise ValidationFailed(
                f"unknown filter field {echoed(name)}: use {', '.join(FILTER_IDS)}, metadata.<key> or not",
                field=where,
            )
    return clauses


def _operator(condition: Any, *, where: str) -> tuple[str | None, Any]:
    """(operator, operand) of one condition; (None, value) for a bare value (equality)."""
    if not isinstance(condition, dict):
        return None, condition
    if len(condition) != 1:
        raise ValidationFailed(
            f'{where} takes one operator ({", ".join(OPERATORS)}), e.g. {{"in": [...]}}', field=where
        )
    ((operator, operand),) = condition.items()
    if operator not in OPERATORS:
        raise ValidationFailed(f"unknown operator {echoed(operator)}: use {', '.join(OPERATORS)}", field=where)
    return operator, operand


def _listed(operator: str | None, operand: Any, *, where: str) -> list[Any]:
    if operator is None:
        return [operand]
    if not isinstance(operand, list) or not operand or len(operand) > MAX_IN_VALUES:
        raise ValidationFailed(f"{where}.in takes a list of 1 to {MAX_IN_VALUES} values", field=where)
    return operand


def _exists(operand: Any, *, where: str) -> bool:
    if not isinstance(operand, bool):
        raise ValidationFailed(f"{where}.exists takes true or false", field=where)
    return operand


def _id_clause(name: str, condition: Any, *, where: str) -> dict[str, Any]:
    operator, operand = _operator(condition, where=where)
    if operator == "exists":
        present = sq.id_exists(name)
        return present if _exists(operand, where=where) else {"bool": {"must_not": [present]}}
    if operator in RANGE_OPERATORS:
        raise ValidationFailed(f"{name} takes a value, in or exists (ranges compare numbers and dates)", field=where)
    values = _listed(operator, operand, where=where)
    if not all(isinstance(v, str) and v and len(v) <= MAX_ID_CHARS and not _unpaired_surrogate(v) for v in values):
        raise ValidationFailed(f"{name} values are ids: strings of 1 to {MAX_ID_CHARS} characters", field=where)
    return sq.id_equals(name, values)


def _metadata_clause(key: str, condition: Any, *, where: str) -> dict[str, Any]:
    operator, operand = _operator(condition, where=where)
    if operator == "exists":
        present = sq.metadata_entry(key, [])
        return present if _exists(operand, where=where) else {"bool": {"must_not": [present]}}
    if operator in RANGE_OPERATORS:
        return sq.metadata_entry(key, [_range(operator, operand, where=where)])
    values = _listed(operator, operand, where=where)
    by_type: dict[str, list[Any]] = {}
    for item in values:
        kind = value_type(item)
        if kind is None or (isinstance(item, str) and len(item) > MAX_METADATA_STRING):
            raise ValidationFailed(f"{where} compares strings, numbers, booleans or dates", field=where)
        # A date is matched by its text, as written (equality); a range compares it as a time.
        by_type.setdefault("string" if kind == "date" else kind, []).append(item)
    return sq.metadata_entry(key, [sq.any_of([sq.entry_equals(kind, listed) for kind, listed in by_type.items()])])


def _range(operator: str, operand: Any, *, where: str) -> dict[str, Any]:
    kind = value_type(operand)
    if kind == "number":
        return sq.entry_range("number", {operator: operand})
    if kind == "date":
        return sq.entry_range("date", {operator: _iso_date(operand)})
    raise ValidationFailed(
        f"{where}.{operator} compares numbers and ISO 8601 dates, not {echoed(operand)}", field=where
    )
