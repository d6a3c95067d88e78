"""URL parameters the gateway understands, per endpoint, and how each value is checked.

For every principal but the superuser the gateway forwards no parameter it was not told about
here: an unknown name is refused as Elasticsearch refuses it
(``request [/idx/_search] contains unrecognized parameter: [foo]``, RestController /
BaseRestHandler.unrecognized), a value of the wrong kind is a 400, and the query string sent on
to the engine is generated from the checked values, never copied.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl

from .errors import EsError, illegal_argument

Check = Callable[[str, str], str]

_TIME = re.compile(r"^(-1|0|\d+(nanos|micros|ms|s|m|h|d)?)$")
_TOKEN = re.compile(r"^[A-Za-z0-9_.:@*\-]{1,256}$")
_FIELDS = re.compile(r"^[A-Za-z0-9_.@*\-]+(,[A-Za-z0-9_.@*\-]+)*$")
_SORT = re.compile(r"^[A-Za-z0-9_.@\-]+(:(asc|desc))?(,[A-Za-z0-9_.@\-]+(:(asc|desc))?)*$")


def _bad(name: str, value: str, expected: str) -> EsError:
    return illegal_argument(f"Failed to parse value [{value}] of parameter [{name}]: expected {expected}")


def boolean(name: str, value: str) -> str:
    # Booleans.parseBoolean: only "true", "false" and the empty string (true) are booleans.
    if value in ("", "true"):
        return "true"
    if value == "false":
        return "false"
    raise illegal_argument(f"Failed to parse value [{value}] as only [true] or [false] are allowed.")


def integer(name: str, value: str) -> str:
    if not re.fullmatch(r"-?\d{1,10}", value):
        raise _bad(name, value, "an integer")
    return str(int(value))


def time_value(name: str, value: str) -> str:
    if not _TIME.match(value):
        raise illegal_argument(
            f"failed to parse setting [{name}] with value [{value}] as a time value: unit is missing or unrecognized"
        )
    return value


def token(name: str, value: str) -> str:
    if not _TOKEN.match(value):
        raise _bad(name, value, "a simple name")
    return value


def fields(name: str, value: str) -> str:
    if not _FIELDS.match(value):
        raise _bad(name, value, "a comma-separated list of field names")
    return value


def text(name: str, value: str) -> str:
    if len(value) > 10_000 or any(ord(c) < 32 and c not in "\t" for c in value):
        raise _bad(name, value[:64], "printable text of at most 10,000 characters")
    return value


def sort(name: str, value: str) -> str:
    if not _SORT.match(value):
        raise _bad(name, value, "field[:asc|desc] pairs")
    return value


def source(name: str, value: str) -> str:
    if value in ("", "true", "false"):
        return boolean(name, value)
    return fields(name, value)


def total_hits(name: str, value: str) -> str:
    return boolean(name, value) if value in ("", "true", "false") else integer(name, value)


def one_of(*allowed: str) -> Check:
    def check(name: str, value: str) -> str:
        if value not in allowed:
            raise illegal_argument(f"[{name}] must be one of [{', '.join(allowed)}], not [{value}]")
        return value

    return check


def list_of(*allowed: str) -> Check:
    def check(name: str, value: str) -> str:
        parts = value.split(",")
        if not parts or any(p not in allowed for p in parts):
            raise illegal_argument(f"[{name}] takes a comma-separated list of [{', '.join(allowed)}], not [{value}]")
        return value

    return check


refresh = one_of("", "true", "false", "wait_for")

# Accepted on every endpoint (the REST layer's own parameters).
COMMON: dict[str, Check] = {"pretty": boolean, "human": boolean, "error_trace": boolean, "filter_path": fields}
# Resolved by the gateway itself: it expands index expressions before the engine sees them.
INDICES_OPTIONS: dict[str, Check] = {
    "ignore_unavailable": boolean,
    "allow_no_indices": boolean,
    "expand_wildcards": list_of("open", "closed", "hidden", "none", "all"),
}
# The URI search (RestSearchAction.parseSearchSource): turned into a query_string query in the body.
URI_QUERY: dict[str, Check] = {
    "q": text,
    "df": fields,
    "default_operator": one_of("AND", "OR", "and", "or"),
    "analyzer": token,
    "analyze_wildcard": boolean,
    "lenient": boolean,
}
SOURCE: dict[str, Check] = {
    "_source": source,
    "_source_includes": fields,
    "_source_excludes": fields,
    "stored_fields": fields,
}
ROUTING: dict[str, Check] = {"routing": token, "preference": token}
SEARCH: dict[str, Check] = {
    **COMMON,
    **INDICES_OPTIONS,
    **URI_QUERY,
    **SOURCE,
    **ROUTING,
    "size": integer,
    "from": integer,
    "sort": sort,
    "track_total_hits": total_hits,
    "track_scores": boolean,
    "timeout": time_value,
    "terminate_after": integer,
    "scroll": time_value,
    "search_type": one_of("query_then_fetch", "dfs_query_then_fetch"),
    "request_cache": boolean,
    "typed_keys": boolean,
    "rest_total_hits_as_int": boolean,
    "seq_no_primary_term": boolean,
    "version": boolean,
    "explain": boolean,
    "docvalue_fields": fields,
    "batched_reduce_size": integer,
    "max_concurrent_shard_requests": integer,
    "pre_filter_shard_size": integer,
    "ccs_minimize_roundtrips": boolean,
    "allow_partial_search_results": boolean,
}
COUNT: dict[str, Check] = {
    **COMMON,
    **INDICES_OPTIONS,
    **URI_QUERY,
    **ROUTING,
    "min_score": integer,
    "terminate_after": integer,
}
MSEARCH: dict[str, Check] = {
    **COMMON,
    "search_type": SEARCH["search_type"],
    "max_concurrent_searches": integer,
    "max_concurrent_shard_requests": integer,
    "pre_filter_shard_size": integer,
    "typed_keys": boolean,
    "rest_total_hits_as_int": boolean,
    "ccs_minimize_roundtrips": boolean,
}
GET: dict[str, Check] = {
    **COMMON,
    **SOURCE,
    **ROUTING,
    "realtime": boolean,
    "refresh": boolean,
    "version": integer,
    "version_type": one_of("internal", "external", "external_gte"),
}
MGET: dict[str, Check] = {**COMMON, **SOURCE, **ROUTING, "realtime": boolean, "refresh": boolean}
EXPLAIN: dict[str, Check] = {**COMMON, **URI_QUERY, **SOURCE, **ROUTING}
_WRITE: dict[str, Check] = {
    **COMMON,
    "refresh": refresh,
    "routing": token,
    "timeout": time_value,
    "wait_for_active_shards": token,
    "require_alias": boolean,
}
INDEX_DOC: dict[str, Check] = {
    **_WRITE,
    "version": integer,
    "version_type": one_of("internal", "external", "external_gte"),
    "if_seq_no": integer,
    "if_primary_term": integer,
    "op_type": one_of("index", "create"),
}
DELETE_DOC: dict[str, Check] = {
    **_WRITE,
    "version": integer,
    "version_type": one_of("internal", "external", "external_gte"),
    "if_seq_no": integer,
    "if_primary_term": integer,
}
UPDATE_DOC: dict[str, Check] = {
    **_WRITE,
    **{k: v for k, v in SOURCE.items() if k != "stored_fields"},
    "retry_on_conflict": integer,
    "if_seq_no": integer,
    "if_primary_term": integer,
    "lang": token,
}
BULK: dict[str, Check] = {
    **_WRITE,
    **{k: v for k, v in SOURCE.items() if k != "stored_fields"},
    "require_data_stream": boolean,
}
BY_QUERY: dict[str, Check] = {
    **COMMON,
    **INDICES_OPTIONS,
    **URI_QUERY,
    **ROUTING,
    "conflicts": one_of("abort", "proceed"),
    "refresh": boolean,
    "max_docs": integer,
    "scroll_size": integer,
    "timeout": time_value,
    "scroll": time_value,
    "search_timeout": time_value,
    "requests_per_second": integer,
    "slices": integer,
    "wait_for_active_shards": token,
    # Only the synchronous form: wait_for_completion=false answers with a task id, and the tasks
    # API (where its result would be read) is not served to API keys.
    "wait_for_completion": one_of("true", ""),
}
REINDEX: dict[str, Check] = {
    **COMMON,
    "refresh": boolean,
    "timeout": time_value,
    "scroll": time_value,
    "requests_per_second": integer,
    "slices": integer,
    "max_docs": integer,
    "wait_for_active_shards": token,
    "wait_for_completion": one_of("true", ""),
}
SCROLL: dict[str, Check] = {**COMMON, "scroll": time_value, "scroll_id": text, "rest_total_hits_as_int": boolean}
OPEN_PIT: dict[str, Check] = {
    **COMMON,
    **INDICES_OPTIONS,
    **ROUTING,
    "keep_alive": time_value,
    "allow_partial_search_results": boolean,
}
FIELD_CAPS: dict[str, Check] = {
    **COMMON,
    **INDICES_OPTIONS,
    "fields": fields,
    "include_unmapped": boolean,
    "include_empty_fields": boolean,
    "filters": token,
    "types": token,
}
INDEX_ADMIN: dict[str, Check] = {
    **COMMON,
    **INDICES_OPTIONS,
    "timeout": time_value,
    "master_timeout": time_value,
    "wait_for_active_shards": token,
}
GET_INDEX_META: dict[str, Check] = {
    **COMMON,
    **INDICES_OPTIONS,
    "local": boolean,
    "master_timeout": time_value,
    "include_defaults": boolean,
    "flat_settings": boolean,
}
PUT_MAPPING: dict[str, Check] = {**INDEX_ADMIN, "write_index_only": boolean}
PUT_SETTINGS: dict[str, Check] = {**INDEX_ADMIN, "preserve_existing": boolean, "flat_settings": boolean}
STATS: dict[str, Check] = {**COMMON, **INDICES_OPTIONS, "level": one_of("cluster", "indices", "shards")}
CLUSTER: dict[str, Check] = {
    **COMMON,
    "timeout": time_value,
    "master_timeout": time_value,
    "local": boolean,
    "level": one_of("cluster", "indices", "shards"),
    "wait_for_status": one_of("green", "yellow", "red"),
    "wait_for_active_shards": token,
    "wait_for_nodes": token,
    "wait_for_no_relocating_shards": boolean,
    "wait_for_no_initializing_shards": boolean,
    "wait_for_events": one_of("immediate", "urgent", "high", "normal", "low", "languid"),
}
RESOLVE: dict[str, Check] = {**COMMON, "expand_wildcards": INDICES_OPTIONS["expand_wildcards"]}
TERMS_ENUM: dict[str, Check] = dict(COMMON)
VALIDATE: dict[str, Check] = {
    **COMMON,
    **INDICES_OPTIONS,
    **URI_QUERY,
    "explain": boolean,
    "rewrite": boolean,
    "all_shards": boolean,
}
ALIASES: dict[str, Check] = {**COMMON, "timeout": time_value, "master_timeout": time_value}
NONE: dict[str, Check] = dict(COMMON)


@dataclass(frozen=True)
class Params:
    """A request's checked URL parameters."""

    values: Mapping[str, str]

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.values.get(name, default)

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.values.get(name)
        return default if value is None else value == "true"

    def without(self, names: Mapping[str, Check] | tuple[str, ...]) -> dict[str, str]:
        return {k: v for k, v in self.values.items() if k not in names}


def parse(query_string: str, allowed: Mapping[str, Check], path: str) -> Params:
    """Check every parameter of ``query_string`` against ``allowed`` (the last of a repeated name wins, as in ES)."""
    try:
        pairs = parse_qsl(query_string, keep_blank_values=True, strict_parsing=False, errors="strict")
    except UnicodeDecodeError:
        raise illegal_argument(f"request [{path}] has a query string that is not valid UTF-8") from None
    values: dict[str, str] = {}
    for name, value in pairs:
        values[name] = value
    unknown = [n for n in values if n not in allowed]
    if unknown:
        listed = ", ".join(f"[{n}]" for n in unknown)
        noun = "parameter" if len(unknown) == 1 else "parameters"
        raise illegal_argument(f"request [{path}] contains unrecognized {noun}: {listed}")
    return Params({name: allowed[name](name, value) for name, value in values.items()})
