"""The document APIs: get (and ``_source``), mget, index, delete, update, bulk, delete/update by query and
reindex — Elasticsearch's "Document APIs", each authorised per index and, for reads, per document (DLS)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .. import dls, query_guard, routes, wire
from .. import request_parts as parts
from ..errors import EsError, unsupported
from ..exchange import JSON, NDJSON, Incoming, from_engine, path, respond, respond_json, with_query
from ..principal import Principal
from ..resolution import AUTO_CREATE, EngineNames, denied, is_pattern
from .base import Backend, Handler, merged

BULK_SHARD = "indices:data/write/bulk[s]"
_MGET_DOC_KEYS = {"_index", "_id", "routing", "_source", "stored_fields", "version", "version_type"}


# ------------------------------------------------------------------ reads
async def get(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    head = req.method == "HEAD"
    source_only = req.route.tail[:1] == ("_source",)
    name = await gw.resolver.single(principal, req.route.index, routes.GET)
    query = await gw.resolver.dls_for(principal, [name], routes.GET)
    sub = "_source" if source_only else "_doc"
    resp = await gw.engine.engine("GET", with_query(path([name], sub, req.route.doc_id), req.forwarded_params()))
    if source_only and resp.status == 404 and not head:
        # RestGetSourceAction.checkResource: a missing document is a resource_not_found_exception.
        return _source_not_found(name, req.route.doc_id)
    if query is None or resp.status != 200:
        return from_engine(resp, head=head)
    doc = {"_index": name, "_id": req.route.doc_id} if source_only else resp.json()
    routing = req.forwarded_params().get("routing")
    found = {**doc, **({"routing": routing} if routing else {})}
    if (doc["_index"], req.route.doc_id) in await gw.resolver.visible_found(query, [found]):
        return from_engine(resp, head=head)
    concrete = doc["_index"]
    if head:
        return respond(404, {}, b"")
    if source_only:
        return _source_not_found(name, req.route.doc_id)
    return respond_json(404, {"_index": concrete, "_id": req.route.doc_id, "found": False})


def _source_not_found(name: str, doc_id: str | None) -> web.Response:
    err = EsError(404, "resource_not_found_exception", f"Document not found [{name}]/[{doc_id}]")
    return respond_json(404, err.body())


async def mget(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    items = [_mget_item(doc, n, req.route.index) for n, doc in enumerate(_mget_docs(req.body()))]
    # mget is authorised per item: an item on a forbidden index fails alone.
    answers: dict[int, dict[str, Any]] = {}
    for n, item in enumerate(items):
        try:
            item["_index"] = await gw.resolver.single(principal, item["_index"], routes.MGET)
        except EsError as err:
            answers[n] = {"_index": item["_index"], "_id": item["_id"], "error": err.cause()}
    allowed = [item for n, item in enumerate(items) if n not in answers]
    if allowed:
        resp = await gw.engine.engine_json("POST", with_query("/_mget", req.forwarded_params()), {"docs": allowed})
        if resp.status != 200:
            return from_engine(resp)
        fetched = iter(resp.json()["docs"])
        for n in range(len(items)):
            if n not in answers:
                answers[n] = next(fetched)
    result = [answers[n] for n in range(len(items))]
    await _mget_hide_invisible(gw, principal, items, result, routing=req.forwarded_params().get("routing"))
    return respond_json(200, {"docs": result})


def _mget_docs(body: dict[str, Any]) -> list[Any]:
    """The ``docs`` of an mget body, or its ``ids`` as docs."""
    parts.only_keys(body, {"docs", "ids"}, "mget")
    docs = body.get("docs")
    if docs is None and "ids" in body:
        if not isinstance(body["ids"], list) or not all(isinstance(i, str) for i in body["ids"]):
            raise query_guard.parsing_error("[mget] [ids] must be an array of strings")
        docs = [{"_id": i} for i in body["ids"]]
    if not isinstance(docs, list) or not docs:
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: no documents to get;")
    return docs


def _mget_item(doc: Any, n: int, default_index: str | None) -> dict[str, Any]:
    """The ``n``-th mget doc, checked, with the index it names (or the request's)."""
    if not isinstance(doc, dict):
        raise query_guard.parsing_error(f"[mget] docs[{n}] must be an object")
    parts.only_keys(doc, _MGET_DOC_KEYS, "mget")
    index = doc.get("_index", default_index)
    if not isinstance(doc.get("_id"), str) or not doc["_id"]:
        raise EsError(400, "action_request_validation_exception", f"Validation Failed: 1: id is missing for doc {n};")
    if not isinstance(index, str) or not index:
        raise EsError(
            400, "action_request_validation_exception", f"Validation Failed: 1: index is missing for doc {n};"
        )
    return {**doc, "_index": index}


async def _mget_hide_invisible(
    gw: Backend, principal: Principal, items: list[dict[str, Any]], got: list[dict[str, Any]], *, routing: str | None
) -> None:
    """Found documents the caller's DLS query hides answer as missing ones (``found: false``); the documents
    under one DLS query are checked together (``Resolver.visible_found``)."""
    by_query: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for requested, answer in zip(items, got, strict=True):
        if not answer.get("found"):
            continue
        query = await gw.resolver.dls_for(principal, [requested["_index"]], routes.MGET)
        if query is not None:
            by_query.setdefault(wire.dumps(query).decode(), (query, []))[1].append(answer)
            doc_routing = requested.get("routing", routing)
            if doc_routing is not None:
                answer["routing"] = doc_routing
    for query, answers in by_query.values():
        visible = await gw.resolver.visible_found(query, answers)
        for answer in answers:
            answer.pop("routing", None)
            if (answer["_index"], answer["_id"]) not in visible:
                for key in list(answer):
                    if key not in ("_index", "_id"):
                        del answer[key]
                answer["found"] = False


# ------------------------------------------------------------------ single-document writes
async def index_doc(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    create = req.route.action == routes.INDEX_OP_CREATE or req.params.get("op_type") == "create"
    action = routes.INDEX_OP_CREATE if create else routes.INDEX_OP_INDEX
    name = await gw.resolver.writable(principal, req.route.index, action)
    document = req.json()
    if document is None:
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: source is missing;")
    sub = "_create" if req.route.action == routes.INDEX_OP_CREATE else "_doc"
    if req.route.doc_id is not None:
        parts.check_id(req.route.doc_id)
        doc_path = path([name], sub, req.route.doc_id)
    else:
        doc_path = path([name], "_doc")
    method = "PUT" if req.route.doc_id is not None else "POST"
    resp = await gw.engine.engine(method, with_query(doc_path, req.forwarded_params()), wire.dumps(document), JSON)
    return from_engine(resp)


async def delete_doc(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    name = await gw.resolver.single(principal, req.route.index, routes.DELETE)
    doc_path = with_query(path([name], "_doc", req.route.doc_id), req.forwarded_params())
    return from_engine(await gw.engine.engine("DELETE", doc_path))


async def update(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    name = await gw.resolver.single(principal, req.route.index, routes.UPDATE)
    if await gw.resolver.dls_for(principal, [name], routes.UPDATE) is not None:
        raise parts.update_under_dls()
    body = req.json()
    if body is None:
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: script or doc is missing;")
    parts.only_keys(body, parts.UPDATE_KEYS, "update")
    doc_path = with_query(path([name], "_update", req.route.doc_id), req.forwarded_params())
    return from_engine(await gw.engine.engine("POST", doc_path, wire.dumps(body), JSON))


# ------------------------------------------------------------------ bulk
class _BulkItem:
    """One item of a bulk request on its way through the gateway's checks."""

    def __init__(self, op: str, spec: dict[str, Any], index: Any, source: Any, source_line: bytes | None) -> None:
        self.op = op
        self.spec = spec
        self.index = index
        self.source = source
        self.source_line = source_line
        self.action = parts.bulk_item_action(op, spec)
        # Authorised with the other items of its shard request (not for a first write to a new index,
        # which TransportBulkAction's auto-create settles before any shard request exists).
        self.on_shard = False
        self.error: EsError | None = None


class _ExistingNames:
    """The engine's names, read at most once per bulk request, and only when an item may create an index."""

    def __init__(self, names: EngineNames) -> None:
        self._names = names
        self._existing: set[str] | None = None

    async def contain(self, name: str) -> bool:
        if self._existing is None:
            self._existing = set(await self._names.existing())
        return name in self._existing


async def bulk(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    """Bulk items authorised as Elasticsearch does, in two steps.

    Elasticsearch splits a bulk into one request per shard (BulkShardRequest), whose ``indices()``
    are the names its items were sent to — aliases included, since "authorization works with aliases
    too". That shard request is authorised first, for ``indices:data/write/bulk[s]`` on every one of
    those names: one name without a write privilege denies every item bound for that shard. Then
    each item is authorised for its own action on the name it was sent to
    (AuthorizationService.authorizeBulkItems). The embedded engine's indices have one shard, so
    items share a shard request when the names they use write to the same concrete index (an
    alias's write index). Index and create items to a name that does not exist yet are created or
    refused before any shard request (TransportBulkAction's auto-create), so they are checked alone.
    """
    items = await _bulk_items(gw, req, principal)
    if not items:
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: no requests added;")
    await _bulk_authorize_shards(gw, principal, [item for item in items if item.error is None and item.on_shard])
    forwarded, slots = _bulk_forwarded(principal, items)
    results: list[Any] = []
    took = 0
    errors = any(slot is not None for slot in slots)
    if forwarded:
        bulk_path = with_query("/_bulk", req.forwarded_params())
        resp = await gw.engine.engine("POST", bulk_path, b"\n".join(forwarded) + b"\n", NDJSON)
        if resp.status != 200:
            return from_engine(resp)
        result = resp.json()
        took = result.get("took", 0)
        results = result["items"]
        errors = errors or bool(result.get("errors"))
    return respond_json(200, {"errors": errors, "took": took, "items": merged(slots, results)})


async def _bulk_items(gw: Backend, req: Incoming, principal: Principal) -> list[_BulkItem]:
    """The items of a bulk body, each read and then checked in turn: a malformed line refuses the whole
    request, a refused item only carries its ``error``."""
    lines = parts.lines(req.raw)
    items: list[_BulkItem] = []
    existing = _ExistingNames(gw.resolver.names)
    i = 0
    while i < len(lines):
        item, i = _bulk_read_item(lines, i, req.route.index)
        items.append(item)
        try:
            await _bulk_check_item(principal, item, existing)
        except EsError as err:
            item.error = err
    return items


def _bulk_read_item(lines: list[bytes], i: int, default_index: str | None) -> tuple[_BulkItem, int]:
    """The item whose action line is ``lines[i]``, and the index of the line after it."""
    meta = wire.parse_json(lines[i], where=f"bulk line [{i + 1}]: ")
    op, spec = parts.bulk_action(meta, i + 1)
    has_source = op in ("index", "create", "update")
    if has_source and i + 1 >= len(lines):
        raise EsError(400, "illegal_argument_exception", "The bulk request must be terminated by a newline [\n]")
    source_line = lines[i + 1] if has_source else None
    source = None
    if op == "update":
        source = parts.object(wire.parse_json(source_line, where=f"bulk line [{i + 2}]: "), f"bulk line [{i + 2}]")
        parts.only_keys(source, parts.UPDATE_KEYS, f"bulk line [{i + 2}] update")
    elif source_line is not None:
        wire.check_document(source_line, where=f"bulk line [{i + 2}]")
    item = _BulkItem(op, spec, spec.get("_index", default_index), source, source_line)
    return item, i + (2 if has_source else 1)


async def _bulk_check_item(principal: Principal, item: _BulkItem, existing: _ExistingNames) -> None:
    """An item's name and id; a first write to a new index is authorised here, alone, with the right to
    create that index; every other item is left ``on_shard``, for its shard request."""
    index = item.index
    if not isinstance(index, str) or not index:
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: index is missing;")
    if is_pattern(index) or "," in index:
        raise parts.invalid_index_name(index) or unsupported("", index, "a bulk item takes one index name")
    if item.op not in ("index", "create") or await existing.contain(index):
        item.on_shard = True  # authorised with the other items of its shard request
    else:
        if not principal.permissions.allows_index(item.action, index):
            raise denied(principal, item.action, [index])
        parts.raise_if_invalid(index)
        if not principal.permissions.allows_index(AUTO_CREATE, index):
            raise denied(principal, AUTO_CREATE, [index])
    if "_id" in item.spec:
        parts.check_id(item.spec["_id"])


async def _bulk_authorize_shards(gw: Backend, principal: Principal, items: list[_BulkItem]) -> None:
    """Sets ``error`` on the items refused: a whole shard request's when one of its names lacks
    ``bulk[s]``, else each item's own when its action is not granted on its name."""
    if not items:
        return
    # One name: one shard request whatever it resolves to, so no need to read the aliases.
    one_name = len({item.index for item in items}) == 1
    write_index = {} if one_name else (await gw.resolver.names.read())[1]
    shards: dict[str, list[_BulkItem]] = {}
    for item in items:
        shards.setdefault(write_index.get(item.index, item.index), []).append(item)
    for shard_items in shards.values():
        names = sorted({item.index for item in shard_items})
        refused = [name for name in names if not principal.permissions.allows_index(BULK_SHARD, name)]
        for item in shard_items:
            if refused:
                item.error = denied(principal, BULK_SHARD, refused)
            elif not principal.permissions.allows_index(item.action, item.index):
                item.error = denied(principal, item.action, [item.index])


def _bulk_forwarded(principal: Principal, items: list[_BulkItem]) -> tuple[list[bytes], list[Any]]:
    """The lines sent to the engine, and per item ``None`` when it is among them, else its error item."""
    forwarded: list[bytes] = []
    slots: list[Any] = []
    for item in items:
        if (
            item.error is None
            and item.op == "update"
            and principal.permissions.dls_query(item.index, routes.UPDATE) is not None
        ):
            # security/authz/interceptor/BulkShardRequestInterceptor.java
            item.error = EsError(
                400,
                "security_exception",
                "Can't execute a bulk item request with update requests embedded if field or document level security is enabled",
            )
        if item.error is not None:
            error = {"_index": item.index, "_id": item.spec.get("_id"), "status": item.error.status}
            slots.append({item.op: {**error, "error": item.error.cause()}})
            continue
        forwarded.append(wire.dumps({item.op: {**item.spec, "_index": item.index}}))
        if item.op == "update":
            forwarded.append(wire.dumps(item.source))
        elif item.source_line is not None:
            # A document to store: checked to be exactly one JSON object (wire.check_document)
            # and sent as received. It is data, not a request the gateway acts on — the item's
            # action line above is parsed and rebuilt — and parsing every vector in Python
            # doubled a 100-document bulk (benchmarks/gateway_overhead.py).
            forwarded.append(item.source_line.strip())
        slots.append(None)
    return forwarded, slots


# ------------------------------------------------------------------ by query and reindex
async def by_query(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    # The by-query APIs run their search with the caller's own privileges,
    # so they need read too, and only ever touch documents DLS lets them see.
    action = req.route.action
    allow_none = req.params.flag("allow_no_indices", True)
    names = await gw.resolver.resolve(principal, req.route.index, action, allow_no_indices=allow_none)
    for name in names:
        if not principal.permissions.allows_index(routes.SEARCH, name):
            raise denied(principal, routes.SEARCH, [name])
    body = parts.with_uri_query(req.body(), req.params)
    updating = action == routes.UPDATE_BY_QUERY
    parts.only_keys(body, {"query", "max_docs", "conflicts", "slice", *(("script",) if updating else ())}, "by query")
    if updating and "script" in body:
        # A script may turn an update into a delete (ctx.op = 'delete'); Elasticsearch authorizes the
        # resulting bulk items one by one, so the caller must be allowed to delete too.
        for name in names:
            if not principal.permissions.allows_index(routes.DELETE, name):
                raise denied(principal, routes.DELETE, [name])
    if not names:
        return respond_json(200, parts.empty_by_query(updated=updating))
    body["query"] = await _query_as(gw, principal, names, body.get("query", {"match_all": {}}))
    endpoint = "_update_by_query" if updating else "_delete_by_query"
    by_query_path = with_query(path(names, endpoint), req.forwarded_params())
    return from_engine(await gw.engine.engine("POST", by_query_path, wire.dumps(body), JSON))


async def _query_as(gw: Backend, principal: Principal, names: list[str], query: Any) -> Any:
    """A query checked as a search by ``principal`` over ``names``, filtered by its DLS query (unscored)."""
    restriction = await gw.resolver.dls_for(principal, names, routes.SEARCH)
    inspected = await gw.resolver.inspect(
        principal, {"query": query}, names, dls_on=restriction is not None, count=True
    )
    if restriction is None:
        return inspected["query"]
    return dls.filtered_query(inspected["query"], restriction, scoring=False)


async def reindex(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    body = req.body()
    parts.only_keys(body, {"source", "dest", "conflicts", "max_docs", "script"}, "reindex")
    if "script" in body:
        # A reindex script can send documents to any index (ctx._index); the engine would write
        # them without the per-item authorization Elasticsearch applies.
        raise unsupported(req.method, req.path, "a reindex script for this credential")
    source, dest = body.get("source"), body.get("dest")
    if not isinstance(source, dict) or not isinstance(dest, dict):
        raise EsError(
            400,
            "action_request_validation_exception",
            "Validation Failed: 1: use _reindex with [source] and [dest];",
        )
    if "remote" in source:
        raise unsupported(req.method, req.path, "reindex from a remote cluster")
    parts.only_keys(source, {"index", "query", "size", "_source", "sort", "slice"}, "reindex source")
    parts.only_keys(dest, {"index", "op_type", "version_type"}, "reindex dest")
    src = source.get("index")
    src = ",".join(src) if isinstance(src, list) and all(isinstance(s, str) for s in src) else src
    if not isinstance(src, str) or not src:
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: source index is missing;")
    if not isinstance(dest.get("index"), str):
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: index must be specified;")
    names = await gw.resolver.resolve(principal, src, routes.SEARCH, allow_no_indices=False)
    dest_action = routes.INDEX_OP_CREATE if dest.get("op_type") == "create" else routes.INDEX_OP_INDEX
    target = await gw.resolver.writable(principal, dest["index"], dest_action)
    filtered = await _query_as(gw, principal, names, source.get("query", {"match_all": {}}))
    body = {**body, "source": {**source, "index": names, "query": filtered}, "dest": {**dest, "index": target}}
    reindex_path = with_query("/_reindex", req.forwarded_params())
    return from_engine(await gw.engine.engine("POST", reindex_path, wire.dumps(body), JSON))


#: Route handler name (routes.py) → handler.
HANDLERS: dict[str, Handler] = {
    handler.__name__: handler for handler in (get, mget, index_doc, delete_doc, update, bulk, by_query, reindex)
}
