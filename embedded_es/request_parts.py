"""The parts of a request the gateway checks itself, and the answers it gives without the engine.

Each check mirrors the Elasticsearch rule it names; each refusal is Elasticsearch's error shape.
"""

from __future__ import annotations

from typing import Any

from . import dls, query_guard, routes, wire
from . import params as P
from .errors import EsError

# Characters Elasticsearch refuses in an index or alias name (MetadataCreateIndexService.validateIndexOrAliasName,
# Strings.INVALID_FILENAME_CHARS, plus ':' since 7.0).
_INVALID_NAME_CHARS = set('\\/*?"<>| ,#:')
_MAX_ID_BYTES = 512  # IndexRequest.validate: "id [...] is too long, must be no longer than 512 bytes"


def invalid_index_name(name: str) -> EsError | None:
    """Elasticsearch's refusal of ``name`` as a new index or alias name, or None when it is valid."""

    def refuse(why: str) -> EsError:
        return EsError(400, "invalid_index_name_exception", f"Invalid index name [{name}], {why}")

    if not name:
        return refuse("must not be empty")
    if any(c in _INVALID_NAME_CHARS for c in name):
        return refuse('must not contain the following characters [\\, /, *, ?, ", <, >, |,  , ,, #, :]')
    if name != name.lower():
        return refuse("must be lowercase")
    if name[0] in "_-+":
        return refuse("must not start with '_', '-', or '+'")
    if name in (".", ".."):
        return refuse("must not be '.' or '..'")
    if len(name.encode()) > 255:
        return refuse(f"index name is too long, ({len(name.encode())} > 255)")
    return None


UPDATE_KEYS = {"doc", "script", "upsert", "doc_as_upsert", "scripted_upsert", "detect_noop", "_source"}
MAPPING_KEYS = {
    "properties",
    "dynamic",
    "_source",
    "runtime",
    "dynamic_templates",
    "_meta",
    "date_detection",
    "numeric_detection",
    "dynamic_date_formats",
    "_routing",
}
ALIAS_OPTIONS = {"filter", "routing", "index_routing", "search_routing", "is_write_index", "is_hidden", "must_exist"}
BULK_META_KEYS = {
    "_index",
    "_id",
    "routing",
    "if_seq_no",
    "if_primary_term",
    "version",
    "version_type",
    "require_alias",
    "dynamic_templates",
    "retry_on_conflict",
    "_source",
}
MSEARCH_HEADER: dict[str, str] = {
    "index": "names",
    "indices": "names",
    "search_type": "search_type",
    "preference": "string",
    "routing": "string",
    "request_cache": "bool",
    "allow_no_indices": "bool",
    "ignore_unavailable": "bool",
    "expand_wildcards": "string",
    "allow_partial_search_results": "bool",
    "ccs_minimize_roundtrips": "bool",
}


def raise_if_invalid(name: str) -> None:
    err = invalid_index_name(name)
    if err is not None:
        raise err


def check_id(doc_id: Any) -> None:
    if not isinstance(doc_id, str) or not doc_id:
        raise EsError(
            400, "action_request_validation_exception", "Validation Failed: 1: an id must be a non-empty string;"
        )
    size = len(doc_id.encode())
    if size > _MAX_ID_BYTES:
        raise EsError(
            400,
            "action_request_validation_exception",
            f"Validation Failed: 1: id [{doc_id[:32]}...] is too long, must be no longer than 512 bytes but was: {size};",
        )


def lines(raw: bytes) -> list[bytes]:
    return wire.ndjson_lines(raw)


def object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise EsError(400, "x_content_parse_exception", f"{where}: expected a JSON object")
    return value


def only_keys(body: dict[str, Any], allowed: set[str], what: str) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise query_guard.parsing_error(f"[{what}] unknown field [{unknown[0]}]")


def names_of(spec: dict[str, Any], one: str, many: str) -> list[str]:
    out: list[str] = []
    for key in (one, many):
        value = spec.get(key)
        if value is None:
            continue
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise query_guard.parsing_error(f"[{key}] must be a string or an array of strings")
        out.extend(values)
    return out


