"""Page cursors: the opaque ``next_cursor`` every listing hands out, and the one decoder that takes it
back — checking each part against what that listing's sort puts there, so a cursor the service never
handed out is a 400 on ``cursor`` (not a search Elasticsearch refuses, not a 500).

A cursor is URL-safe base64 of a JSON list: the sort values of the page's last item. Listings of
memories sort by (``created_at``, ``memory_id``): a date as Elasticsearch returns it (epoch
milliseconds) and an id; the tenant's subjects by external id alone.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from atlas_site.errors import ValidationFailed
from atlas_site.json_input import json_parse

#: Longer than any cursor a listing hands out (an external id of 128 characters, four bytes each).
MAX_CURSOR_CHARS = 1000
MAX_ID_CHARS = 128
# Epoch milliseconds of the dates a document can hold (years 1 to 9999, as Python and Elasticsearch's
# default date format read them), and the two sentinels Elasticsearch sorts a document without the
# field by (Long.MIN_VALUE / Long.MAX_VALUE, "missing": "_last" in either order).
_FIRST_MILLIS = int(datetime(1, 1, 1, tzinfo=UTC).timestamp() * 1000)
_LAST_MILLIS = int(datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC).timestamp() * 1000)
_MISSING = (-(2**63), 2**63 - 1)


class _Refused(Exception):
    pass


def sort_date(value: Any) -> int:
    """A date sort value: epoch milliseconds in range, or the sentinel of a document without the date."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Refused("its date is not epoch milliseconds")
    if value not in _MISSING and not _FIRST_MILLIS <= value <= _LAST_MILLIS:
        raise _Refused("its date is out of range")
    return value


def sort_id(value: Any) -> str:
    """An id sort value: a printable string of at most MAX_ID_CHARS."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_CHARS or not value.isprintable():
        raise _Refused(f"its id is not 1 to {MAX_ID_CHARS} printable characters")
    return value


#: The cursor parts of every memory listing, sorted newest first with ties broken by id.
MEMORY_SORT = (sort_date, sort_id)


def cursor_encode(sort_values: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(sort_values), ensure_ascii=False).encode()).decode()


def cursor_decode(cursor: Any, *, parts: Sequence[Callable[[Any], Any]]) -> list[Any]:
    """The sort values ``cursor`` holds, each checked by its part of ``parts``; anything else is a
    ValidationFailed on ``cursor`` that says why."""
    try:
        if not isinstance(cursor, str) or not 1 <= len(cursor) <= MAX_CURSOR_CHARS:
            raise _Refused(f"it is not 1 to {MAX_CURSOR_CHARS} characters")
        try:
            raw = base64.urlsafe_b64decode(cursor.encode("ascii"))
        except (UnicodeEncodeError, binascii.Error, ValueError):
            raise _Refused("it is not base64") from None
        try:
            values = json_parse(raw, field="cursor", what="it", max_depth=1)
        except ValidationFailed as error:
            raise _Refused(error.message) from None
        if not isinstance(values, list) or len(values) != len(parts):
            raise _Refused(f"it does not hold {len(parts)} sort value(s)")
        return [check(value) for check, value in zip(parts, values, strict=True)]
    except _Refused as refused:
        raise ValidationFailed(
            f"cursor is not one this service handed out ({refused}): use the next_cursor of the previous page",
            field="cursor",
        ) from None
