"""Index and cluster administration: cluster health and settings, index templates, index metadata and
settings, create and resolve index, and aliases — each over names authorised for the caller.

Elasticsearch files index templates, aliases and resolve under its "Index APIs"; the few cluster-level
endpoints the gateway serves are administration too, checked against cluster privileges.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .. import query_guard, routes, wire
from .. import request_parts as parts
from ..errors import EsError, unsupported
from ..exchange import JSON, Incoming, from_engine, path, respond, respond_json, segment, with_query
from ..principal import Principal
from ..resolution import authorize_cluster, denied, is_pattern
from .base import Backend, Handler

_INDEX_TEMPLATE_KEYS = {"index_patterns", "template", "composed_of", "priority", "version", "_meta", "data_stream"}


# ------------------------------------------------------------------ cluster-level
async def cluster(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    authorize_cluster(principal, req.route.action)
    cluster_path = path([], *req.route.tail) or "/"
    resp = await gw.engine.engine(req.method, with_query(cluster_path, req.forwarded_params()))
    return from_engine(resp, head=req.method == "HEAD")


async def index_template(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    authorize_cluster(principal, req.route.action)
    body = req.json()
    if body is not None:
        parts.only_keys(body, _INDEX_TEMPLATE_KEYS, "index template")
    template_path = with_query(
        path([], "_index_template") + "/" + segment(req.route.doc_id or ""), req.forwarded_params()
    )
    resp = await gw.engine.engine(req.method, template_path, wire.dumps(body) if body is not None else None, JSON)
    return from_engine(resp, head=req.method == "HEAD")


# ------------------------------------------------------------------ indices
async def index_admin(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    """Index-level admin and metadata APIs over expanded, authorized names."""
    action = req.route.action
    reading = req.method in ("GET", "HEAD") or action == routes.REFRESH
    if not principal.permissions.grants_somewhere(action):
        raise denied(principal, action, [req.route.index or "_all"])
    if action == routes.DELETE_INDEX and any(is_pattern(p) for p in (req.route.index or "").split(",")):
        # action.destructive_requires_name defaults to true since 8.0.
        raise EsError(400, "illegal_argument_exception", "Wildcard expressions or all indices are not allowed")
    allow_none = req.params.flag("allow_no_indices", reading)
    names = await gw.resolver.resolve(principal, req.route.index or "_all", action, allow_no_indices=allow_none)
    rest = req.route.tail
    if not names:
        return respond_json(200, parts.empty_admin(action), {}) if req.method != "HEAD" else respond(404, {}, b"")
    body = req.json()
    if body is not None:
        if action == routes.PUT_MAPPING:
            parts.only_keys(body, parts.MAPPING_KEYS, "mapping")
        elif action == routes.PUT_SETTINGS:
            if not all(k == "index" or k == "settings" or k.startswith("index.") for k in body):
                raise query_guard.parsing_error("settings must be [index] settings")
        else:
            raise query_guard.parsing_error("request does not support a body")
    admin_path = with_query(path(names, *rest), req.forwarded_params())
    resp = await gw.engine.engine(req.method, admin_path, wire.dumps(body) if body is not None else None, JSON)
    return from_engine(resp, head=req.method == "HEAD")


async def create_index(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    name = req.route.index
    parts.raise_if_invalid(name)
    await gw.resolver.resolve(principal, name, routes.CREATE_INDEX, allow_no_indices=False)
    body = req.json()
    if body is not None:
        parts.only_keys(body, {"settings", "mappings", "aliases"}, "create index")
        new_aliases = body.get("aliases") or {}
        if not isinstance(new_aliases, dict):
            raise query_guard.parsing_error("[aliases] must be an object")
        for alias in new_aliases:
            parts.raise_if_invalid(alias)
            # Creating an index with aliases needs the alias privilege on each alias too.
            await gw.resolver.resolve(principal, alias, routes.ALIASES, allow_no_indices=False)
    index_path = with_query(path([name]), req.forwarded_params())
    return from_engine(await gw.engine.engine("PUT", index_path, wire.dumps(body) if body is not None else None, JSON))


async def resolve(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    names = await gw.resolver.resolve(principal, req.route.index, routes.RESOLVE_INDEX)
    if not names:
        return respond_json(200, {"indices": [], "aliases": [], "data_streams": []})
    resolve_path = with_query("/_resolve/index/" + ",".join(segment(n) for n in names), req.forwarded_params())
    return from_engine(await gw.engine.engine("GET", resolve_path))


# ------------------------------------------------------------------ aliases
async def alias_path(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    """``PUT|DELETE /<index>/_alias/<name>``: the same rules as an ``_aliases`` action."""
    spec: dict[str, Any] = {"index": req.route.index, "alias": req.route.doc_id}
    body = req.json()
    if body is not None:
        parts.only_keys(body, parts.ALIAS_OPTIONS, "alias")
        spec.update(body)
    verb = "remove" if req.method == "DELETE" else "add"
    return await _aliases(gw, req, principal, [{verb: spec}])


async def aliases(gw: Backend, req: Incoming, principal: Principal) -> web.Response:
    body = req.body()
    parts.only_keys(body, {"actions"}, "aliases")
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions:
        raise EsError(
            400,
            "action_request_validation_exception",
            "Validation Failed: 1: [actions] requires at least one action;",
        )
    return await _aliases(gw, req, principal, actions)


async def _aliases(gw: Backend, req: Incoming, principal: Principal, actions: list[Any]) -> web.Response:
    rebuilt: list[dict[str, Any]] = []
    for n, action in enumerate(actions):
        rebuilt.append(await _alias_action(gw, req, principal, n, action))
    aliases_path = with_query("/_aliases", req.forwarded_params())
    return from_engine(await gw.engine.engine_json("POST", aliases_path, {"actions": rebuilt}))


def _alias_verb(n: int, action: Any) -> tuple[str, dict[str, Any]]:
    """The verb and spec of the ``n``-th ``_aliases`` action, checked."""
    if not isinstance(action, dict) or len(action) != 1:
        raise query_guard.parsing_error(f"[aliases] action [{n}] must be an object with one key")
    ((verb, spec),) = action.items()
    if verb not in ("add", "remove", "remove_index") or not isinstance(spec, dict):
        raise query_guard.parsing_error(f"[aliases] unknown action [{verb}]")
    parts.only_keys(spec, {"index", "indices", "alias", "aliases", *parts.ALIAS_OPTIONS}, f"[aliases] {verb}")
    return verb, spec


async def _alias_action(gw: Backend, req: Incoming, principal: Principal, n: int, action: Any) -> dict[str, Any]:
    """One ``_aliases`` action rebuilt over concrete, authorised index names."""
    verb, spec = _alias_verb(n, action)
    indices = parts.names_of(spec, "index", "indices")
    alias_names = parts.names_of(spec, "alias", "aliases")
    if not indices or (verb != "remove_index" and not alias_names):
        raise EsError(
            400, "action_request_validation_exception", f"Validation Failed: 1: [{verb}] needs index and alias;"
        )
    # remove_index deletes the index: it needs the delete privilege (IndicesAliasesRequest
    # authorization maps REMOVE_INDEX to the delete index action).
    index_action = routes.DELETE_INDEX if verb == "remove_index" else routes.ALIASES
    if not principal.permissions.grants_somewhere(index_action):
        raise denied(principal, index_action, indices)
    if verb == "remove_index" and any(is_pattern(i) for i in indices):
        raise EsError(400, "illegal_argument_exception", "Wildcard expressions or all indices are not allowed")
    concrete = await gw.resolver.resolve(principal, ",".join(indices), index_action, allow_no_indices=False)
    if any(principal.permissions.dls_query(i, routes.ALIASES) is not None for i in concrete) and verb == "add":
        # security/authz/interceptor/IndicesAliasesRequestInterceptor.java
        raise EsError(
            400,
            "security_exception",
            "Alias requests are not allowed for users who have field or document level security enabled on one of the indices",
        )
    out = {k: v for k, v in spec.items() if k in parts.ALIAS_OPTIONS}
    if "filter" in out:
        await gw.resolver.inspect(principal, {"query": out["filter"]}, concrete, dls_on=False, count=True)
    out["indices"] = concrete
    if alias_names:
        for alias in alias_names:
            if verb == "add":
                parts.raise_if_invalid(alias)
            elif is_pattern(alias):
                raise unsupported(req.method, req.path, "alias wildcards in a remove action")
            await gw.resolver.resolve(principal, alias, routes.ALIASES, allow_no_indices=False)
        out["aliases"] = alias_names
    return {verb: out}


#: Route handler name (routes.py) → handler.
HANDLERS: dict[str, Handler] = {
    handler.__name__: handler
    for handler in (cluster, index_template, index_admin, create_index, resolve, alias_path, aliases)
}
