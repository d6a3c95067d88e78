"""Maps an HTTP request to the Elasticsearch action it performs and the indices it names.

The action names are Elasticsearch's transport action names, because privileges
are defined over them (see privileges.py). A request the table does not know is
``Route.kind == "unknown"``: only the superuser may send it (it is forwarded to
the engine untouched); any other principal is refused, never waved through.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

SEARCH = "indices:data/read/search"
SCROLL = "indices:data/read/scroll"
CLEAR_SCROLL = "indices:data/read/scroll/clear"
GET = "indices:data/read/get"
MGET = "indices:data/read/mget"
MSEARCH = "indices:data/read/msearch"
EXPLAIN = "indices:data/read/explain"
FIELD_CAPS = "indices:data/read/field_caps"
OPEN_PIT = "indices:data/read/open_point_in_time"
CLOSE_PIT = "indices:data/read/close_point_in_time"
TERMS_ENUM = "indices:data/read/xpack/termsenum/list"
INDEX_OP_INDEX = "indices:data/write/index:op_type/index"
INDEX_OP_CREATE = "indices:data/write/index:op_type/create"
UPDATE = "indices:data/write/update"
DELETE = "indices:data/write/delete"
BULK = "indices:data/write/bulk"
DELETE_BY_QUERY = "indices:data/write/delete/byquery"
UPDATE_BY_QUERY = "indices:data/write/update/byquery"
REINDEX = "indices:data/write/reindex"
CREATE_INDEX = "indices:admin/create"
DELETE_INDEX = "indices:admin/delete"
GET_INDEX = "indices:admin/get"
REFRESH = "indices:admin/refresh"
PUT_MAPPING = "indices:admin/mapping/put"
GET_MAPPING = "indices:admin/mappings/get"
GET_SETTINGS = "indices:monitor/settings/get"
PUT_SETTINGS = "indices:admin/settings/update"
ALIASES = "indices:admin/aliases"
GET_ALIASES = "indices:admin/aliases/get"
RESOLVE_INDEX = "indices:admin/resolve/index"
VALIDATE_QUERY = "indices:admin/validate/query"
INDEX_STATS = "indices:monitor/stats"

# Actions that read documents and therefore get the caller's DLS applied.
DLS_READ_ACTIONS = {
    SEARCH,
    GET,
    MGET,
    MSEARCH,
    EXPLAIN,
    DELETE_BY_QUERY,
    UPDATE_BY_QUERY,
    REINDEX,
    OPEN_PIT,
    TERMS_ENUM,
    VALIDATE_QUERY,
}


@dataclass(frozen=True)
class Route:
    kind: str  # "local", "cluster", "index", "multi" (bulk/msearch/mget/aliases/reindex), "unknown"
    action: str | None = None
    index: str | None = None  # comma-separated index expression from the path
    doc_id: str | None = None
    handler: str | None = None  # name of the gateway's specialised handler


def _segments(raw_path: str) -> list[str]:
    return [unquote(s) for s in raw_path.split("?", 1)[0].split("/") if s]


_LOCAL = {
    ("_security", "_authenticate"): "authenticate",
    ("_security", "api_key"): "api_key",
    ("_license",): "license",
    ("_license", "start_trial"): "license_start_trial",
    ("_license", "basic_status"): "license_basic_status",
    ("_license", "trial_status"): "license_trial_status",
    ("_xpack",): "xpack",
    ("_ilm", "policy"): "ilm_policy",
    ("_ilm", "status"): "ilm_status",
}

_CLUSTER = {
    ("GET", ()): "cluster:monitor/main",
    ("HEAD", ()): "cluster:monitor/main",
    ("GET", ("_cluster", "health")): "cluster:monitor/health",
}

# (method, sub-endpoint after the index) -> (action, handler)
_INDEX_ENDPOINTS: dict[tuple[str, str], tuple[str, str]] = {
    ("GET", "_search"): (SEARCH, "search"),
    ("POST", "_search"): (SEARCH, "search"),
    ("GET", "_count"): (SEARCH, "count"),
    ("POST", "_count"): (SEARCH, "count"),
    ("GET", "_msearch"): (MSEARCH, "msearch"),
    ("POST", "_msearch"): (MSEARCH, "msearch"),
    ("GET", "_mget"): (MGET, "mget"),
    ("POST", "_mget"): (MGET, "mget"),
    ("POST", "_bulk"): (BULK, "bulk"),
    ("PUT", "_bulk"): (BULK, "bulk"),
    ("POST", "_delete_by_query"): (DELETE_BY_QUERY, "by_query"),
    ("POST", "_update_by_query"): (UPDATE_BY_QUERY, "by_query"),
    ("POST", "_refresh"): (REFRESH, "forward"),
    ("GET", "_refresh"): (REFRESH, "forward"),
    ("GET", "_mapping"): (GET_MAPPING, "forward"),
    ("PUT", "_mapping"): (PUT_MAPPING, "forward"),
    ("POST", "_mapping"): (PUT_MAPPING, "forward"),
    ("GET", "_settings"): (GET_SETTINGS, "forward"),
    ("PUT", "_settings"): (PUT_SETTINGS, "forward"),
    ("GET", "_alias"): (GET_ALIASES, "forward"),
    ("GET", "_aliases"): (GET_ALIASES, "forward"),
    ("POST", "_pit"): (OPEN_PIT, "open_pit"),
    ("GET", "_field_caps"): (FIELD_CAPS, "forward"),
    ("POST", "_field_caps"): (FIELD_CAPS, "forward"),
    ("GET", "_terms_enum"): (TERMS_ENUM, "terms_enum"),
    ("POST", "_terms_enum"): (TERMS_ENUM, "terms_enum"),
    ("GET", "_stats"): (INDEX_STATS, "forward"),
}


def classify(method: str, raw_path: str) -> Route:
    segs = _segments(raw_path)
    method = method.upper()
    for length in (2, 1):
        handler = _LOCAL.get(tuple(segs[:length])) if len(segs) >= length else None
        if handler and (length == len(segs) or handler in ("api_key", "ilm_policy")):
            return Route("local", handler=handler)
    cluster_action = _CLUSTER.get((method, tuple(segs)))
    if cluster_action:
        return Route("cluster", action=cluster_action, handler="forward")
    if not segs:
        return Route("unknown")
    head = segs[0]
    if head.startswith("_"):
        return _classify_top_level(method, segs)
    index = head
    if len(segs) == 1:
        action = {"PUT": CREATE_INDEX, "DELETE": DELETE_INDEX, "GET": GET_INDEX, "HEAD": GET_INDEX}.get(method)
        return Route("index", action=action, index=index, handler="forward") if action else Route("unknown")
    sub = segs[1]
    if sub in ("_doc", "_create", "_update", "_source", "_explain") and len(segs) == 3:
        return _classify_document(method, index, sub, segs[2])
    if sub == "_doc" and len(segs) == 2 and method == "POST":
        return Route("index", action=INDEX_OP_INDEX, index=index, handler="index_doc")
    if sub == "_search" and len(segs) == 3 and segs[2] == "template":
        return Route("unknown")
    if sub in ("_alias", "_aliases") and len(segs) == 3 and method in ("PUT", "POST", "DELETE"):
        return Route("index", action=ALIASES, index=f"{index},{segs[2]}", handler="forward")
    if sub in ("_alias", "_aliases") and len(segs) == 3 and method in ("GET", "HEAD"):
        return Route("index", action=GET_ALIASES, index=index, handler="forward")
    if sub == "_validate" and len(segs) == 3 and segs[2] == "query":
        return Route("index", action=VALIDATE_QUERY, index=index, handler="dls_refused")
    if len(segs) == 2:
        found = _INDEX_ENDPOINTS.get((method, sub))
        if found:
            return Route("index", action=found[0], index=index, handler=found[1])
    return Route("unknown")


def _classify_document(method: str, index: str, sub: str, doc_id: str) -> Route:
    if sub == "_doc":
        if method in ("PUT", "POST"):
            return Route("index", action=INDEX_OP_INDEX, index=index, doc_id=doc_id, handler="index_doc")
        if method in ("GET", "HEAD"):
            return Route("index", action=GET, index=index, doc_id=doc_id, handler="get")
        if method == "DELETE":
            return Route("index", action=DELETE, index=index, doc_id=doc_id, handler="forward")
    if sub == "_create" and method in ("PUT", "POST"):
        return Route("index", action=INDEX_OP_CREATE, index=index, doc_id=doc_id, handler="forward")
    if sub == "_update" and method == "POST":
        return Route("index", action=UPDATE, index=index, doc_id=doc_id, handler="update")
    if sub == "_source" and method in ("GET", "HEAD"):
        return Route("index", action=GET, index=index, doc_id=doc_id, handler="get")
    if sub == "_explain" and method in ("GET", "POST"):
        return Route("index", action=EXPLAIN, index=index, doc_id=doc_id, handler="explain")
    return Route("unknown")


def _classify_top_level(method: str, segs: list[str]) -> Route:
    head = segs[0]
    rest = segs[1:]
    if head == "_search" and rest and rest[0] == "scroll":
        if method == "DELETE":
            return Route("multi", action=CLEAR_SCROLL, handler="clear_scroll")
        return Route("multi", action=SCROLL, handler="scroll")
    if head == "_pit" and not rest and method == "DELETE":
        return Route("multi", action=CLOSE_PIT, handler="close_pit")
    if head in ("_search", "_count") and not rest and method in ("GET", "POST"):
        # No index in the path: a search over every index (or a PIT's indices).
        return Route("index", action=SEARCH, index="_all", handler="search" if head == "_search" else "count")
    if not rest:
        simple = {
            ("_msearch", "GET"): (MSEARCH, "msearch"),
            ("_msearch", "POST"): (MSEARCH, "msearch"),
            ("_mget", "GET"): (MGET, "mget"),
            ("_mget", "POST"): (MGET, "mget"),
            ("_bulk", "POST"): (BULK, "bulk"),
            ("_bulk", "PUT"): (BULK, "bulk"),
            ("_aliases", "POST"): (ALIASES, "aliases"),
            ("_reindex", "POST"): (REINDEX, "reindex"),
            ("_refresh", "POST"): (REFRESH, "forward_all"),
            ("_refresh", "GET"): (REFRESH, "forward_all"),
        }.get((head, method))
        if simple:
            return Route("multi", action=simple[0], handler=simple[1])
    if head == "_index_template" and len(rest) == 1:
        action = {
            "PUT": "indices:admin/index_template/put",
            "POST": "indices:admin/index_template/put",
            "GET": "indices:admin/index_template/get",
            "HEAD": "indices:admin/index_template/get",
            "DELETE": "indices:admin/index_template/delete",
        }.get(method)
        if action:
            return Route("cluster", action=action, handler="forward")
    if head == "_resolve" and len(rest) == 2 and rest[0] == "index" and method == "GET":
        return Route("index", action=RESOLVE_INDEX, index=rest[1], handler="forward")
    return Route("unknown")
