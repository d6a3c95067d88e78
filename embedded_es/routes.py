"""Maps an HTTP request to the Elasticsearch action it performs and the indices it names.

The action names are Elasticsearch's transport action names, because privileges
are defined over them (see privileges.py). A request the table does not know is
``Route.kind == "unknown"``: only the superuser may send it (it is forwarded to
the engine untouched); any other principal is refused, never waved through.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import unquote

from . import params as P

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
    params: Mapping[str, P.Check] = field(default_factory=lambda: P.NONE)  # URL parameters it accepts
    tail: tuple[str, ...] = ()  # the decoded path segments after the index expression


def _with_tail(route: Route, segs: list[str], skip: int) -> Route:
    return replace(route, tail=tuple(segs[skip:]))


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

# (method, sub-endpoint after the index) -> (action, handler, parameters)
_INDEX_ENDPOINTS: dict[tuple[str, str], tuple[str, str, Mapping[str, P.Check]]] = {
    ("GET", "_search"): (SEARCH, "search", P.SEARCH),
    ("POST", "_search"): (SEARCH, "search", P.SEARCH),
    ("GET", "_count"): (SEARCH, "count", P.COUNT),
    ("POST", "_count"): (SEARCH, "count", P.COUNT),
    ("GET", "_msearch"): (MSEARCH, "msearch", P.MSEARCH),
    ("POST", "_msearch"): (MSEARCH, "msearch", P.MSEARCH),
    ("GET", "_mget"): (MGET, "mget", P.MGET),
    ("POST", "_mget"): (MGET, "mget", P.MGET),
    ("POST", "_bulk"): (BULK, "bulk", P.BULK),
    ("PUT", "_bulk"): (BULK, "bulk", P.BULK),
    ("POST", "_delete_by_query"): (DELETE_BY_QUERY, "by_query", P.BY_QUERY),
    ("POST", "_update_by_query"): (UPDATE_BY_QUERY, "by_query", P.BY_QUERY),
    ("POST", "_refresh"): (REFRESH, "index_admin", P.INDEX_ADMIN),
    ("GET", "_refresh"): (REFRESH, "index_admin", P.INDEX_ADMIN),
    ("GET", "_mapping"): (GET_MAPPING, "index_admin", P.GET_INDEX_META),
    ("PUT", "_mapping"): (PUT_MAPPING, "index_admin", P.PUT_MAPPING),
    ("POST", "_mapping"): (PUT_MAPPING, "index_admin", P.PUT_MAPPING),
    ("GET", "_settings"): (GET_SETTINGS, "index_admin", P.GET_INDEX_META),
    ("PUT", "_settings"): (PUT_SETTINGS, "index_admin", P.PUT_SETTINGS),
    ("GET", "_alias"): (GET_ALIASES, "index_admin", P.GET_INDEX_META),
    ("GET", "_aliases"): (GET_ALIASES, "index_admin", P.GET_INDEX_META),
    ("POST", "_pit"): (OPEN_PIT, "open_pit", P.OPEN_PIT),
    ("GET", "_field_caps"): (FIELD_CAPS, "field_caps", P.FIELD_CAPS),
    ("POST", "_field_caps"): (FIELD_CAPS, "field_caps", P.FIELD_CAPS),
    ("GET", "_terms_enum"): (TERMS_ENUM, "terms_enum", P.TERMS_ENUM),
    ("POST", "_terms_enum"): (TERMS_ENUM, "terms_enum", P.TERMS_ENUM),
    ("GET", "_stats"): (INDEX_STATS, "index_admin", P.STATS),
}


def classify(method: str, raw_path: str) -> Route:
    segs = _segments(raw_path)
    route = _classify(method.upper(), segs)
    if (
        route.kind == "index"
        and route.index is not None
        and segs
        and (segs[0] == "_all" or not segs[0].startswith("_"))
    ):
        return _with_tail(route, segs, 1)
    if route.kind in ("multi", "cluster", "index"):
        return _with_tail(route, segs, 0)
    return route


def _classify(method: str, segs: list[str]) -> Route:
    for length in (2, 1):
        handler = _LOCAL.get(tuple(segs[:length])) if len(segs) >= length else None
        if handler and (length == len(segs) or handler in ("api_key", "ilm_policy")):
            return Route("local", handler=handler)
    cluster_action = _CLUSTER.get((method, tuple(segs)))
    if cluster_action:
        return Route("cluster", action=cluster_action, handler="cluster", params=P.CLUSTER)
    if not segs:
        return Route("unknown")
    head = segs[0]
    if head.startswith("_") and head != "_all":  # `_all` in the path is every index, as an expression
        return _classify_top_level(method, segs)
    index = head
    if len(segs) == 1:
        found = {
            "PUT": (CREATE_INDEX, "create_index", P.INDEX_ADMIN),
            "DELETE": (DELETE_INDEX, "index_admin", P.INDEX_ADMIN),
            "GET": (GET_INDEX, "index_admin", P.GET_INDEX_META),
            "HEAD": (GET_INDEX, "index_admin", P.GET_INDEX_META),
        }.get(method)
        if found:
            return Route("index", action=found[0], index=index, handler=found[1], params=found[2])
        return Route("unknown")
    sub = segs[1]
    if sub in ("_doc", "_create", "_update", "_source", "_explain") and len(segs) == 3:
        return _classify_document(method, index, sub, segs[2])
    if sub == "_doc" and len(segs) == 2 and method == "POST":
        return Route("index", action=INDEX_OP_INDEX, index=index, handler="index_doc", params=P.INDEX_DOC)
    if sub in ("_alias", "_aliases") and len(segs) == 3 and method in ("PUT", "POST", "DELETE"):
        return Route("index", action=ALIASES, index=index, doc_id=segs[2], handler="alias_path", params=P.ALIASES)
    if sub in ("_alias", "_aliases") and len(segs) == 3 and method in ("GET", "HEAD"):
        return Route("index", action=GET_ALIASES, index=index, handler="index_admin", params=P.GET_INDEX_META)
    if sub == "_validate" and len(segs) == 3 and segs[2] == "query" and method in ("GET", "POST"):
        return Route("index", action=VALIDATE_QUERY, index=index, handler="validate", params=P.VALIDATE)
    if len(segs) == 2:
        found = _INDEX_ENDPOINTS.get((method, sub))
        if found:
            return Route("index", action=found[0], index=index, handler=found[1], params=found[2])
    return Route("unknown")


def _classify_document(method: str, index: str, sub: str, doc_id: str) -> Route:
    def doc(action: str, handler: str, params: Mapping[str, P.Check]) -> Route:
        return Route("index", action=action, index=index, doc_id=doc_id, handler=handler, params=params)

    if sub == "_doc":
        if method in ("PUT", "POST"):
            return doc(INDEX_OP_INDEX, "index_doc", P.INDEX_DOC)
        if method in ("GET", "HEAD"):
            return doc(GET, "get", P.GET)
        if method == "DELETE":
            return doc(DELETE, "delete_doc", P.DELETE_DOC)
    if sub == "_create" and method in ("PUT", "POST"):
        return doc(INDEX_OP_CREATE, "index_doc", P.INDEX_DOC)
    if sub == "_update" and method == "POST":
        return doc(UPDATE, "update", P.UPDATE_DOC)
    if sub == "_source" and method in ("GET", "HEAD"):
        return doc(GET, "get", P.GET)
    if sub == "_explain" and method in ("GET", "POST"):
        return doc(EXPLAIN, "explain", P.EXPLAIN)
    return Route("unknown")


_TOP_LEVEL: dict[tuple[str, str], tuple[str, str, Mapping[str, P.Check]]] = {
    ("_msearch", "GET"): (MSEARCH, "msearch", P.MSEARCH),
    ("_msearch", "POST"): (MSEARCH, "msearch", P.MSEARCH),
    ("_mget", "GET"): (MGET, "mget", P.MGET),
    ("_mget", "POST"): (MGET, "mget", P.MGET),
    ("_bulk", "POST"): (BULK, "bulk", P.BULK),
    ("_bulk", "PUT"): (BULK, "bulk", P.BULK),
    ("_aliases", "POST"): (ALIASES, "aliases", P.ALIASES),
    ("_reindex", "POST"): (REINDEX, "reindex", P.REINDEX),
    ("_refresh", "POST"): (REFRESH, "index_admin", P.INDEX_ADMIN),
    ("_refresh", "GET"): (REFRESH, "index_admin", P.INDEX_ADMIN),
    ("_mapping", "GET"): (GET_MAPPING, "index_admin", P.GET_INDEX_META),
    ("_settings", "GET"): (GET_SETTINGS, "index_admin", P.GET_INDEX_META),
    ("_alias", "GET"): (GET_ALIASES, "index_admin", P.GET_INDEX_META),
    ("_aliases", "GET"): (GET_ALIASES, "index_admin", P.GET_INDEX_META),
    ("_stats", "GET"): (INDEX_STATS, "index_admin", P.STATS),
    ("_field_caps", "GET"): (FIELD_CAPS, "field_caps", P.FIELD_CAPS),
    ("_field_caps", "POST"): (FIELD_CAPS, "field_caps", P.FIELD_CAPS),
}


def _classify_top_level(method: str, segs: list[str]) -> Route:
    head = segs[0]
    rest = segs[1:]
    if head == "_search" and rest and rest[0] == "scroll" and len(rest) <= 2:
        path_id = rest[1] if len(rest) == 2 else None
        if method == "DELETE":
            return Route("multi", action=CLEAR_SCROLL, doc_id=path_id, handler="clear_scroll", params=P.NONE)
        if method in ("GET", "POST"):
            return Route("multi", action=SCROLL, doc_id=path_id, handler="scroll", params=P.SCROLL)
    if head == "_pit" and not rest and method == "DELETE":
        return Route("multi", action=CLOSE_PIT, handler="close_pit", params=P.NONE)
    if head in ("_search", "_count") and not rest and method in ("GET", "POST"):
        # No index in the path: a search over every index (or a PIT's indices).
        if head == "_search":
            return Route("index", action=SEARCH, index="_all", handler="search", params=P.SEARCH)
        return Route("index", action=SEARCH, index="_all", handler="count", params=P.COUNT)
    if not rest:
        found = _TOP_LEVEL.get((head, method))
        if found:
            index = "_all" if found[1] in ("index_admin", "field_caps") else None
            return Route("multi", action=found[0], index=index, handler=found[1], params=found[2])
    if head == "_index_template" and len(rest) == 1:
        action = {
            "PUT": "indices:admin/index_template/put",
            "POST": "indices:admin/index_template/put",
            "GET": "indices:admin/index_template/get",
            "HEAD": "indices:admin/index_template/get",
            "DELETE": "indices:admin/index_template/delete",
        }.get(method)
        if action:
            return Route("cluster", action=action, doc_id=rest[0], handler="index_template", params=P.INDEX_ADMIN)
    if head == "_resolve" and len(rest) == 2 and rest[0] == "index" and method == "GET":
        return Route("index", action=RESOLVE_INDEX, index=rest[1], handler="resolve", params=P.RESOLVE)
    return Route("unknown")
