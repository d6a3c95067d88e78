"""The search APIs: search and count (also over a point in time), msearch, explain, field_caps, terms_enum
and validate — each over names resolved as the caller, with the caller's DLS query applied."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .. import dls, query_guard, routes, search_limits, wire
from .. import request_parts as parts
from ..errors import EsError, unsupported
from ..exchange import JSON, NDJSON, Incoming, from_engine, path, respond_json, with_query
from ..principal import Principal
from ..resolution import denied
from .base import Backend, Handler, merged


async def search(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    return await _search_like(gw, req, principal, count=False)


async def count(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    return await _search_like(gw, req, principal, count=True)


def _pit_of(gw: Backend, req: Incoming, principal: Principal, body: dict[str, Any]) -> str | None:
    """The point in time a search body names, checked to be the caller's own; None without one."""
    if "pit" not in body:
        return None
    if not isinstance(body["pit"], dict) or not isinstance(body["pit"].get("id"), str):
        raise query_guard.parsing_error("[pit] needs an [id] string")
    pit_id = body["pit"]["id"]
    gw.contexts.check_owner(principal, pit_id)
    if req.route.index != "_all":
        raise EsError(
            400,
            "action_request_validation_exception",
            "Validation Failed: 1: [indices] cannot be used with point in time;",
        )
    return pit_id


async def _search_like(gw: Backend, req: Incoming, principal: Principal, *, count: bool) -> web.Response:
    body = parts.with_uri_query(req.body(), req.params)
    expression = req.route.index or "_all"
    pit_id = _pit_of(gw, req, principal, body)
    allow_none = req.params.flag("allow_no_indices", True)
    if pit_id is not None:
        names = gw.contexts.pit_indices(pit_id)
        for name in names:
            if not principal.permissions.allows_index(routes.SEARCH, name):
                raise denied(principal, routes.SEARCH, [name])
    else:
        names = await gw.resolver.resolve(principal, expression, routes.SEARCH, allow_no_indices=allow_none)
    if not names:
        return respond_json(200, parts.empty_search(count=count))
    query = await gw.resolver.dls_for(principal, names, routes.SEARCH)
    body = await gw.resolver.inspect(principal, body, names, dls_on=query is not None, count=count)
    if query is not None:
        body = dls.count_body(body, query) if count else dls.search_body(body, query)
    target = [] if pit_id is not None else names
    engine_path = with_query(path(target, "_count" if count else "_search"), req.forwarded_params())
    resp = await gw.engine.engine("POST", engine_path, wire.dumps(body), JSON)
    if resp.status == 200 and not count:
        result = resp.json()
        if req.params.get("scroll") and result.get("_scroll_id"):
            gw.contexts.own(result["_scroll_id"], principal)
        if pit_id is not None and result.get("pit_id") and result["pit_id"] != pit_id:
            gw.contexts.own_pit(result["pit_id"], principal, names)
    return from_engine(resp)


