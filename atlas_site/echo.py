"""What an error message may repeat of a caller's input: at most ECHO_CHARS characters of one value, at
most ECHO_NAMES names of a list — every interface's messages (REST, MCP, import lines) build their
echoes here.

An error that quotes its input whole answers in proportion to the input: a 50 MB value in an import line
made a 50 MB message (578 MB of memory for the run), 60,000 unknown keys in a JSON body a 4 MB 400
(issue 32, finding 10). The caller sent the value; a message needs only enough of it to find it.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any

from jsonschema.exceptions import ValidationError as SchemaError

#: How much of one value an error message repeats: the first ECHO_CHARS characters, then how long it was.
ECHO_CHARS = 80
#: How many names (unknown fields, missing ids) an error message lists before it says how many more.
ECHO_NAMES = 20
#: The longest message an interface passes on, whatever built it (a third party's message that quotes a
#: value, say): the rest is cut, saying how long it was.
MESSAGE_CHARS = 1000

_REPR = reprlib.Repr()  # a list's or an object's first items, each shortened (Python 3.11: no keyword arguments)
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxdict = 6
_REPR.maxstring = _REPR.maxother = ECHO_CHARS // 2


def shortened(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` itself when it is at most ``limit`` characters, else its first ``limit`` and its length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def echoed(value: Any) -> str:
    """``value`` as Python writes it (``'Lisbon'``, ``42``), at most ECHO_CHARS characters of it:
    ``'aaaa…'… (52428800 characters)`` for a long string."""
    if isinstance(value, str) and len(value) > ECHO_CHARS:
        return f"{value[:ECHO_CHARS]!r}… ({len(value)} characters)"
    return shortened(_REPR.repr(value))


def names_shown(names: Iterable[Any]) -> tuple[list[str], int]:
    """The first ECHO_NAMES of ``names`` (each shortened) and how many more there are."""
    names = list(names)
    return [shortened(str(name)) for name in names[:ECHO_NAMES]], max(0, len(names) - ECHO_NAMES)


def names_listed(names: Iterable[Any]) -> str:
    """``a, b, c`` — or the first ECHO_NAMES, then ``… and 59980 more``."""
    shown, more = names_shown(names)
    return ", ".join(shown) + (f", … and {more} more" if more else "")


def schema_message(error: SchemaError) -> str:
    """A JSON Schema error's message with its echoes capped: jsonschema quotes the whole value (``'…' is
    too long``) and every unexpected property (``Additional properties are not allowed (…)``)."""
    instance = error.instance
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        extras = sorted((name for name in instance if name not in error.schema.get("properties", {})), key=str)
        if len(extras) > ECHO_NAMES or any(len(str(name)) > ECHO_CHARS for name in extras):
            shown, more = names_shown(extras)
            listed = ", ".join(echoed(name) for name in extras[: len(shown)]) + (f", … and {more} more" if more else "")
            return f"Additional properties are not allowed ({listed} were unexpected)"
        return error.message
    message = error.message
    if len(message) > MESSAGE_CHARS // 4 and isinstance(instance, str | list | dict):
        message = message.replace(repr(instance), echoed(instance))
    return shortened(message, MESSAGE_CHARS)
