"""Scroll and point-in-time contexts: opened, continued and closed only by the principal that opened them.

Searches that open a context (``?scroll=``, a ``pit`` in the body) are in search.py; the owners are kept
in base.SearchContexts, which both use.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .. import params as P
from .. import query_guard, routes, wire
from .. import request_parts as parts
from ..errors import EsError
from ..exchange import JSON, Incoming, from_engine, path, with_query
from ..principal import Principal
from ..resolution import authorize_cluster
from .base import Backend, Handler

CLEAR_ALL_SCROLLS = "cluster:admin/indices/scroll/clear_all"


async def scroll(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    body = req.body()
    parts.only_keys(body, {"scroll_id", "scroll", "rest_total_hits_as_int"}, "scroll")
    given = [v for v in (req.route.doc_id, req.params.get("scroll_id"), body.get("scroll_id")) if v is not None]
    if not given or not all(isinstance(v, str) and v for v in given) or len(set(given)) != 1:
        raise EsError(
            400, "action_request_validation_exception", "Validation Failed: 1: scrollId is missing or given twice;"
        )
    scroll_id = given[0]
    gw.contexts.check_owner(principal, scroll_id)
    forwarded: dict[str, Any] = {"scroll_id": scroll_id}
    keep = body.get("scroll", req.params.get("scroll"))
    if keep is not None:
        forwarded["scroll"] = P.time_value("scroll", str(keep))
    params = {k: v for k, v in req.forwarded_params().items() if k not in ("scroll", "scroll_id")}
    resp = await gw.engine.engine("POST", with_query("/_search/scroll", params), wire.dumps(forwarded), JSON)
    if resp.status == 200:
        new_id = (resp.json() or {}).get("_scroll_id")
        if new_id and new_id != scroll_id:
            gw.contexts.own(new_id, principal)
    return from_engine(resp)


async def clear_scroll(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    body = req.body()
    parts.only_keys(body, {"scroll_id"}, "clear scroll")
    ids: Any = body.get("scroll_id", [])
    ids = [ids] if isinstance(ids, str) else ids
    if req.route.doc_id:
        ids = [*ids, *req.route.doc_id.split(",")]
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: no scroll ids specified;")
    if "_all" in ids:
        # Clearing every scroll is a cluster privilege (ClearScrollAction with _all → clear_all).
        authorize_cluster(principal, CLEAR_ALL_SCROLLS)
    else:
        for scroll_id in ids:
            gw.contexts.check_owner(principal, scroll_id)
    resp = await gw.engine.engine_json("DELETE", "/_search/scroll", {"scroll_id": ids})
    if resp.status == 200:
        for scroll_id in ids:
            gw.contexts.forget_scroll(scroll_id)
    return from_engine(resp)


async def open_pit(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    if not req.params.get("keep_alive"):
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: [keep_alive] is missing;")
    names = await gw.resolver.resolve(principal, req.route.index, routes.OPEN_PIT, allow_no_indices=False)
    if req.json():
        raise query_guard.parsing_error("request does not support a body")
    resp = await gw.engine.engine("POST", with_query(path(names, "_pit"), req.forwarded_params()))
    if resp.status == 200:
        gw.contexts.own_pit(resp.json()["id"], principal, names)
    return from_engine(resp)


async def close_pit(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    body = req.body()
    parts.only_keys(body, {"id"}, "close point in time")
    pit_id = body.get("id")
    if not isinstance(pit_id, str) or not pit_id:
        raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: id is missing;")
    gw.contexts.check_owner(principal, pit_id)
    resp = await gw.engine.engine_json("DELETE", "/_pit", {"id": pit_id})
    if resp.status == 200:
        gw.contexts.forget_pit(pit_id)
    return from_engine(resp)


#: Route handler name (routes.py) → handler.
HANDLERS: dict[str, Handler] = {handler.__name__: handler for handler in (scroll, clear_scroll, open_pit, close_pit)}
