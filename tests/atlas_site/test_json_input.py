"""The one JSON reader: depth measured on the text (brackets inside strings are text), strict parsing,
and every refusal a ValidationFailed naming the field — never a RecursionError."""

from __future__ import annotations

import pytest

from atlas_site.errors import ValidationFailed
from atlas_site.json_input import MAX_JSON_DEPTH, json_depth, json_parse


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ('"[[[{{{"', 0),
        ('{"a": "]]]", "b": [1, "\\"[[["]}', 2),
        ('{"a": "\\\\", "b": [[1]]}', 3),
        ("[" * 5 + "]" * 5, 5),
        ('["unterminated [[[[', 1),
        ("[" * 50_000, 50_000),
    ],
)
def test_depth_counts_nesting_and_skips_strings(text: str, depth: int) -> None:
    assert json_depth(text) == depth


def test_a_body_at_the_limit_parses_and_one_past_it_is_refused() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json_parse(at_limit) is not None
    with pytest.raises(ValidationFailed) as caught:
        json_parse("[" + at_limit + "]")
    assert (caught.value.field, caught.value.message) == ("body", "the request body is nested deeper than 32 levels")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\xff{}", "the request body is not UTF-8 text"),
        (
            b"{not json",
            "the request body is not JSON (Expecting property name enclosed in double quotes at line 1 column 2)",
        ),
        (b'{"a": Infinity}', "the request body is not JSON (Infinity is not a JSON number)"),
        (b"9" * 5000, "the request body is not JSON (a number with too many digits)"),
    ],
)
def test_what_is_not_json_is_a_validation_error_naming_the_body(raw: bytes, message: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        json_parse(raw)
    assert (caught.value.field, caught.value.message) == ("body", message)
