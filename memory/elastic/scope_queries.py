"""Query clauses of scope filters: the agent, app, run and session ids a memory carries, and its metadata.

Metadata is stored twice (memory.elastic.mappings.ScopedMemory): as written, in ``metadata`` (returned,
not indexed), and as typed entries in the nested ``metadata_entries`` — one per key, its value in the
field of its type (``kw`` keyword, ``num`` double, ``date`` date, ``bool`` boolean). A clause on a key
is a nested query naming the key and comparing the typed field, so a number compares as a number and a
date as a date (why not ``flattened``: docs/scoping.md).
"""

from __future__ import annotations

from typing import Any

METADATA_PATH = "metadata_entries"
#: A metadata value's type → the entry field holding it.
ENTRY_FIELDS = {"string": "kw", "number": "num", "date": "date", "boolean": "bool"}


def id_equals(field: str, values: list[str]) -> dict[str, Any]:
    return {"terms": {field: values}}


def id_exists(field: str) -> dict[str, Any]:
    return {"exists": {"field": field}}


def metadata_entry(key: str, clauses: list[dict[str, Any]]) -> dict[str, Any]:
    """The memories with an entry for ``key`` matching every clause (none: the key is there)."""
    must = [{"term": {f"{METADATA_PATH}.key": key}}, *clauses]
    return {"nested": {"path": METADATA_PATH, "query": {"bool": {"filter": must}}}}


def entry_equals(value_type: str, values: list[Any]) -> dict[str, Any]:
    return {"terms": {f"{METADATA_PATH}.{ENTRY_FIELDS[value_type]}": values}}


def entry_range(value_type: str, bounds: dict[str, Any]) -> dict[str, Any]:
    return {"range": {f"{METADATA_PATH}.{ENTRY_FIELDS[value_type]}": bounds}}


def any_of(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"bool": {"should": clauses, "minimum_should_match": 1}}


def none_of(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    """Excludes the memories matching all of ``clauses`` together."""
    return {"bool": {"must_not": [{"bool": {"filter": clauses}}]}}


#: A scoped read is a read of the subject's own memories: the tenant catalog carries no scope (no agent,
#: app, run or metadata), so it is left out whatever the filter — also under ``not`` and ``exists: false``.
OWN_MEMORIES = {"exists": {"field": "user_id"}}
