"""Malformed input every interface must refuse with a 4xx that names what was wrong, never a 5xx: page
cursors that are not ones the service handed out, and JSON nested deeper than any request needs."""

from __future__ import annotations

import base64
import json


def b64(raw: str | bytes) -> str:
    return base64.urlsafe_b64encode(raw.encode() if isinstance(raw, str) else raw).decode()


def b64_json(value: object) -> str:
    return b64(json.dumps(value))


#: (what is wrong, cursor). The first is the reported one: ``["notadate", "x"]``.
MALFORMED_CURSORS: list[tuple[str, str]] = [
    ("sort value is not a date", "WyJub3RhZGF0ZSIsICJ4Il0="),
    ("not base64", "%%%not base64%%%"),
    ("base64 of bad padding", "WyJ"),
    ("not JSON", b64("hello, cursor")),
    ("not UTF-8", b64(b"\xff\xfe\x00[1]")),
    ("a JSON object", b64_json({"created_at": 1, "id": "x"})),
    ("one value", b64_json([1767225600000])),
    ("three values", b64_json([1767225600000, "a", "b"])),
    ("empty list", b64_json([])),
    ("a date string", b64_json(["2026-01-01T00:00:00Z", "a"])),
    ("a fraction", b64_json([1767225600000.5, "a"])),
    ("a boolean", b64_json([True, "a"])),
    ("null sort value", b64_json([None, "a"])),
    ("out of range", b64_json([10**30, "a"])),
    ("past year 9999", b64_json([253402300800000, "a"])),
    ("id not a string", b64_json([1767225600000, 7])),
    ("id a list", b64_json([1767225600000, ["a"]])),
    ("id empty", b64_json([1767225600000, ""])),
    ("id huge", b64_json([1767225600000, "x" * 3000])),
    ("nested deep", b64("[" * 5000 + "]" * 5000)),
    ("NaN", b64('[NaN, "a"]')),
    ("huge", "A" * 6000),
]


def nested_json(depth: int) -> bytes:
    """A JSON body nested ``depth`` levels deep (objects and arrays in turn), otherwise well-formed."""
    opening = "".join('{"a":' if level % 2 == 0 else "[" for level in range(depth))
    closing = "".join("}" if level % 2 == 0 else "]" for level in reversed(range(depth)))
    return (opening + "1" + closing).encode()


#: Depths reported (1,000 and 50,000 levels) and one just past any real request's nesting.
NESTING_DEPTHS = (1_000, 50_000)
