"""The HTTP gateway: authenticates, authorizes, applies DLS, and forwards rebuilt requests to the engine.

Default deny. For every principal but the bootstrap superuser, a request is served only when
routes.py knows its endpoint, params.py knows each of its URL parameters, and the handler below
understands its body (query_guard.py for search bodies); anything else is refused in
Elasticsearch's error shape. What reaches the engine is rebuilt from the parsed values: index
names expanded and authorized one by one, path segments escaped, the query string generated
from checked parameters, the body re-serialised. The superuser (the operator's own credential,
never a user's) is forwarded as sent, after the same bounded body reading and index name checks.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from . import dls, filter_path, query_guard, routes, search_limits, wire
from . import params as P
from . import request_parts as parts
from .engine import ENGINE_TIMEOUT_SECONDS
from .errors import EsError, security_forbidden, unsupported
from .exchange import JSON, NDJSON, EngineResponse, Incoming, from_engine, respond, respond_json
from .exchange import path as _path
from .exchange import segment as _segment
from .exchange import with_query as _with_query
from .journal import Journal, write_action
from .keystore import ApiKeyStore
from .principal import Authenticator, Principal
from .resolution import AUTO_CREATE, EngineNames, Resolver, authorize_cluster, denied, is_pattern
from .routes import Route
from .security_api import SecurityApi

log = logging.getLogger(__name__)
_RETURN_HEADERS = ("content-type", "warning", "x-elastic-product", "location")
_MAX_CONTEXTS = 10_000  # scroll/PIT contexts remembered per gateway (the engine expires them itself)
CLEAR_ALL_SCROLLS = "cluster:admin/indices/scroll/clear_all"
BULK_SHARD = "indices:data/write/bulk[s]"


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


class Gateway:
    def __init__(
        self,
        *,
        engine_url: str,
        data_dir: Path,
        password: str,
        license_type: str = "trial",
        journal: Journal | None = None,
    ) -> None:
        self.engine_url = engine_url.rstrip("/")
        # Every engine request passes through engine(), and so through the journal: a write is
        # answered only once it is on disk (journal.py).
        self.journal = journal
        self.engine_timeout = float(os.environ.get("EMBEDDED_ES_ENGINE_TIMEOUT", ENGINE_TIMEOUT_SECONDS))
        self.keys = ApiKeyStore(data_dir / "security")
        self.auth = Authenticator(keys=self.keys, password=password)
        self.security = SecurityApi(keys=self.keys, data_dir=data_dir, license_type=license_type)
        self.license_type = license_type
        self.max_content_length = wire.max_content_length()
        self._session: aiohttp.ClientSession | None = None
        # Scroll and PIT contexts belong to whoever opened them, as in Elasticsearch
        # (SecuritySearchOperationListener checks the authentication on every use).
        self._context_owner: dict[str, str] = {}
        self._pit_indices: dict[str, list[str]] = {}
        # The engine's index and alias names, kept between requests; engine() tells it what each
        # request may do to them (resolution.EngineNames).
        self.names = EngineNames(self)
        self.resolver = Resolver(self, self.names)
        self.search_slots = search_limits.SearchSlots()
        search_limits.text_clause_limit()  # a bad EMBEDDED_ES_MAX_TEXT_CLAUSES stops the start, not a search

    # ---------------------------------------------------------------- plumbing
    def app(self) -> web.Application:
        # The gateway decompresses bodies itself, once and bounded (wire.decode_body).
        app = web.Application(client_max_size=self.max_content_length, handler_args={"auto_decompress": False})
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def _open(self, _app: web.Application) -> None:
        connector = aiohttp.TCPConnector(limit=64, keepalive_timeout=60)
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=True)
        if self.journal is not None:
            self.journal.send = self._engine_request

    async def _close(self, _app: web.Application) -> None:
        self.auth.close()
        if self._session:
            await self._session.close()

    async def engine(
        self, method: str, path_qs: str, body: bytes | None = None, content_type: str | None = None
    ) -> EngineResponse:
        assert self._session is not None
        with self.names.watching(method, path_qs):
            if self.journal is not None:
                return await self.journal.write(method, path_qs, body, content_type, self._engine_request)
            return await self._engine_request(method, path_qs, body, content_type)

    def engine_restarted(self) -> None:
        """The engine was started again (server.py): the names it had are re-read, its contexts are gone."""
        self.names.forget()
        self._context_owner.clear()
        self._pit_indices.clear()

    async def _engine_request(
        self, method: str, path_qs: str, body: bytes | None, content_type: str | None
    ) -> EngineResponse:
        assert self._session is not None
        headers = {"content-type": content_type} if content_type and body is not None else {}
        journaled = self.journal is not None and write_action(method, path_qs) is not None
        timeout = aiohttp.ClientTimeout(total=None if journaled else self.engine_timeout)
        try:
            async with self._session.request(
                method, self.engine_url + path_qs, data=body, headers=headers, timeout=timeout
            ) as resp:
                raw = await resp.read()
                out_headers = CIMultiDict((k, v) for k, v in resp.headers.items() if k.lower() in _RETURN_HEADERS)
                return EngineResponse(resp.status, out_headers, raw)
        except aiohttp.ClientError as exc:
            raise EsError(
                503, "engine_unavailable_exception", f"[embedded_es] the engine did not answer: {exc}"
            ) from exc
        except TimeoutError as exc:
            raise EsError(
                503,
                "engine_unavailable_exception",
                f"[embedded_es] the engine did not answer within {self.engine_timeout:g} s",
            ) from exc

    async def engine_json(self, method: str, path_qs: str, body: Any = None) -> EngineResponse:
        data = wire.dumps(body) if body is not None else None
        return await self.engine(method, path_qs, data, JSON)

    @staticmethod
    def _respond(status: int, headers: Mapping[str, str], body: bytes) -> web.Response:
        return respond(status, headers, body)

    @staticmethod
    def _respond_json(status: int, obj: Any, headers: Mapping[str, str] | None = None) -> web.Response:
        return respond_json(status, obj, headers)

    @staticmethod
    def _from_engine(resp: EngineResponse, *, head: bool = False) -> web.Response:
        return from_engine(resp, head=head)

    async def _read_body(self, request: web.Request) -> bytes:
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise wire.too_long(self.max_content_length) from None
        return wire.decode_body(raw, request.headers.get("content-encoding"), limit=self.max_content_length)

    # ------------------------------------------------------------------ entry
    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            principal = await self.auth.authenticate(request.headers.get("Authorization"), request.raw_path)
            route = routes.classify(request.method, request.raw_path)
            raw = await self._read_body(request)
            if route.kind == "local":
                body = wire.parse_object(raw) if request.method in ("POST", "PUT", "DELETE") else None
                status, payload = self.security.handle(
                    route.handler, request.method, request.path, request.query, body, principal
                )
                return self._respond_json(status, payload)
            if principal.permissions.superuser:
                return await self._superuser(request, route, raw)
            self._check_license(principal)
            if route.kind == "unknown":
                raise unsupported(
                    request.method, request.path, "the embedded gateway cannot authorize it for this credential"
                )
            params = P.parse(request.query_string, route.params, request.path)
            incoming = Incoming(request, route, params, raw)
            handler = getattr(self, f"_h_{route.handler}")
            if route.action in search_limits.SEARCH_ACTIONS:
                async with self.search_slots.slot(principal, route.action):
                    response = await handler(incoming, principal)
            else:
                response = await handler(incoming, principal)
            return self._filtered(response, params.get("filter_path"))
        except EsError as err:
            if request.method == "HEAD":
                return self._respond(err.status, CIMultiDict(err.headers), b"")
            return self._respond_json(err.status, err.body(), CIMultiDict(err.headers))
        except Exception as exc:  # a gateway bug must still answer in Elasticsearch's shape, not as HTML
            log.exception("embedded_es gateway failed on %s %s", request.method, request.path)
            err = EsError(500, "exception", f"[embedded_es] internal gateway error: {type(exc).__name__}")
            return self._respond_json(500, err.body())

    def _filtered(self, response: web.Response, spec: str | None) -> web.Response:
        if not spec or not response.body or not response.content_type.endswith("json"):
            return response
        shaped = filter_path.apply(json.loads(response.body), spec)
        return self._respond(response.status, {"Content-Type": JSON}, wire.dumps(shaped))

    async def _superuser(self, request: web.Request, route: Route, raw: bytes) -> web.Response:
        """The operator's credential: forwarded as sent, but no index or alias gets a name ES refuses, and no
        search past Elasticsearch's own limits reaches the engine (search_limits)."""
        for name in await self._names_created(route, raw):
            parts.raise_if_invalid(name)
        if route.action == routes.SEARCH and raw:  # _search and _count
            search_limits.superuser_check(raw, route.index or "_all")
        content_type = request.headers.get("content-type")
        resp = await self.engine(request.method, request.raw_path, raw if raw else None, content_type)
        return self._from_engine(resp, head=request.method == "HEAD")

    async def _names_created(self, route: Route, raw: bytes) -> list[str]:
        """The index and alias names a superuser request would bring into being."""
        if route.action == routes.CREATE_INDEX:
            body = wire.parse_object(raw) or {}
            aliases = body.get("aliases") if isinstance(body.get("aliases"), dict) else {}
            return [route.index or "", *aliases]
        if route.action in (routes.INDEX_OP_INDEX, routes.INDEX_OP_CREATE) and route.index:
            return [] if await self.names.exists(route.index) else [route.index]
        if route.action == routes.BULK:
            return await self._bulk_new_names(raw, route.index)
        if route.action == routes.ALIASES and route.handler == "alias_path":
            return [route.doc_id or ""]
        if route.action == routes.ALIASES:
            body = wire.parse_object(raw) or {}
            actions = body.get("actions") if isinstance(body.get("actions"), list) else []
            adds = [a["add"] for a in actions if isinstance(a, dict) and isinstance(a.get("add"), dict)]
            return [n for spec in adds for n in parts.names_of(spec, "alias", "aliases")]
        if route.action == routes.REINDEX:
            dest = (wire.parse_object(raw) or {}).get("dest")
            name = dest.get("index") if isinstance(dest, dict) else None
            return [name] if isinstance(name, str) and not await self.names.exists(name) else []
        return []

    async def _bulk_new_names(self, raw: bytes, default_index: str | None) -> list[str]:
        existing: set[str] | None = None
        new: list[str] = []
        lines = wire.ndjson_lines(raw)
        i = 0
        while i < len(lines):
            meta = wire.parse_json(lines[i], where=f"bulk line [{i + 1}]: ")
            # The superuser's items are the engine's to judge; only the names they would create are ours.
            op, spec = next(iter(meta.items())) if isinstance(meta, dict) and len(meta) == 1 else ("", {})
            i += 2 if op in ("index", "create", "update") else 1
            name = spec.get("_index", default_index) if isinstance(spec, dict) else None
            if isinstance(name, str) and op in ("index", "create"):
                if existing is None:
                    existing = set(await self.names.existing())
                if name not in existing:
                    new.append(name)
        return new

    def _check_license(self, principal: Principal) -> None:
        # With a licence that lacks DLS, Elasticsearch refuses requests whose
        # roles carry DLS instead of ignoring the restriction
        # (SecurityIndexReaderWrapper / XPackLicenseState DLS_FLS feature check).
        if self.license_type == "basic" and principal.permissions.has_dls():
            raise security_forbidden("current license is non-compliant for [field and document level security]")

    # ------------------------------------------------------------ cluster-level
    async def _h_cluster(self, req: Incoming, principal: Principal) -> web.Response:
        authorize_cluster(principal, req.route.action)
        path = _path([], *req.route.tail) or "/"
        resp = await self.engine(req.method, _with_query(path, req.forwarded_params()))
        return self._from_engine(resp, head=req.method == "HEAD")

    async def _h_index_template(self, req: Incoming, principal: Principal) -> web.Response:
        authorize_cluster(principal, req.route.action)
        body = req.json()
        if body is not None:
            parts.only_keys(
                body,
                {"index_patterns", "template", "composed_of", "priority", "version", "_meta", "data_stream"},
                "index template",
            )
        path = _with_query(
            _path([], "_index_template") + "/" + _segment(req.route.doc_id or ""), req.forwarded_params()
        )
        resp = await self.engine(req.method, path, wire.dumps(body) if body is not None else None, JSON)
        return self._from_engine(resp, head=req.method == "HEAD")

    # ----------------------------------------------------------------- searches
    async def _h_search(self, req: Incoming, principal: Principal) -> web.Response:
        return await self._search_like(req, principal, count=False)

    async def _h_count(self, req: Incoming, principal: Principal) -> web.Response:
        return await self._search_like(req, principal, count=True)

    async def _search_like(self, req: Incoming, principal: Principal, *, count: bool) -> web.Response:
        body = parts.with_uri_query(req.body(), req.params)
        expression = req.route.index or "_all"
        pit_id = None
        if "pit" in body:
            if not isinstance(body["pit"], dict) or not isinstance(body["pit"].get("id"), str):
                raise query_guard.parsing_error("[pit] needs an [id] string")
            pit_id = body["pit"]["id"]
            self._check_context_owner(principal, pit_id, required=True)
            if req.route.index != "_all":
                raise EsError(
                    400,
                    "action_request_validation_exception",
                    "Validation Failed: 1: [indices] cannot be used with point in time;",
                )
        allow_none = req.params.flag("allow_no_indices", True)
        if pit_id is not None:
            names = self._pit_indices.get(pit_id, [])
            for name in names:
                if not principal.permissions.allows_index(routes.SEARCH, name):
                    raise denied(principal, routes.SEARCH, [name])
        else:
            names = await self.resolver.resolve(principal, expression, routes.SEARCH, allow_no_indices=allow_none)
        if not names:
            return self._respond_json(200, parts.empty_search(count=count))
        query = await self.resolver.dls_for(principal, names, routes.SEARCH)
        body = await self.resolver.inspect(principal, body, names, dls_on=query is not None, count=count)
        if query is not None:
            body = dls.count_body(body, query) if count else dls.search_body(body, query)
        target = [] if pit_id is not None else names
        path = _with_query(_path(target, "_count" if count else "_search"), req.forwarded_params())
        resp = await self.engine("POST", path, wire.dumps(body), JSON)
        if resp.status == 200 and not count:
            result = resp.json()
            if req.params.get("scroll") and result.get("_scroll_id"):
                self._own(result["_scroll_id"], principal)
            if pit_id is not None and result.get("pit_id") and result["pit_id"] != pit_id:
                self._own(result["pit_id"], principal)
                self._pit_indices[result["pit_id"]] = names
        return self._from_engine(resp)

    async def _h_msearch(self, req: Incoming, principal: Principal) -> web.Response:
        lines = [
            wire.parse_json(line, where=f"msearch line [{n + 1}]: ") for n, line in enumerate(parts.lines(req.raw))
        ]
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
                expression = header.pop("index", None) or req.route.index
                if not expression:
                    raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: no indices;")
                allow_none = header.pop("allow_no_indices", True)
                header.pop("expand_wildcards", None)
                names = await self.resolver.resolve(principal, expression, routes.SEARCH, allow_no_indices=allow_none)
                if not names:
                    slots.append({**parts.empty_search(count=False), "status": 200})
                    continue
                query = await self.resolver.dls_for(principal, names, routes.SEARCH)
                body = await self.resolver.inspect(principal, body, names, dls_on=query is not None, budget=budget)
                if "pit" in body:
                    raise unsupported("POST", "_msearch", "a point in time inside msearch")
                if query is not None:
                    body = dls.search_body(body, query)
                forwarded.extend([{**header, "index": names}, body])
                slots.append(None)
            except EsError as err:
                slots.append({**err.body(), "status": err.status})
        responses: list[Any] = []
        took = 0
        if forwarded:
            path = _with_query("/_msearch", req.forwarded_params())
            resp = await self.engine("POST", path, wire.ndjson(forwarded), NDJSON)
            if resp.status != 200:
                return self._from_engine(resp)
            result = resp.json()
            took = result.get("took", 0)
            responses = result["responses"]
        merged, it = [], iter(responses)
        for slot in slots:
            merged.append(next(it) if slot is None else slot)
        return self._respond_json(200, {"took": took, "responses": merged})

    async def _h_get(self, req: Incoming, principal: Principal) -> web.Response:
        head = req.method == "HEAD"
        source_only = req.route.tail[:1] == ("_source",)
        name = await self.resolver.single(principal, req.route.index, routes.GET)
        query = await self.resolver.dls_for(principal, [name], routes.GET)
        sub = "_source" if source_only else "_doc"
        resp = await self.engine("GET", _with_query(_path([name], sub, req.route.doc_id), req.forwarded_params()))
        if source_only and resp.status == 404 and not head:
            # RestGetSourceAction.checkResource: a missing document is a resource_not_found_exception.
            return self._source_not_found(name, req.route.doc_id)
        if query is None or resp.status != 200:
            return self._from_engine(resp, head=head)
        concrete = name if source_only else resp.json().get("_index", name)
        if req.route.doc_id in await self.resolver.visible(concrete, [req.route.doc_id], query):
            return self._from_engine(resp, head=head)
        if head:
            return self._respond(404, {}, b"")
        if source_only:
            return self._source_not_found(name, req.route.doc_id)
        return self._respond_json(404, {"_index": concrete, "_id": req.route.doc_id, "found": False})

    def _source_not_found(self, name: str, doc_id: str | None) -> web.Response:
        err = EsError(404, "resource_not_found_exception", f"Document not found [{name}]/[{doc_id}]")
        return self._respond_json(404, err.body())

    async def _h_mget(self, req: Incoming, principal: Principal) -> web.Response:
        body = req.body()
        parts.only_keys(body, {"docs", "ids"}, "mget")
        docs = body.get("docs")
        if docs is None and "ids" in body:
            if not isinstance(body["ids"], list) or not all(isinstance(i, str) for i in body["ids"]):
                raise query_guard.parsing_error("[mget] [ids] must be an array of strings")
            docs = [{"_id": i} for i in body["ids"]]
        if not isinstance(docs, list) or not docs:
            raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: no documents to get;")
        items: list[dict[str, Any]] = []
        for n, doc in enumerate(docs):
            if not isinstance(doc, dict):
                raise query_guard.parsing_error(f"[mget] docs[{n}] must be an object")
            parts.only_keys(
                doc, {"_index", "_id", "routing", "_source", "stored_fields", "version", "version_type"}, "mget"
            )
            index = doc.get("_index", req.route.index)
            if not isinstance(doc.get("_id"), str) or not doc["_id"]:
                raise EsError(
                    400, "action_request_validation_exception", f"Validation Failed: 1: id is missing for doc {n};"
                )
            if not isinstance(index, str) or not index:
                raise EsError(
                    400, "action_request_validation_exception", f"Validation Failed: 1: index is missing for doc {n};"
                )
            items.append({**doc, "_index": index})
        # mget is authorised per item: an item on a forbidden index fails alone.
        answers: dict[int, dict[str, Any]] = {}
        for n, item in enumerate(items):
            try:
                item["_index"] = await self.resolver.single(principal, item["_index"], routes.MGET)
            except EsError as err:
                answers[n] = {"_index": item["_index"], "_id": item["_id"], "error": err.cause()}
        allowed = [item for n, item in enumerate(items) if n not in answers]
        if allowed:
            resp = await self.engine_json("POST", _with_query("/_mget", req.forwarded_params()), {"docs": allowed})
            if resp.status != 200:
                return self._from_engine(resp)
            fetched = iter(resp.json()["docs"])
            for n in range(len(items)):
                if n not in answers:
                    answers[n] = next(fetched)
        result = [answers[n] for n in range(len(items))]
        for requested, got in zip(items, result, strict=True):
            if not got.get("found"):
                continue
            query = await self.resolver.dls_for(principal, [requested["_index"]], routes.MGET)
            if query is not None and got["_id"] not in await self.resolver.visible(got["_index"], [got["_id"]], query):
                for key in list(got):
                    if key not in ("_index", "_id"):
                        del got[key]
                got["found"] = False
        return self._respond_json(200, {"docs": result})

    async def _h_explain(self, req: Incoming, principal: Principal) -> web.Response:
        name = await self.resolver.single(principal, req.route.index, routes.EXPLAIN)
        body = parts.with_uri_query(req.body(), req.params)
        parts.only_keys(body, {"query"}, "explain")
        if "query" not in body:
            raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: query is missing;")
        query = await self.resolver.dls_for(principal, [name], routes.EXPLAIN)
        body = await self.resolver.inspect(principal, body, [name], dls_on=query is not None, count=True)
        doc_id = req.route.doc_id
        if query is not None and doc_id not in await self.resolver.visible(name, [doc_id], query):
            # A hidden document answers exactly as a missing one: DLS removes it from the reader
            # the explanation is computed on (TransportExplainAction over DocumentSubsetReader).
            concrete = await self.names.concrete_one(name)
            return self._respond_json(404, {"_index": concrete, "_id": doc_id, "matched": False})
        if query is not None:
            body["query"] = dls.filtered_query(body["query"], query)
        path = _with_query(_path([name], "_explain", doc_id), req.forwarded_params())
        resp = await self.engine("POST", path, wire.dumps(body), JSON)
        return self._from_engine(resp)

    async def _h_field_caps(self, req: Incoming, principal: Principal) -> web.Response:
        names = await self.resolver.resolve(
            principal,
            req.route.index or "_all",
            routes.FIELD_CAPS,
            allow_no_indices=req.params.flag("allow_no_indices", True),
        )
        body = req.json()
        if body is not None:
            parts.only_keys(body, {"fields", "index_filter", "runtime_mappings"}, "field_caps")
            if "index_filter" in body:
                if await self.resolver.dls_for(principal, names, routes.FIELD_CAPS) is not None:
                    raise unsupported(req.method, req.path, "an index_filter under document level security")
                await self.resolver.inspect(principal, {"query": body["index_filter"]}, names, dls_on=False, count=True)
        if not names:
            return self._respond_json(200, {"indices": [], "fields": {}})
        path = _with_query(_path(names, "_field_caps"), req.forwarded_params())
        resp = await self.engine(req.method, path, wire.dumps(body) if body is not None else None, JSON)
        return self._from_engine(resp)

    async def _h_terms_enum(self, req: Incoming, principal: Principal) -> web.Response:
        names = await self.resolver.resolve(principal, req.route.index, routes.TERMS_ENUM)
        body = req.body()
        parts.only_keys(
            body,
            {"field", "string", "size", "timeout", "case_insensitive", "search_after", "index_filter"},
            "terms_enum",
        )
        if not names or await self.resolver.dls_for(principal, names, routes.TERMS_ENUM) is not None:
            # TransportTermsEnumAction skips shards whose DLS query is not match_all:
            # under DLS the API answers, but with no terms.
            shards = {"total": len(names), "successful": len(names), "failed": 0}
            return self._respond_json(200, {"_shards": shards, "terms": [], "complete": True})
        if "index_filter" in body:
            await self.resolver.inspect(principal, {"query": body["index_filter"]}, names, dls_on=False, count=True)
        path = _with_query(_path(names, "_terms_enum"), req.forwarded_params())
        return self._from_engine(await self.engine("POST", path, wire.dumps(body), JSON))

    async def _h_validate(self, req: Incoming, principal: Principal) -> web.Response:
        names = await self.resolver.resolve(principal, req.route.index, routes.VALIDATE_QUERY)
        if await self.resolver.dls_for(principal, names, routes.VALIDATE_QUERY) is not None:
            raise unsupported(req.method, req.path, "this API is not supported under document level security")
        body = parts.with_uri_query(req.body(), req.params)
        body = await self.resolver.inspect(principal, body, names, dls_on=False, count=True)
        if not names:
            return self._respond_json(200, {"_shards": {"total": 0, "successful": 0, "failed": 0}, "valid": True})
        path = _with_query(_path(names, "_validate", "query"), req.forwarded_params())
        return self._from_engine(await self.engine("POST", path, wire.dumps(body), JSON))

    # --------------------------------------------------------- scroll and PIT
    def _own(self, context_id: str, principal: Principal) -> None:
        if len(self._context_owner) >= _MAX_CONTEXTS:
            oldest = next(iter(self._context_owner))
            self._context_owner.pop(oldest)
            self._pit_indices.pop(oldest, None)
        self._context_owner[context_id] = principal.owner_key

    def _check_context_owner(self, principal: Principal, context_id: str, *, required: bool = True) -> None:
        # SecuritySearchOperationListener.ensureAuthenticatedUserIsSame: another user's context, or one
        # this gateway never handed out, is "missing".
        if self._context_owner.get(context_id) != principal.owner_key:
            raise EsError(404, "search_context_missing_exception", f"No search context found for id [{context_id}]")

    async def _h_scroll(self, req: Incoming, principal: Principal) -> web.Response:
        body = req.body()
        parts.only_keys(body, {"scroll_id", "scroll", "rest_total_hits_as_int"}, "scroll")
        given = [v for v in (req.route.doc_id, req.params.get("scroll_id"), body.get("scroll_id")) if v is not None]
        if not given or not all(isinstance(v, str) and v for v in given) or len(set(given)) != 1:
            raise EsError(
                400, "action_request_validation_exception", "Validation Failed: 1: scrollId is missing or given twice;"
            )
        scroll_id = given[0]
        self._check_context_owner(principal, scroll_id)
        forwarded: dict[str, Any] = {"scroll_id": scroll_id}
        keep = body.get("scroll", req.params.get("scroll"))
        if keep is not None:
            forwarded["scroll"] = P.time_value("scroll", str(keep))
        params = {k: v for k, v in req.forwarded_params().items() if k not in ("scroll", "scroll_id")}
        resp = await self.engine("POST", _with_query("/_search/scroll", params), wire.dumps(forwarded), JSON)
        if resp.status == 200:
            new_id = (resp.json() or {}).get("_scroll_id")
            if new_id and new_id != scroll_id:
                self._own(new_id, principal)
        return self._from_engine(resp)

    async def _h_clear_scroll(self, req: Incoming, principal: Principal) -> web.Response:
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
                self._check_context_owner(principal, scroll_id)
        resp = await self.engine_json("DELETE", "/_search/scroll", {"scroll_id": ids})
        if resp.status == 200:
            for scroll_id in ids:
                self._context_owner.pop(scroll_id, None)
        return self._from_engine(resp)

    async def _h_open_pit(self, req: Incoming, principal: Principal) -> web.Response:
        if not req.params.get("keep_alive"):
            raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: [keep_alive] is missing;")
        names = await self.resolver.resolve(principal, req.route.index, routes.OPEN_PIT, allow_no_indices=False)
        if req.json():
            raise query_guard.parsing_error("request does not support a body")
        path = _with_query(_path(names, "_pit"), req.forwarded_params())
        resp = await self.engine("POST", path)
        if resp.status == 200:
            pit_id = resp.json()["id"]
            self._own(pit_id, principal)
            self._pit_indices[pit_id] = names
        return self._from_engine(resp)

    async def _h_close_pit(self, req: Incoming, principal: Principal) -> web.Response:
        body = req.body()
        parts.only_keys(body, {"id"}, "close point in time")
        pit_id = body.get("id")
        if not isinstance(pit_id, str) or not pit_id:
            raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: id is missing;")
        self._check_context_owner(principal, pit_id)
        resp = await self.engine_json("DELETE", "/_pit", {"id": pit_id})
        if resp.status == 200:
            self._context_owner.pop(pit_id, None)
            self._pit_indices.pop(pit_id, None)
        return self._from_engine(resp)

    # ----------------------------------------------------------------- writes
    async def _h_index_doc(self, req: Incoming, principal: Principal) -> web.Response:
        create = req.route.action == routes.INDEX_OP_CREATE or req.params.get("op_type") == "create"
        action = routes.INDEX_OP_CREATE if create else routes.INDEX_OP_INDEX
        name = await self.resolver.writable(principal, req.route.index, action)
        document = req.json()
        if document is None:
            raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: source is missing;")
        sub = "_create" if req.route.action == routes.INDEX_OP_CREATE else "_doc"
        if req.route.doc_id is not None:
            parts.check_id(req.route.doc_id)
            path = _path([name], sub, req.route.doc_id)
        else:
            path = _path([name], "_doc")
        method = "PUT" if req.route.doc_id is not None else "POST"
        resp = await self.engine(method, _with_query(path, req.forwarded_params()), wire.dumps(document), JSON)
        return self._from_engine(resp)

    async def _h_delete_doc(self, req: Incoming, principal: Principal) -> web.Response:
        name = await self.resolver.single(principal, req.route.index, routes.DELETE)
        path = _with_query(_path([name], "_doc", req.route.doc_id), req.forwarded_params())
        return self._from_engine(await self.engine("DELETE", path))

    async def _h_update(self, req: Incoming, principal: Principal) -> web.Response:
        name = await self.resolver.single(principal, req.route.index, routes.UPDATE)
        if await self.resolver.dls_for(principal, [name], routes.UPDATE) is not None:
            raise parts.update_under_dls()
        body = req.json()
        if body is None:
            raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: script or doc is missing;")
        parts.only_keys(body, parts.UPDATE_KEYS, "update")
        path = _with_query(_path([name], "_update", req.route.doc_id), req.forwarded_params())
        return self._from_engine(await self.engine("POST", path, wire.dumps(body), JSON))

    async def _h_bulk(self, req: Incoming, principal: Principal) -> web.Response:
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
        lines = parts.lines(req.raw)
        items: list[_BulkItem] = []
        existing: set[str] | None = None
        i = 0
        while i < len(lines):
            meta = wire.parse_json(lines[i], where=f"bulk line [{i + 1}]: ")
            op, spec = parts.bulk_action(meta, i + 1)
            has_source = op in ("index", "create", "update")
            if has_source and i + 1 >= len(lines):
                raise EsError(
                    400, "illegal_argument_exception", "The bulk request must be terminated by a newline [\n]"
                )
            source_line = lines[i + 1] if has_source else None
            source = None
            if op == "update":
                source = parts.object(
                    wire.parse_json(source_line, where=f"bulk line [{i + 2}]: "), f"bulk line [{i + 2}]"
                )
            elif source_line is not None:
                wire.check_document(source_line, where=f"bulk line [{i + 2}]")
            if op == "update":
                parts.only_keys(source, parts.UPDATE_KEYS, f"bulk line [{i + 2}] update")
            i += 2 if has_source else 1
            item = _BulkItem(op, spec, spec.get("_index", req.route.index), source, source_line)
            items.append(item)
            try:
                index = item.index
                if not isinstance(index, str) or not index:
                    raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: index is missing;")
                if is_pattern(index) or "," in index:
                    raise parts.invalid_index_name(index) or unsupported("", index, "a bulk item takes one index name")
                if op in ("index", "create") and existing is None:
                    existing = set(await self.names.existing())
                if op not in ("index", "create") or index in existing:
                    item.on_shard = True  # authorised below, with the other items of its shard request
                else:
                    if not principal.permissions.allows_index(item.action, index):
                        raise denied(principal, item.action, [index])
                    parts.raise_if_invalid(index)
                    if not principal.permissions.allows_index(AUTO_CREATE, index):
                        raise denied(principal, AUTO_CREATE, [index])
                if "_id" in spec:
                    parts.check_id(spec["_id"])
            except EsError as err:
                item.error = err
        if not items:
            raise EsError(400, "action_request_validation_exception", "Validation Failed: 1: no requests added;")
        await self._bulk_authorize_shards(principal, [item for item in items if item.error is None and item.on_shard])
        forwarded: list[bytes] = []
        slots: list[Any] = []  # per item: None when forwarded, else its error item
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
        results: list[Any] = []
        took = 0
        errors = any(slot is not None for slot in slots)
        if forwarded:
            path = _with_query("/_bulk", req.forwarded_params())
            resp = await self.engine("POST", path, b"\n".join(forwarded) + b"\n", NDJSON)
            if resp.status != 200:
                return self._from_engine(resp)
            result = resp.json()
            took = result.get("took", 0)
            results = result["items"]
            errors = errors or bool(result.get("errors"))
        merged, it = [], iter(results)
        for slot in slots:
            merged.append(next(it) if slot is None else slot)
        return self._respond_json(200, {"errors": errors, "took": took, "items": merged})

    async def _bulk_authorize_shards(self, principal: Principal, items: list[_BulkItem]) -> None:
        """Sets ``error`` on the items refused: a whole shard request's when one of its names lacks
        ``bulk[s]``, else each item's own when its action is not granted on its name."""
        if not items:
            return
        # One name: one shard request whatever it resolves to, so no need to read the aliases.
        one_name = len({item.index for item in items}) == 1
        write_index = {} if one_name else (await self.names.read())[1]
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

    async def _h_by_query(self, req: Incoming, principal: Principal) -> web.Response:
        # The by-query APIs run their search with the caller's own privileges,
        # so they need read too, and only ever touch documents DLS lets them see.
        action = req.route.action
        allow_none = req.params.flag("allow_no_indices", True)
        names = await self.resolver.resolve(principal, req.route.index, action, allow_no_indices=allow_none)
        for name in names:
            if not principal.permissions.allows_index(routes.SEARCH, name):
                raise denied(principal, routes.SEARCH, [name])
        body = parts.with_uri_query(req.body(), req.params)
        update = action == routes.UPDATE_BY_QUERY
        parts.only_keys(body, {"query", "max_docs", "conflicts", "slice", *(("script",) if update else ())}, "by query")
        if update and "script" in body:
            # A script may turn an update into a delete (ctx.op = 'delete'); Elasticsearch authorizes the
            # resulting bulk items one by one, so the caller must be allowed to delete too.
            for name in names:
                if not principal.permissions.allows_index(routes.DELETE, name):
                    raise denied(principal, routes.DELETE, [name])
        if not names:
            return self._respond_json(200, parts.empty_by_query(updated=update))
        query = await self.resolver.dls_for(principal, names, routes.SEARCH)
        inspected = await self.resolver.inspect(
            principal, {"query": body.get("query", {"match_all": {}})}, names, dls_on=query is not None, count=True
        )
        body["query"] = (
            inspected["query"] if query is None else dls.filtered_query(inspected["query"], query, scoring=False)
        )
        path = _with_query(_path(names, "_update_by_query" if update else "_delete_by_query"), req.forwarded_params())
        return self._from_engine(await self.engine("POST", path, wire.dumps(body), JSON))

    async def _h_reindex(self, req: Incoming, principal: Principal) -> web.Response:
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
        names = await self.resolver.resolve(principal, src, routes.SEARCH, allow_no_indices=False)
        dest_action = routes.INDEX_OP_CREATE if dest.get("op_type") == "create" else routes.INDEX_OP_INDEX
        target = await self.resolver.writable(principal, dest["index"], dest_action)
        query = await self.resolver.dls_for(principal, names, routes.SEARCH)
        inspected = await self.resolver.inspect(
            principal, {"query": source.get("query", {"match_all": {}})}, names, dls_on=query is not None, count=True
        )
        filtered = inspected["query"] if query is None else dls.filtered_query(inspected["query"], query, scoring=False)
        body = {**body, "source": {**source, "index": names, "query": filtered}, "dest": {**dest, "index": target}}
        return self._from_engine(
            await self.engine("POST", _with_query("/_reindex", req.forwarded_params()), wire.dumps(body), JSON)
        )

    # ------------------------------------------------------------ index admin
    async def _h_index_admin(self, req: Incoming, principal: Principal) -> web.Response:
        """Index-level admin and metadata APIs over expanded, authorized names."""
        action = req.route.action
        reading = req.method in ("GET", "HEAD") or action == routes.REFRESH
        if not principal.permissions.grants_somewhere(action):
            raise denied(principal, action, [req.route.index or "_all"])
        if action == routes.DELETE_INDEX and any(is_pattern(p) for p in (req.route.index or "").split(",")):
            # action.destructive_requires_name defaults to true since 8.0.
            raise EsError(400, "illegal_argument_exception", "Wildcard expressions or all indices are not allowed")
        allow_none = req.params.flag("allow_no_indices", reading)
        names = await self.resolver.resolve(principal, req.route.index or "_all", action, allow_no_indices=allow_none)
        rest = req.route.tail
        if not names:
            return (
                self._respond_json(200, parts.empty_admin(action), {})
                if req.method != "HEAD"
                else self._respond(404, {}, b"")
            )
        body = req.json()
        if body is not None:
            if action == routes.PUT_MAPPING:
                parts.only_keys(body, parts.MAPPING_KEYS, "mapping")
            elif action == routes.PUT_SETTINGS:
                if not all(k == "index" or k == "settings" or k.startswith("index.") for k in body):
                    raise query_guard.parsing_error("settings must be [index] settings")
            else:
                raise query_guard.parsing_error("request does not support a body")
        path = _with_query(_path(names, *rest), req.forwarded_params())
        resp = await self.engine(req.method, path, wire.dumps(body) if body is not None else None, JSON)
        return self._from_engine(resp, head=req.method == "HEAD")

    async def _h_create_index(self, req: Incoming, principal: Principal) -> web.Response:
        name = req.route.index
        parts.raise_if_invalid(name)
        await self.resolver.resolve(principal, name, routes.CREATE_INDEX, allow_no_indices=False)
        body = req.json()
        if body is not None:
            parts.only_keys(body, {"settings", "mappings", "aliases"}, "create index")
            aliases = body.get("aliases") or {}
            if not isinstance(aliases, dict):
                raise query_guard.parsing_error("[aliases] must be an object")
            for alias in aliases:
                parts.raise_if_invalid(alias)
                # Creating an index with aliases needs the alias privilege on each alias too.
                await self.resolver.resolve(principal, alias, routes.ALIASES, allow_no_indices=False)
        path = _with_query(_path([name]), req.forwarded_params())
        return self._from_engine(await self.engine("PUT", path, wire.dumps(body) if body is not None else None, JSON))

    async def _h_resolve(self, req: Incoming, principal: Principal) -> web.Response:
        names = await self.resolver.resolve(principal, req.route.index, routes.RESOLVE_INDEX)
        if not names:
            return self._respond_json(200, {"indices": [], "aliases": [], "data_streams": []})
        path = _with_query("/_resolve/index/" + ",".join(_segment(n) for n in names), req.forwarded_params())
        return self._from_engine(await self.engine("GET", path))

    async def _h_alias_path(self, req: Incoming, principal: Principal) -> web.Response:
        """``PUT|DELETE /<index>/_alias/<name>``: the same rules as an ``_aliases`` action."""
        spec: dict[str, Any] = {"index": req.route.index, "alias": req.route.doc_id}
        body = req.json()
        if body is not None:
            parts.only_keys(body, parts.ALIAS_OPTIONS, "alias")
            spec.update(body)
        verb = "remove" if req.method == "DELETE" else "add"
        return await self._aliases(req, principal, [{verb: spec}])

    async def _h_aliases(self, req: Incoming, principal: Principal) -> web.Response:
        body = req.body()
        parts.only_keys(body, {"actions"}, "aliases")
        actions = body.get("actions")
        if not isinstance(actions, list) or not actions:
            raise EsError(
                400,
                "action_request_validation_exception",
                "Validation Failed: 1: [actions] requires at least one action;",
            )
        return await self._aliases(req, principal, actions)

    async def _aliases(self, req: Incoming, principal: Principal, actions: list[Any]) -> web.Response:
        rebuilt: list[dict[str, Any]] = []
        for n, action in enumerate(actions):
            if not isinstance(action, dict) or len(action) != 1:
                raise query_guard.parsing_error(f"[aliases] action [{n}] must be an object with one key")
            ((verb, spec),) = action.items()
            if verb not in ("add", "remove", "remove_index") or not isinstance(spec, dict):
                raise query_guard.parsing_error(f"[aliases] unknown action [{verb}]")
            parts.only_keys(spec, {"index", "indices", "alias", "aliases", *parts.ALIAS_OPTIONS}, f"[aliases] {verb}")
            indices = parts.names_of(spec, "index", "indices")
            aliases = parts.names_of(spec, "alias", "aliases")
            if not indices or (verb != "remove_index" and not aliases):
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
            concrete = await self.resolver.resolve(principal, ",".join(indices), index_action, allow_no_indices=False)
            if any(principal.permissions.dls_query(i, routes.ALIASES) is not None for i in concrete) and verb == "add":
                # security/authz/interceptor/IndicesAliasesRequestInterceptor.java
                raise EsError(
                    400,
                    "security_exception",
                    "Alias requests are not allowed for users who have field or document level security enabled on one of the indices",
                )
            out = {k: v for k, v in spec.items() if k in parts.ALIAS_OPTIONS}
            if "filter" in out:
                await self.resolver.inspect(principal, {"query": out["filter"]}, concrete, dls_on=False, count=True)
            out["indices"] = concrete
            if aliases:
                for alias in aliases:
                    if verb == "add":
                        parts.raise_if_invalid(alias)
                    elif is_pattern(alias):
                        raise unsupported(req.method, req.path, "alias wildcards in a remove action")
                    await self.resolver.resolve(principal, alias, routes.ALIASES, allow_no_indices=False)
                out["aliases"] = aliases
            rebuilt.append({verb: out})
        resp = await self.engine_json("POST", _with_query("/_aliases", req.forwarded_params()), {"actions": rebuilt})
        return self._from_engine(resp)
