"""What the gateway accepts on the wire: bounded bodies, one decompression, strict JSON.

Every body a principal sends is read here, once, under limits, and parsed into plain Python
values; the gateway re-serialises those values for the engine, so the engine never parses bytes
the gateway did not understand itself (no parser differentials: duplicate keys, NaN, odd
encodings).

Limits (each an environment variable of the embedded server):

- ``EMBEDDED_ES_MAX_CONTENT_LENGTH`` (bytes, default 32 MiB): the largest body, before and after
  decompression. Elasticsearch's ``http.max_content_length`` defaults to 100 MB
  (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/modules-network.html#http-settings);
  the embedded server keeps one development machine's memory safe with less, and a bulk request
  of the application (200 memories with three vectors each) is about 7 MB.
- ``EMBEDDED_ES_MAX_JSON_DEPTH`` (default 100): how deeply objects and arrays may nest.
  Elasticsearch's parser (Jackson's StreamReadConstraints) stops at 1,000; a request deeper than
  100 is no query the application or a person writes, and a lower bound keeps every recursive
  walk in the gateway far from Python's recursion limit.
"""

from __future__ import annotations

import json
import os
import zlib
from typing import Any

from .errors import EsError

DEFAULT_MAX_CONTENT_LENGTH = 32 * 1024 * 1024
DEFAULT_MAX_JSON_DEPTH = 100
_CHUNK = 64 * 1024


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be positive, not {value}")
    return value


def max_content_length() -> int:
    return _env_int("EMBEDDED_ES_MAX_CONTENT_LENGTH", DEFAULT_MAX_CONTENT_LENGTH)


def max_json_depth() -> int:
    return _env_int("EMBEDDED_ES_MAX_JSON_DEPTH", DEFAULT_MAX_JSON_DEPTH)


def too_long(limit: int) -> EsError:
    # Netty's aggregator answers 413 when http.max_content_length is exceeded (Netty4HttpAggregator).
    return EsError(
        413,
        "content_too_long_exception",
        f"request body is larger than the embedded server's limit of [{limit}] bytes (EMBEDDED_ES_MAX_CONTENT_LENGTH)",
    )


def decode_body(raw: bytes, content_encoding: str | None, *, limit: int) -> bytes:
    """The body as sent, decompressed once (gzip or deflate) and never past ``limit`` bytes."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise EsError(415, "illegal_argument_exception", f"unsupported Content-Encoding [{content_encoding}]")
    if not raw:
        return raw
    # wbits: 16+MAX_WBITS reads gzip; for deflate, zlib-wrapped as HTTP says (and as Elasticsearch's Netty does).
    wbits = 16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    data = raw
    try:
        while data:
            out += inflater.decompress(data, limit + 1 - len(out))
            if len(out) > limit:
                raise too_long(limit)
            data = inflater.unconsumed_tail
        if not inflater.eof:
            raise EsError(400, "parse_exception", f"the {encoding} body is truncated")
        if inflater.unused_data:
            raise EsError(400, "parse_exception", f"the {encoding} body has trailing data")
    except zlib.error as exc:
        raise EsError(400, "parse_exception", f"the body is not valid {encoding}: {exc}") from None
    return bytes(out)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            # Elasticsearch's JSON parser has strict duplicate detection on (XContent JsonXContent).
            raise EsError(400, "x_content_parse_exception", f"Duplicate field '{key}'")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise EsError(400, "x_content_parse_exception", f"Non-standard token '{name}': not a JSON value")


def _depth_ok(value: Any, limit: int) -> None:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise EsError(
                400,
                "x_content_parse_exception",
                f"Document nesting depth exceeds the maximum allowed ({limit}, EMBEDDED_ES_MAX_JSON_DEPTH)",
            )
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, dict | list))


def parse_json(raw: bytes | str, *, where: str = "") -> Any:
    """One JSON value, strictly: no duplicate keys, no NaN/Infinity, bounded depth, UTF-8."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise EsError(400, "x_content_parse_exception", f"{where}invalid UTF-8: {exc.reason}") from None
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise EsError(400, "x_content_parse_exception", f"{where}[{exc.lineno}:{exc.colno}] {exc.msg}") from None
    except RecursionError:
        raise EsError(
            400, "x_content_parse_exception", f"{where}Document nesting depth exceeds the maximum allowed"
        ) from None
    _depth_ok(value, max_json_depth())
    return value


def check_document(raw: bytes, *, where: str) -> None:
    """A document to be stored as sent: exactly one JSON object, in UTF-8 (C-speed, no hooks)."""
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EsError(400, "x_content_parse_exception", f"{where}: not one JSON object: {exc}") from None
    except RecursionError:
        raise EsError(
            400, "x_content_parse_exception", f"{where}: Document nesting depth exceeds the maximum allowed"
        ) from None
    if not isinstance(value, dict):
        raise EsError(400, "x_content_parse_exception", f"{where}: expected a JSON object")


def parse_object(raw: bytes, *, what: str = "request body") -> dict[str, Any] | None:
    """A JSON object body, or None when the body is empty."""
    if not raw.strip():
        return None
    value = parse_json(raw)
    if not isinstance(value, dict):
        raise EsError(400, "parse_exception", f"the {what} must be a JSON object")
    return value


def ndjson_lines(raw: bytes) -> list[bytes]:
    """The non-empty lines of an NDJSON body (bulk, msearch)."""
    return [line for line in raw.split(b"\n") if line.strip()]


def dumps(value: Any) -> bytes:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except ValueError:
        # A number too large for a double (1e999) parses as infinity; Elasticsearch refuses it, and so
        # does the re-serialisation — checked here, once, rather than by a callback for every number.
        raise EsError(400, "x_content_parse_exception", "Numeric value out of range of double") from None


def ndjson(values: list[Any]) -> bytes:
    return b"".join(dumps(v) + b"\n" for v in values)