def bulk_action(meta: Any, line: int) -> tuple[str, dict[str, Any]]:
    if not isinstance(meta, dict) or len(meta) != 1:
        raise EsError(
            400, "illegal_argument_exception", f"Malformed action/metadata line [{line}], expected a simple object"
        )
    ((op, spec),) = meta.items()
    if op not in ("index", "create", "update", "delete"):
        raise EsError(
            400,
            "illegal_argument_exception",
            f"Malformed action/metadata line [{line}], expected one of [create, delete, index, update] but found [{op}]",
        )
    if not isinstance(spec, dict):
        raise EsError(
            400, "illegal_argument_exception", f"Malformed action/metadata line [{line}], expected START_OBJECT"
        )
    unknown = sorted(set(spec) - BULK_META_KEYS)
    if unknown:
        raise EsError(
            400,
            "illegal_argument_exception",
            f"Action/metadata line [{line}] contains an unknown parameter [{unknown[0]}]",
        )
    return op, spec


def bulk_item_action(op: str, spec: dict[str, Any]) -> str:
    """Bulk items are authorised one by one (AuthorizationService.authorizeBulkItems)."""
    return {
        "index": routes.INDEX_OP_INDEX,
        "create": routes.INDEX_OP_CREATE,
        "update": routes.UPDATE,
        "delete": routes.DELETE,
    }[op]


def msearch_header(header: Any, line: int) -> dict[str, Any]:
    """An msearch item header, checked as MultiSearchRequest.readMultiLineFormat reads it."""
    if not isinstance(header, dict):
        raise EsError(400, "x_content_parse_exception", f"msearch line [{line}]: expected a JSON object")
    out: dict[str, Any] = {}
    for key, value in header.items():
        kind = MSEARCH_HEADER.get(key)
        if kind is None:
            raise EsError(400, "illegal_argument_exception", f"key [{key}] is not supported in the metadata section")
        if kind == "names":
            values = [value] if isinstance(value, str) else value
            if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
                raise EsError(400, "illegal_argument_exception", f"msearch line [{line}]: [{key}] must name indices")
            out["index"] = ",".join(values)
        elif kind == "bool":
            if not isinstance(value, bool):
                value = P.boolean(key, str(value)) == "true"
            out[key] = value
        elif kind == "search_type":
            out[key] = P.SEARCH["search_type"](key, str(value))
        else:
            out[key] = P.token(key, str(value))
    return out


def with_uri_query(body: dict[str, Any], params: P.Params) -> dict[str, Any]:
    """``?q=`` (and df, default_operator …) merged into the body as the query_string query it means."""
    if params.get("q") is None:
        return body
    if "query" in body:
        raise EsError(400, "illegal_argument_exception", "request [q] parameter and a body query cannot both be used")
    return {**body, "query": dls.query_string_from_params(dict(params.values))}


def update_under_dls() -> EsError:
    # TransportUpdateAction is refused when DLS/FLS applies
    # (x-pack/.../security/action/interceptor/UpdateRequestInterceptor.java).
    return EsError(
        400,
        "security_exception",
        "Can't execute an update request if field or document level security is enabled",
    )


def empty_search(*, count: bool) -> dict[str, Any]:
    shards = {"total": 0, "successful": 0, "skipped": 0, "failed": 0}
    if count:
        return {"count": 0, "_shards": shards}
    return {
        "took": 0,
        "timed_out": False,
        "_shards": shards,
        "hits": {"total": {"value": 0, "relation": "eq"}, "max_score": None, "hits": []},
    }


def empty_by_query(*, updated: bool) -> dict[str, Any]:
    result: dict[str, Any] = {
        "took": 0,
        "timed_out": False,
        "total": 0,
        "deleted": 0,
        "batches": 0,
        "version_conflicts": 0,
        "noops": 0,
        "retries": {"bulk": 0, "search": 0},
        "throttled_millis": 0,
        "requests_per_second": -1.0,
        "throttled_until_millis": 0,
        "failures": [],
    }
    if updated:
        result["updated"] = 0
    return result


def empty_admin(action: str) -> dict[str, Any]:
    shards = {"total": 0, "successful": 0, "failed": 0}
    if action == routes.REFRESH:
        return {"_shards": shards}
    if action == routes.INDEX_STATS:
        return {"_shards": shards, "_all": {"primaries": {}, "total": {}}, "indices": {}}
    return {}