async def msearch(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    lines = [wire.parse_json(line, where=f"msearch line [{n + 1}]: ") for n, line in enumerate(parts.lines(req.raw))]
    if len(lines) % 2:
        raise EsError(400, "illegal_argument_exception", "The msearch request must be terminated by a newline [\n]")
    items = []
    for n, (header, body) in enumerate(zip(lines[::2], lines[1::2], strict=True)):
        items.append((parts.msearch_header(header, n * 2 + 1), parts.object(body, f"msearch line [{n * 2 + 2}]")))
    forwarded: list[Any] = []
    slots: list[Any] = []  # per item: None when forwarded, else its answer
    budget = search_limits.Budget(principal)
    for header, body in items:
        try:
            searched = await _msearch_item(gw, req, principal, header, body, budget)
        except EsError as err:
            slots.append({**err.body(), "status": err.status})
            continue
        if searched is None:
            slots.append({**parts.empty_search(count=False), "status": 200})
            continue
        forwarded.extend(searched)
        slots.append(None)
    responses: list[Any] = []
    took = 0
    if forwarded:
        resp = await gw.engine.engine(
            "POST", with_query("/_msearch", req.forwarded_params()), wire.ndjson(forwarded), NDJSON
        )
        if resp.status != 200:
            return from_engine(resp)
        result = resp.json()
        took = result.get("took", 0)
        responses = result["responses"]
    return respond_json(200, {"took": took, "responses": merged(slots, responses)})


async def _msearch_item(
    gw: Backend,
    req: Incoming,
    principal: Principal,
    header: dict[str, Any],
    body: dict[str, Any],
    budget: search_limits.Budget,
) -> list[Any] | None:
    """One msearch item's header and body as forwarded, or None when its names leave nothing to search."""
    expression = header.pop("index", None) or req.route.index
    if not expression:
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: no indices;")
    allow_none = header.pop("allow_no_indices", True)
    header.pop("expand_wildcards", None)
    names = await gw.resolver.resolve(principal, expression, routes.SEARCH, allow_no_indices=allow_none)
    if not names:
        return None
    query = await gw.resolver.dls_for(principal, names, routes.SEARCH)
    body = await gw.resolver.inspect(principal, body, names, dls_on=query is not None, budget=budget)
    if "pit" in body:
        raise unsupported("POST", "_msearch", "a point in time inside msearch")
    if query is not None:
        body = dls.search_body(body, query)
    return [{**header, "index": names}, body]


async def explain(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    name = await gw.resolver.single(principal, req.route.index, routes.EXPLAIN)
    body = parts.with_uri_query(req.body(), req.params)
    parts.only_keys(body, {"query"}, "explain")
    if "query" not in body:
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: query is missing;")
    query = await gw.resolver.dls_for(principal, [name], routes.EXPLAIN)
    body = await gw.resolver.inspect(principal, body, [name], dls_on=query is not None, count=True)
    doc_id = req.route.doc_id
    if query is not None and doc_id not in await gw.resolver.visible(name, [doc_id], query):
        # A hidden document answers exactly as a missing one: DLS removes it from the reader
        # the explanation is computed on (TransportExplainAction over DocumentSubsetReader).
        concrete = await gw.resolver.names.concrete_one(name)
        return respond_json(404, {"_index": concrete, "_id": doc_id, "matched": False})
    if query is not None:
        body["query"] = dls.filtered_query(body["query"], query)
    engine_path = with_query(path([name], "_explain", doc_id), req.forwarded_params())
    return from_engine(await gw.engine.engine("POST", engine_path, wire.dumps(body), JSON))


async def field_caps(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    names = await gw.resolver.resolve(
        principal,
        req.route.index or "_all",
        routes.FIELD_CAPS,
        allow_no_indices=req.params.flag("allow_no_indices", True),
    )
    body = req.json()
    if body is not None:
        parts.only_keys(body, {"fields", "index_filter", "runtime_mappings"}, "field_caps")
        if "index_filter" in body:
            if await gw.resolver.dls_for(principal, names, routes.FIELD_CAPS) is not None:
                raise unsupported(req.method, req.path, "an index_filter under document level security")
            await gw.resolver.inspect(principal, {"query": body["index_filter"]}, names, dls_on=False, count=True)
    if not names:
        return respond_json(200, {"indices": [], "fields": {}})
    engine_path = with_query(path(names, "_field_caps"), req.forwarded_params())
    resp = await gw.engine.engine(req.method, engine_path, wire.dumps(body) if body is not None else None, JSON)
    return from_engine(resp)


async def terms_enum(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    names = await gw.resolver.resolve(principal, req.route.index, routes.TERMS_ENUM)
    body = req.body()
    parts.only_keys(
        body,
        {"field", "string", "size", "timeout", "case_insensitive", "search_after", "index_filter"},
        "terms_enum",
    )
    if not names or await gw.resolver.dls_for(principal, names, routes.TERMS_ENUM) is not None:
        # TransportTermsEnumAction skips shards whose DLS query is not match_all:
        # under DLS the API answers, but with no terms.
        shards = {"total": len(names), "successful": len(names), "failed": 0}
        return respond_json(200, {"_shards": shards, "terms": [], "complete": True})
    if "index_filter" in body:
        await gw.resolver.inspect(principal, {"query": body["index_filter"]}, names, dls_on=False, count=True)
    engine_path = with_query(path(names, "_terms_enum"), req.forwarded_params())
    return from_engine(await gw.engine.engine("POST", engine_path, wire.dumps(body), JSON))


async def validate(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    names = await gw.resolver.resolve(principal, req.route.index, routes.VALIDATE_QUERY)
    if await gw.resolver.dls_for(principal, names, routes.VALIDATE_QUERY) is not None:
        raise unsupported(req.method, req.path, "this API is not supported under document level security")
    body = parts.with_uri_query(req.body(), req.params)
    body = await gw.resolver.inspect(principal, body, names, dls_on=False, count=True)
    if not names:
        return respond_json(200, {"_shards": {"total": 0, "successful": 0, "failed": 0}, "valid": True})
    engine_path = with_query(path(names, "_validate", "query"), req.forwarded_params())
    return from_engine(await gw.engine.engine("POST", engine_path, wire.dumps(body), JSON))


#: Route handler name (routes.py) → handler.
HANDLERS: dict[str, Handler] = {
    handler.__name__: handler for handler in (search, count, msearch, explain, field_caps, terms_enum, validate)
}
