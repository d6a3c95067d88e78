"""The one way any interface reads JSON it was sent (a REST body, an MCP message, an import line, a page
cursor): strict, bounded in depth, and refused with a ValidationFailed naming what was wrong.

Depth is measured on the text before it is parsed: a body nested 50,000 levels never reaches the parser
(whose recursion would raise RecursionError — a 500 — or build a structure every later step walks
recursively). :data:`MAX_JSON_DEPTH` sits well above the deepest request any interface takes: an MCP
``tools/call`` of ``remember`` with a playbook's steps is 5 levels (message → params → arguments →
steps → step).
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from atlas_site.errors import ValidationFailed

MAX_JSON_DEPTH = 32

# A string literal (escapes included; an unterminated one runs to the end, so the scan never goes back)
# or a bracket, captured: a string's brackets are text, not nesting.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|([\[\]{}])', re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1, "": 0}


def json_depth(text: str) -> int:
    """How deeply ``text``'s arrays and objects nest (0 for a scalar), without parsing it."""
    if text.count("[") + text.count("{") == 0:
        return 0
    return max(accumulate(map(_STEP.__getitem__, _TOKEN.findall(text))), default=0)


def json_depth_check(
    raw: bytes | str, *, field: str | None = "body", what: str = "the request body", max_depth: int = MAX_JSON_DEPTH
) -> None:
    """Refuse ``raw`` if its JSON nests deeper than ``max_depth`` (for a reader that parses it itself, as
    the MCP SDK does); whether it is JSON at all is left to that parser."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    # The cheap count first: most bodies hold fewer brackets than the limit and need no scan.
    if text.count("[") + text.count("{") > max_depth and json_depth(text) > max_depth:
        raise ValidationFailed(f"{what} is nested deeper than {max_depth} levels", field=field)


def json_parse(
    raw: bytes | str, *, field: str | None = "body", what: str = "the request body", max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """One JSON value from ``raw``: UTF-8, no NaN or Infinity, at most ``max_depth`` levels deep.

    Anything else is a ValidationFailed on ``field`` whose message starts with ``what``.
    """
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationFailed(f"{what} is not UTF-8 text", field=field) from None
    else:
        text = raw
    json_depth_check(text, field=field, what=what, max_depth=max_depth)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise ValidationFailed(
            f"{what} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", field=field
        ) from None
    except _NotAJsonNumber as exc:
        raise ValidationFailed(f"{what} is not JSON ({exc} is not a JSON number)", field=field) from None
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() digits
        raise ValidationFailed(f"{what} is not JSON (a number with too many digits)", field=field) from None
    except RecursionError:  # unreachable after the depth check; kept so no input can be a 500
        raise ValidationFailed(f"{what} is nested deeper than {max_depth} levels", field=field) from None


class _NotAJsonNumber(Exception):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotAJsonNumber(name)
