"""What the gateway accepts on the wire (embedded_es/wire.py, params.py, filter_path.py), without a server.

Rules relied on:
- Elasticsearch's JSON parser refuses duplicate keys (XContent's JsonXContent enables
  ``STRICT_DUPLICATE_DETECTION``: "Duplicate field 'x'"), and NaN/Infinity are not JSON.
- An unknown URL parameter is a 400 ``illegal_argument_exception``
  "request [/i/_search] contains unrecognized parameter: [x]" (BaseRestHandler.unrecognized).
- Index names: MetadataCreateIndexService.validateIndexOrAliasName (no ``\\ / * ? " < > | , # :`` or
  space, lowercase, no leading ``_ - +``, not ``.``/``..``, at most 255 bytes).
- ``filter_path``: https://www.elastic.co/guide/en/elasticsearch/reference/8.15/common-options.html#common-options-response-filtering
"""

from __future__ import annotations

import gzip
import zlib

import pytest

from embedded_es import filter_path, wire
from embedded_es import params as P
from embedded_es.errors import EsError
from embedded_es.request_parts import invalid_index_name


def test_gzip_and_deflate_bodies_are_decompressed_once() -> None:
    body = b'{"query":{"match_all":{}}}'
    assert wire.decode_body(gzip.compress(body), "gzip", limit=1000) == body
    assert wire.decode_body(zlib.compress(body), "deflate", limit=1000) == body
    assert wire.decode_body(body, None, limit=1000) == body


def test_a_gzip_bomb_stops_at_the_limit() -> None:
    bomb = gzip.compress(b" " * (50 * 1024 * 1024))
    assert len(bomb) < 100_000
    with pytest.raises(EsError) as info:
        wire.decode_body(bomb, "gzip", limit=1024 * 1024)
    assert (info.value.status, info.value.error_type) == (413, "content_too_long_exception")


@pytest.mark.parametrize(
    ("raw", "encoding", "status"),
    [
        (b"not gzip at all", "gzip", 400),
        (gzip.compress(b"{}")[:-6], "gzip", 400),
        (gzip.compress(b"{}") + b"junk", "gzip", 400),
        (b"{}", "br", 415),
    ],
    # Named: gzip stamps the time into its header, and pytest-xdist's workers must collect the same ids.
    ids=["not gzip", "truncated gzip", "gzip then junk", "brotli"],
)
def test_bad_encodings_are_client_errors(raw: bytes, encoding: str, status: int) -> None:
    with pytest.raises(EsError) as info:
        wire.decode_body(raw, encoding, limit=1000)
    assert info.value.status == status


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"query": {}, "query": {}}', "Duplicate field 'query'"),
        (b'{"size": NaN}', "Non-standard token 'NaN'"),
        (b'{"size": Infinity}', "Non-standard token 'Infinity'"),
        (b"[" * 101 + b"]" * 101, "nesting depth"),
        (b"[" * 100_000, "nesting depth"),
        (b'{"a": "\xff"}', "invalid UTF-8"),
        (b'{"a": ', "Expecting value"),
    ],
)
def test_strict_json(raw: bytes, reason: str) -> None:
    with pytest.raises(EsError) as info:
        wire.parse_json(raw)
    assert info.value.status == 400
    assert info.value.error_type == "x_content_parse_exception"
    assert reason in info.value.reason


def test_json_at_the_depth_limit_parses() -> None:
    assert wire.parse_json(b"[" * 100 + b"]" * 100) is not None


def test_unknown_parameters_are_named_as_elasticsearch_names_them() -> None:
    with pytest.raises(EsError) as info:
        P.parse("size=1&foo=bar&baz", P.SEARCH, "/i/_search")
    assert info.value.reason == "request [/i/_search] contains unrecognized parameters: [foo], [baz]"
    with pytest.raises(EsError) as one:
        P.parse("foo=1", P.SEARCH, "/i/_search")
    assert one.value.reason == "request [/i/_search] contains unrecognized parameter: [foo]"


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("size=ten", "size"),
        ("scroll=1fortnight", "scroll"),
        ("refresh=soon", "refresh"),
        ("_source_includes=a b", "_source_includes"),
    ],
)
def test_parameter_values_are_checked(query: str, name: str) -> None:
    allowed = {**P.SEARCH, "refresh": P.refresh}
    with pytest.raises(EsError) as info:
        P.parse(query, allowed, "/i/_search")
    assert info.value.status == 400
    assert name in info.value.reason


def test_checked_parameters_are_normalised() -> None:
    parsed = P.parse("track_scores&size=007&size=3&q=a%26b%3Dc", P.SEARCH, "/i/_search")
    assert dict(parsed.values) == {"track_scores": "true", "size": "3", "q": "a&b=c"}


@pytest.mark.parametrize(
    "name",
    [
        "Upper",
        "_hidden",
        "-dash",
        "+plus",
        ".",
        "..",
        "a/b",
        "a?b",
        "a*b",
        "a b",
        "a,b",
        "a#b",
        "a:b",
        'a"b',
        "a<b",
        "a|b",
        "x" * 256,
    ],
)
def test_index_names_elasticsearch_refuses(name: str) -> None:
    err = invalid_index_name(name)
    assert err is not None and err.error_type == "invalid_index_name_exception"


@pytest.mark.parametrize("name", ["atlas-semantic-v2", ".hidden-ok", "a.b_c-1", "x" * 255])
def test_index_names_elasticsearch_accepts(name: str) -> None:
    assert invalid_index_name(name) is None


RESPONSE = {
    "took": 3,
    "hits": {
        "total": {"value": 2},
        "hits": [{"_id": "a", "_score": 1.0, "_source": {"t": 1}}, {"_id": "b", "_score": 0.5}],
    },
}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("took", {"took": 3}),
        ("hits.hits._id", {"hits": {"hits": [{"_id": "a"}, {"_id": "b"}]}}),
        ("hits.*.value", {"hits": {"total": {"value": 2}}}),
        ("**._id", {"hits": {"hits": [{"_id": "a"}, {"_id": "b"}]}}),
        ("-hits", {"took": 3}),
        ("hits.hits,-hits.hits._source,-hits.hits._score", {"hits": {"hits": [{"_id": "a"}, {"_id": "b"}]}}),
        ("nothing.here", {}),
    ],
)
def test_filter_path(spec: str, expected: dict) -> None:
    assert filter_path.apply(RESPONSE, spec) == expected
