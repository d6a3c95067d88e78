"""The HTTP gateway: authenticates, authorizes, applies DLS, and forwards to the engine."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from . import dls, routes
from .errors import EsError, security_forbidden, unsupported
from .keystore import ApiKeyStore
from .principal import Authenticator, Principal
from .privileges import denial_reason
from .routes import Route
from .security_api import SecurityApi

log = logging.getLogger(__name__)
JSON = "application/json"
_FORWARD_HEADERS = ("content-type", "accept", "x-opaque-id", "traceparent")
_RETURN_HEADERS = ("content-type", "warning", "x-elastic-product", "location")


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _ndjson(lines: list[Any]) -> bytes:
    return b"".join(_json_bytes(line) + b"\n" for line in lines)


def _parse_ndjson(raw: bytes) -> list[Any]:
    out = []
    for n, line in enumerate(raw.splitlines()):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise EsError(400, "x_content_parse_exception", f"[{n + 1}:{exc.colno}] {exc.msg}") from None
    return out


class EngineResponse:
    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class Gateway:
    def __init__(self, *, engine_url: str, data_dir: Path, password: str, license_type: str = "trial") -> None:
        self.engine_url = engine_url.rstrip("/")
        self.keys = ApiKeyStore(data_dir / "security")
        self.auth = Authenticator(keys=self.keys, password=password)
        self.security = SecurityApi(keys=self.keys, data_dir=data_dir, license_type=license_type)
        self.license_type = license_type
        self._session: aiohttp.ClientSession | None = None
        # Scroll and PIT contexts belong to whoever opened them, as in Elasticsearch
        # (SecuritySearchOperationListener checks the authentication on every use).
        self._context_owner: dict[str, str] = {}
        self._pit_indices: dict[str, str] = {}

    # ---------------------------------------------------------------- plumbing
    def app(self) -> web.Application:
        app = web.Application(client_max_size=512 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def _open(self, _app: web.Application) -> None:
        connector = aiohttp.TCPConnector(limit=64, keepalive_timeout=60)
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=True)

    async def _close(self, _app: web.Application) -> None:
        if self._session:
            await self._session.close()

    async def engine(
        self, method: str, path_qs: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> EngineResponse:
        assert self._session is not None
        try:
            async with self._session.request(
                method, self.engine_url + path_qs, data=body, headers=headers or {}
            ) as resp:
                raw = await resp.read()
                out_headers = CIMultiDict((k, v) for k, v in resp.headers.items() if k.lower() in _RETURN_HEADERS)
                return EngineResponse(resp.status, out_headers, raw)
        except aiohttp.ClientError as exc:
            raise EsError(
                503, "engine_unavailable_exception", f"[embedded_es] the engine did not answer: {exc}"
            ) from exc

    async def engine_json(self, method: str, path_qs: str, body: Any = None) -> EngineResponse:
        data = _json_bytes(body) if body is not None else None
        return await self.engine(method, path_qs, data, {"content-type": JSON} if data else None)

    @staticmethod
    def _respond(status: int, headers: Mapping[str, str], body: bytes) -> web.Response:
        out = CIMultiDict(headers)
        if "X-Elastic-Product" not in out:
            out["X-Elastic-Product"] = "Elasticsearch"
        if "Content-Type" not in out:
            out["Content-Type"] = JSON
        return web.Response(status=status, body=body, headers=out)

    def _respond_json(self, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> web.Response:
        return self._respond(status, headers or {}, _json_bytes(obj))

    def _from_engine(self, resp: EngineResponse) -> web.Response:
        return self._respond(resp.status, resp.headers, resp.body)

    @staticmethod
    async def _body(request: web.Request) -> bytes:
        raw = await request.read()
        if raw and request.headers.get("content-encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        return raw

    @staticmethod
    def _forward_headers(request: web.Request) -> dict[str, str]:
        return {k: v for k, v in request.headers.items() if k.lower() in _FORWARD_HEADERS}

    async def _json_body(self, request: web.Request) -> dict[str, Any] | None:
        raw = await self._body(request)
        if not raw.strip():
            return None
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise EsError(400, "x_content_parse_exception", f"[{exc.lineno}:{exc.colno}] {exc.msg}") from None
        if not isinstance(body, dict):
            raise EsError(400, "parse_exception", "request body must be a JSON object")
        return body

    # ------------------------------------------------------------------ entry
    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            principal = self.auth.authenticate(request.headers.get("Authorization"), request.raw_path)
            route = routes.classify(request.method, request.raw_path)
            if route.kind == "local":
                body = await self._json_body(request) if request.method in ("POST", "PUT", "DELETE") else None
                status, payload = self.security.handle(
                    route.handler, request.method, request.path, request.query, body, principal
                )
                return self._respond_json(status, payload)
            if principal.permissions.superuser:
                resp = await self.engine(
                    request.method, request.raw_path, await self._body(request), self._forward_headers(request)
                )
                return self._from_engine(resp)
            self._check_license(principal)
            if route.kind == "unknown":
                raise unsupported(
                    request.method, request.path, "the embedded gateway cannot authorize it for this credential"
                )
            if route.kind == "cluster":
                self._authorize_cluster(principal, route.action)
                return await self._forward(request)
            handler = getattr(self, f"_h_{route.handler}")
            return await handler(request, principal, route)
        except EsError as err:
            if request.method == "HEAD":
                return self._respond(err.status, CIMultiDict(err.headers), b"")
            return self._respond_json(err.status, err.body(), CIMultiDict(err.headers))
        except Exception as exc:  # a gateway bug must still answer in Elasticsearch's shape, not as HTML
            log.exception("embedded_es gateway failed on %s %s", request.method, request.path)
            err = EsError(500, "exception", f"[embedded_es] internal gateway error: {type(exc).__name__}: {exc}")
            return self._respond_json(500, err.body())

    def _check_license(self, principal: Principal) -> None:
        # With a licence that lacks DLS, Elasticsearch refuses requests whose
        # roles carry DLS instead of ignoring the restriction
        # (SecurityIndexReaderWrapper / XPackLicenseState DLS_FLS feature check).
        if self.license_type == "basic" and principal.permissions.has_dls():
            raise security_forbidden("current license is non-compliant for [field and document level security]")

    async def _forward(
        self, request: web.Request, path_qs: str | None = None, body: bytes | None = None
    ) -> web.Response:
        data = await self._body(request) if body is None else body
        resp = await self.engine(request.method, path_qs or request.raw_path, data, self._forward_headers(request))
        return self._from_engine(resp)

    # ---------------------------------------------------------- authorization
    def _authorize_cluster(self, principal: Principal, action: str) -> None:
        if not principal.permissions.allows_cluster(action):
            raise security_forbidden(denial_reason(principal.describe(), action))

    @staticmethod
    def _denied(principal: Principal, action: str, indices: list[str]) -> EsError:
        return security_forbidden(denial_reason(principal.describe(), action, indices))

    async def _names(self, principal: Principal, expression: str, action: str) -> list[str]:
        """Concrete names a request targets, authorized for ``action`` or refused.

        Wildcards expand only to what the principal may access, as Elasticsearch's
        IndicesAndAliasesResolver does; explicit names must all be allowed.
        """
        parts = [p for p in expression.split(",") if p]
        if any(p.startswith("-") for p in parts):
            raise unsupported("", expression, "index exclusions are not supported for this credential")
        names: list[str] = []
        for part in parts:
            if part in ("_all", "*") or "*" in part or "?" in part:
                existing = await self._existing_names()
                pattern = "*" if part == "_all" else part
                from fnmatch import fnmatchcase

                names.extend(
                    n for n in existing if fnmatchcase(n, pattern) and principal.permissions.allows_index(action, n)
                )
            else:
                names.append(part)
        denied = [n for n in names if not principal.permissions.allows_index(action, n)]
        if denied:
            raise self._denied(principal, action, denied)
        return list(dict.fromkeys(names))

    async def _alias_map(self) -> dict[str, list[str]]:
        """{concrete index: [its aliases]} as the engine knows it now."""
        resp = await self.engine_json("GET", "/_alias")
        data = resp.json() if resp.status == 200 else {}
        return {index: sorted((meta or {}).get("aliases", {})) for index, meta in data.items()}

    async def _existing_names(self) -> list[str]:
        alias_map = await self._alias_map()
        names = set(alias_map)
        for aliases in alias_map.values():
            names.update(aliases)
        return sorted(n for n in names if not n.startswith("."))

    async def _dls_for(self, principal: Principal, names: list[str], action: str) -> dict[str, Any] | None:
        per_name = {n: principal.permissions.dls_query(n, action) for n in names}
        if len({json.dumps(q, sort_keys=True) for q in per_name.values()}) <= 1:
            return next(iter(per_name.values()), None)
        # Different restrictions per index: key each on the concrete index name.
        alias_map = await self._alias_map()
        per_concrete: dict[str, Any] = {}
        for name, query in per_name.items():
            concrete = [i for i, aliases in alias_map.items() if name in aliases] or [name]
            for index in concrete:
                if index in per_concrete and per_concrete[index] != query:
                    raise unsupported("", name, "one index reached through names with different DLS queries")
                per_concrete[index] = query
        return dls.combine_by_index(per_concrete)

    async def _visible(self, index: str, ids: list[str], query: dict[str, Any]) -> set[str]:
        """Which of ``ids`` in concrete ``index`` match the DLS ``query``.

        GET is real-time in Elasticsearch and DLS still applies to it, so a
        document not yet searchable is checked again after a refresh.
        """
        body = {"query": {"bool": {"filter": [{"ids": {"values": ids}}, query]}}, "_source": False, "size": len(ids)}
        resp = await self.engine_json("POST", f"/{index}/_search", body)
        found = {h["_id"] for h in resp.json()["hits"]["hits"]} if resp.status == 200 else set()
        if len(found) < len(ids):
            await self.engine("POST", f"/{index}/_refresh")
            resp = await self.engine_json("POST", f"/{index}/_search", body)
            found = {h["_id"] for h in resp.json()["hits"]["hits"]} if resp.status == 200 else set()
        return found

    @staticmethod
    def _path_with(request: web.Request, names: list[str], drop_params: tuple[str, ...] = ()) -> str:
        segs = request.raw_path.split("?", 1)[0].split("/")
        if names and len(segs) > 1 and not segs[1].startswith("_"):
            segs[1] = ",".join(names)
        elif names and len(segs) > 1:
            segs.insert(1, ",".join(names))
        query = {k: v for k, v in request.query.items() if k not in drop_params}
        return "/".join(segs) + (("?" + urlencode(query)) if query else "")

    # --------------------------------------------------------------- handlers
    async def _h_forward(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        await self._names(principal, route.index or "", route.action)
        return await self._forward(request)

    async def _h_forward_all(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        """An index-less admin call (``POST /_refresh``): only the indices the caller may act on."""
        names = await self._names(principal, "_all", route.action)
        if not names:
            return self._respond_json(200, {"_shards": {"total": 0, "successful": 0, "failed": 0}})
        return await self._forward(request, self._path_with(request, names))

    async def _h_index_doc(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        action = routes.INDEX_OP_CREATE if request.query.get("op_type") == "create" else routes.INDEX_OP_INDEX
        await self._names(principal, route.index, action)
        return await self._forward(request)

    async def _h_dls_refused(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        names = await self._names(principal, route.index, route.action)
        if await self._dls_for(principal, names, route.action) is not None:
            raise unsupported(request.method, request.path, "this API is not supported under document level security")
        return await self._forward(request)

    async def _h_terms_enum(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        names = await self._names(principal, route.index, route.action)
        if await self._dls_for(principal, names, route.action) is None:
            return await self._forward(request)
        # TransportTermsEnumAction skips shards whose DLS query is not match_all:
        # under DLS the API answers, but with no terms.
        shards = {"total": len(names), "successful": len(names), "failed": 0}
        return self._respond_json(200, {"_shards": shards, "terms": [], "complete": True})

    async def _search_like(self, request: web.Request, principal: Principal, route: Route, rewrite) -> web.Response:
        body = await self._json_body(request)
        expression = route.index
        if body and "pit" in body:
            pit_id = body["pit"].get("id", "")
            self._check_context_owner(principal, pit_id)
            expression = self._pit_indices.get(pit_id, expression)
        names = await self._names(principal, expression, routes.SEARCH)
        if not names:
            return self._respond_json(200, _empty_search(count=route.handler == "count"))
        query = await self._dls_for(principal, names, routes.SEARCH)
        if query is None:
            return await self._forward(request)
        if "q" in request.query:
            if body and "query" in body:
                raise EsError(
                    400, "illegal_argument_exception", "request [q] parameter and a body query cannot both be used"
                )
            body = {**(body or {}), "query": dls.query_string_from_params(request.query)}
        body = rewrite(body, query)
        dropped = ("q", "df", "default_operator", "analyzer", "analyze_wildcard", "lenient")
        path = self._path_with(request, [] if body and "pit" in body else names, dropped)
        resp = await self.engine("POST", path, _json_bytes(body), {"content-type": JSON})
        if resp.status == 200 and request.query.get("scroll"):
            self._context_owner[resp.json().get("_scroll_id", "")] = principal.owner_key
        return self._from_engine(resp)

    async def _h_search(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        return await self._search_like(request, principal, route, dls.search_body)

    async def _h_count(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        return await self._search_like(request, principal, route, dls.count_body)

    async def _h_by_query(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        # The by-query APIs run their search with the caller's own privileges,
        # so they need read too, and only ever touch documents DLS lets them see.
        names = await self._names(principal, route.index, route.action)
        await self._names(principal, ",".join(names), routes.SEARCH)
        query = await self._dls_for(principal, names, routes.SEARCH)
        if query is None:
            return await self._forward(request)
        body = dls.by_query_body(await self._json_body(request), query)
        return await self._forward(request, self._path_with(request, names), _json_bytes(body))

    async def _h_get(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        names = await self._names(principal, route.index, routes.GET)
        query = await self._dls_for(principal, names, routes.GET)
        resp = await self.engine("GET", request.raw_path, None, self._forward_headers(request))
        if query is None or resp.status != 200:
            return self._from_engine(resp) if request.method == "GET" else self._respond(resp.status, resp.headers, b"")
        source_only = "/_source/" in request.path
        if source_only:
            visible = route.doc_id in await self._visible(route.index, [route.doc_id], query)
            concrete = route.index
        else:
            doc = resp.json()
            concrete = doc.get("_index", route.index)
            visible = doc.get("found") and route.doc_id in await self._visible(concrete, [route.doc_id], query)
        if visible:
            return self._from_engine(resp) if request.method == "GET" else self._respond(200, resp.headers, b"")
        if request.method == "HEAD":
            return self._respond(404, {}, b"")
        if source_only:
            err = EsError(404, "resource_not_found_exception", f"Document not found [{route.index}]/[{route.doc_id}]")
            return self._respond_json(404, err.body())
        return self._respond_json(404, {"_index": concrete, "_id": route.doc_id, "found": False})

    async def _h_mget(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        body = await self._json_body(request) or {}
        docs = body.get("docs")
        if docs is None and "ids" in body:
            docs = [{"_id": i} for i in body["ids"]]
        if not isinstance(docs, list):
            raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: no documents to get;")
        items: list[dict[str, Any]] = []
        for doc in docs:
            index = doc.get("_index") or route.index
            if not index:
                raise EsError(
                    400, "action_request_validation_exception", "Validation Failed: 1: index is missing for doc 0;"
                )
            items.append({**doc, "_index": index})
        # mget is authorised per index: items on a forbidden index fail alone.
        denied: dict[int, dict[str, Any]] = {}
        for n, item in enumerate(items):
            if not principal.permissions.allows_index(routes.MGET, item["_index"]):
                err = self._denied(principal, routes.MGET, [item["_index"]])
                denied[n] = {"_index": item["_index"], "_id": item.get("_id"), "error": err.cause()}
        allowed = [item for n, item in enumerate(items) if n not in denied]
        qs = ("?" + request.query_string) if request.query_string else ""
        resp = await self.engine_json("POST", "/_mget" + qs, {"docs": allowed}) if allowed else None
        if resp is not None and resp.status != 200:
            return self._from_engine(resp)
        fetched = iter(resp.json()["docs"] if resp is not None else [])
        result = {"docs": [denied[n] if n in denied else next(fetched) for n in range(len(items))]}
        by_index: dict[str, list[dict[str, Any]]] = {}
        for requested, got in zip(items, result["docs"], strict=True):
            if got.get("found"):
                by_index.setdefault(requested["_index"], []).append(got)
        for requested_name, found in by_index.items():
            query = await self._dls_for(principal, [requested_name], routes.MGET)
            if query is None:
                continue
            for concrete in {d["_index"] for d in found}:
                ids = [d["_id"] for d in found if d["_index"] == concrete]
                visible = await self._visible(concrete, ids, query)
                for d in found:
                    if d["_index"] == concrete and d["_id"] not in visible:
                        for key in list(d):
                            if key not in ("_index", "_id"):
                                del d[key]
                        d["found"] = False
        return self._respond_json(200, result)

    async def _h_update(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        names = await self._names(principal, route.index, routes.UPDATE)
        if await self._dls_for(principal, names, routes.UPDATE) is not None:
            raise _update_under_dls()
        return await self._forward(request)

    async def _h_explain(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        names = await self._names(principal, route.index, routes.EXPLAIN)
        query = await self._dls_for(principal, names, routes.EXPLAIN)
        if query is None:
            return await self._forward(request)
        body = await self._json_body(request) or {}
        body["query"] = dls.filtered_query(body.get("query"), query)
        return await self._forward(request, None, _json_bytes(body))

    async def _h_msearch(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        lines = _parse_ndjson(await self._body(request))
        if len(lines) % 2:
            raise EsError(400, "illegal_argument_exception", "The msearch request must be terminated by a newline [\n]")
        forwarded: list[Any] = []
        slots: list[Any] = []  # per item: None when forwarded, else its error response
        for header, body in zip(lines[::2], lines[1::2], strict=True):
            try:
                index = header.get("index", route.index)
                if isinstance(index, list):
                    index = ",".join(index)
                if not index:
                    raise EsError(400, "illegal_argument_exception", "[embedded_es] msearch item without an index")
                names = await self._names(principal, index, routes.SEARCH)
                query = await self._dls_for(principal, names, routes.SEARCH)
                header = {**header, "index": names}
                if query is not None:
                    body = dls.search_body(body, query)
                forwarded.extend([header, body])
                slots.append(None)
            except EsError as err:
                slots.append({**err.body(), "status": err.status})
        responses: list[Any] = []
        took = 0
        if forwarded:
            path = "/_msearch" + (("?" + request.query_string) if request.query_string else "")
            resp = await self.engine("POST", path, _ndjson(forwarded), {"content-type": "application/x-ndjson"})
            if resp.status != 200:
                return self._from_engine(resp)
            result = resp.json()
            took = result.get("took", 0)
            responses = result["responses"]
        merged, it = [], iter(responses)
        for slot in slots:
            merged.append(next(it) if slot is None else slot)
        return self._respond_json(200, {"took": took, "responses": merged})

    async def _h_bulk(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        raw = await self._body(request)
        lines = [line for line in raw.split(b"\n") if line.strip()]
        # Only the action lines are parsed: document sources (vectors and all)
        # pass through as bytes, which keeps the gateway's cost per item small.
        forwarded: list[bytes] = []
        slots: list[Any] = []  # per item: None when forwarded, else its error item
        i = 0
        while i < len(lines):
            try:
                meta = json.loads(lines[i])
            except json.JSONDecodeError as exc:
                raise EsError(400, "x_content_parse_exception", f"[{i + 1}:{exc.colno}] {exc.msg}") from None
            if not isinstance(meta, dict) or len(meta) != 1:
                raise EsError(
                    400,
                    "illegal_argument_exception",
                    f"Malformed action/metadata line [{i + 1}], expected a simple object",
                )
            ((op, spec),) = meta.items()
            has_source = op in ("index", "create", "update")
            if has_source and i + 1 >= len(lines):
                raise EsError(
                    400, "illegal_argument_exception", "The bulk request must be terminated by a newline [\n]"
                )
            item_lines = lines[i : i + (2 if has_source else 1)]
            i += len(item_lines)
            index = spec.get("_index", route.index)
            try:
                self._authorize_bulk_item(principal, op, spec, index, i)
                forwarded.extend(item_lines)
                slots.append(None)
            except EsError as err:
                slots.append(
                    {op: {"_index": index, "_id": spec.get("_id"), "status": err.status, "error": err.cause()}}
                )
        if all(slot is None for slot in slots):
            return await self._forward(request, body=raw)
        items: list[Any] = []
        took = 0
        if forwarded:
            resp = await self.engine(
                "POST", request.raw_path, b"\n".join(forwarded) + b"\n", {"content-type": "application/x-ndjson"}
            )
            if resp.status != 200:
                return self._from_engine(resp)
            result = resp.json()
            took = result.get("took", 0)
            items = result["items"]
        merged, it = [], iter(items)
        for slot in slots:
            merged.append(next(it) if slot is None else slot)
        return self._respond_json(200, {"errors": True, "took": took, "items": merged})

    def _authorize_bulk_item(
        self, principal: Principal, op: str, spec: dict[str, Any], index: str | None, line: int
    ) -> None:
        """Bulk items are authorised one by one (AuthorizationService.authorizeBulkItems)."""
        action = {
            "index": routes.INDEX_OP_CREATE if spec.get("op_type") == "create" else routes.INDEX_OP_INDEX,
            "create": routes.INDEX_OP_CREATE,
            "update": routes.UPDATE,
            "delete": routes.DELETE,
        }.get(op)
        if action is None:
            raise EsError(
                400,
                "illegal_argument_exception",
                f"Malformed action/metadata line [{line}], expected one of [create, delete, index, update] but found [{op}]",
            )
        if not index:
            raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: index is missing;")
        if not principal.permissions.allows_index(action, index):
            raise self._denied(principal, action, [index])
        if op == "update" and principal.permissions.dls_query(index, routes.UPDATE) is not None:
            # security/authz/interceptor/BulkShardRequestInterceptor.java
            raise EsError(
                400,
                "security_exception",
                "Can't execute a bulk item request with update requests embedded if field or document level security is enabled",
            )

    async def _h_aliases(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        body = await self._json_body(request) or {}
        names: list[str] = []
        for action in body.get("actions", []):
            for spec in action.values():
                for key in ("index", "alias", "indices", "aliases"):
                    value = spec.get(key)
                    names.extend([value] if isinstance(value, str) else value or [])
        for name in names:
            await self._names(principal, name, routes.ALIASES)
        adds = any("add" in action for action in body.get("actions", []))
        if adds and any(principal.permissions.dls_query(n, routes.ALIASES) is not None for n in names):
            # security/authz/interceptor/IndicesAliasesRequestInterceptor.java
            raise EsError(
                400,
                "security_exception",
                "Alias requests are not allowed for users who have field or document level security enabled on one of the indices",
            )
        return await self._forward(request, None, _json_bytes(body))

    async def _h_reindex(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        body = await self._json_body(request) or {}
        source, dest = body.get("source", {}), body.get("dest", {})
        if "remote" in source:
            raise unsupported(request.method, request.path, "reindex from a remote cluster")
        src = source.get("index")
        src = ",".join(src) if isinstance(src, list) else src or ""
        names = await self._names(principal, src, routes.SEARCH)
        dest_action = routes.INDEX_OP_CREATE if dest.get("op_type") == "create" else routes.INDEX_OP_INDEX
        await self._names(principal, dest.get("index", ""), dest_action)
        query = await self._dls_for(principal, names, routes.SEARCH)
        if query is not None:
            source = {**source, "index": names, "query": dls.filtered_query(source.get("query"), query, scoring=False)}
            body = {**body, "source": source}
        return await self._forward(request, None, _json_bytes(body))

    def _check_context_owner(self, principal: Principal, context_id: str) -> None:
        owner = self._context_owner.get(context_id)
        if owner is not None and owner != principal.owner_key:
            raise EsError(404, "search_context_missing_exception", f"No search context found for id [{context_id}]")

    async def _h_scroll(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        body = await self._json_body(request) or {}
        scroll_id = body.get("scroll_id") or request.query.get("scroll_id") or request.path.rsplit("/", 1)[-1]
        if self._context_owner.get(scroll_id) != principal.owner_key:
            raise EsError(404, "search_context_missing_exception", f"No search context found for id [{scroll_id}]")
        resp = await self.engine(
            request.method, request.raw_path, _json_bytes(body) if body else None, {"content-type": JSON}
        )
        return self._from_engine(resp)

    async def _h_clear_scroll(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        body = await self._json_body(request) or {}
        ids = body.get("scroll_id") or []
        for scroll_id in [ids] if isinstance(ids, str) else ids:
            self._check_context_owner(principal, scroll_id)
        return await self._forward(request, None, _json_bytes(body) if body else b"")

    async def _h_open_pit(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        names = await self._names(principal, route.index, routes.OPEN_PIT)
        resp = await self.engine(
            request.method, self._path_with(request, names), await self._body(request), self._forward_headers(request)
        )
        if resp.status == 200:
            pit_id = resp.json()["id"]
            self._context_owner[pit_id] = principal.owner_key
            self._pit_indices[pit_id] = ",".join(names)
        return self._from_engine(resp)

    async def _h_close_pit(self, request: web.Request, principal: Principal, route: Route) -> web.Response:
        body = await self._json_body(request) or {}
        self._check_context_owner(principal, body.get("id", ""))
        return await self._forward(request, None, _json_bytes(body))


def _update_under_dls() -> EsError:
    # TransportUpdateAction is refused when DLS/FLS applies
    # (x-pack/.../security/action/interceptor/UpdateRequestInterceptor.java).
    return EsError(
        400,
        "security_exception",
        "Can't execute an update request if field or document level security is enabled",
    )


def _empty_search(*, count: bool) -> dict[str, Any]:
    shards = {"total": 0, "successful": 0, "skipped": 0, "failed": 0}
    if count:
        return {"count": 0, "_shards": shards}
    return {
        "took": 0,
        "timed_out": False,
        "_shards": shards,
        "hits": {"total": {"value": 0, "relation": "eq"}, "max_score": None, "hits": []},
    }
