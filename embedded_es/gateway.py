"""The HTTP gateway: authenticates, dispatches, and talks to the engine.

Default deny. For every principal but the bootstrap superuser, a request is served only when
routes.py knows its endpoint, params.py knows each of its URL parameters, and its handler
(handlers/) understands its body (query_guard.py for search bodies); anything else is refused in
Elasticsearch's error shape. What reaches the engine is rebuilt from the parsed values: index
names expanded and authorized one by one (resolution.py), path segments escaped, the query string
generated from checked parameters, the body re-serialised. The superuser (the operator's own
credential, never a user's) is forwarded as sent, after the same bounded body reading and index
name checks.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from . import filter_path, routes, search_limits, wire
from . import params as P
from . import request_parts as parts
from .engine import ENGINE_TIMEOUT_SECONDS
from .errors import EsError, security_forbidden, unsupported
from .exchange import JSON, EngineResponse, Incoming, from_engine, respond, respond_json
from .handlers import HANDLERS
from .handlers.base import Backend, SearchContexts
from .journal import Journal, write_action
from .keystore import ApiKeyStore
from .principal import Authenticator, Principal
from .resolution import EngineNames, Resolver
from .routes import Route
from .security_api import SecurityApi

log = logging.getLogger(__name__)
_RETURN_HEADERS = ("content-type", "warning", "x-elastic-product", "location")


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
        # The engine's index and alias names, kept between requests; engine() tells it what each
        # request may do to them (resolution.EngineNames).
        self.names = EngineNames(self)
        self.contexts = SearchContexts()
        self.backend = Backend(engine=self, resolver=Resolver(self, self.names), contexts=self.contexts)
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
        self.contexts.clear()

    async def _engine_request(
        self, method: str, path_qs: str, body: bytes | None, content_type: str | None
    ) -> EngineResponse:
        assert self._session is not None
        headers = {"content-type": content_type} if content_type and body is not None else {}
        journaled = self.journal is not None and write_action(method, path_qs) is not None
        timeout = aiohttp.ClientTimeout(total=None if journaled else self.engine_timeout)
        try:
            async with self._session.request(
                method, URL(self.engine_url + path_qs, encoded=True), data=body, headers=headers, timeout=timeout
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
                return respond_json(status, payload)
            if principal.permissions.superuser:
                return await self._superuser(request, route, raw)
            return await self._dispatch(request, route, raw, principal)
        except EsError as err:
            if request.method == "HEAD":
                return respond(err.status, CIMultiDict(err.headers), b"")
            return respond_json(err.status, err.body(), CIMultiDict(err.headers))
        except Exception as exc:  # a gateway bug must still answer in Elasticsearch's shape, not as HTML
            log.exception("embedded_es gateway failed on %s %s", request.method, request.path)
            err = EsError(500, "exception", f"[embedded_es] internal gateway error: {type(exc).__name__}")
            return respond_json(500, err.body())

    async def _dispatch(self, request: web.Request, route: Route, raw: bytes, principal: Principal) -> web.Response:
        """A request by anyone but the superuser: to the handler of its route, over checked parameters."""
        self._check_license(principal)
        if route.kind == "unknown":
            raise unsupported(
                request.method, request.path, "the embedded gateway cannot authorize it for this credential"
            )
        params = P.parse(request.query_string, route.params, request.path)
        incoming = Incoming(request, route, params, raw)
        handler = HANDLERS[route.handler]
        if route.action in search_limits.SEARCH_ACTIONS:
            async with self.search_slots.slot(principal, route.action):
                response = await handler(self.backend, incoming, principal)
        else:
            response = await handler(self.backend, incoming, principal)
        return self._filtered(response, params.get("filter_path"))

    def _filtered(self, response: web.Response, spec: str | None) -> web.Response:
        if not spec or not response.body or not response.content_type.endswith("json"):
            return response
        shaped = filter_path.apply(json.loads(response.body), spec)
        return respond(response.status, {"Content-Type": JSON}, wire.dumps(shaped))

    def _check_license(self, principal: Principal) -> None:
        # With a licence that lacks DLS, Elasticsearch refuses requests whose
        # roles carry DLS instead of ignoring the restriction
        # (SecurityIndexReaderWrapper / XPackLicenseState DLS_FLS feature check).
        if self.license_type == "basic" and principal.permissions.has_dls():
            raise security_forbidden("current license is non-compliant for [field and document level security]")

    # ------------------------------------------------------------------ superuser
    async def _superuser(self, request: web.Request, route: Route, raw: bytes) -> web.Response:
        """The operator's credential: forwarded as sent, but no index or alias gets a name ES refuses, and no
        search past Elasticsearch's own limits reaches the engine (search_limits)."""
        for name in await self._names_created(route, raw):
            parts.raise_if_invalid(name)
        if route.action == routes.SEARCH and raw:  # _search and _count
            search_limits.superuser_check(raw, route.index or "_all")
        content_type = request.headers.get("content-type")
        resp = await self.engine(request.method, request.raw_path, raw if raw else None, content_type)
        return from_engine(resp, head=request.method == "HEAD")

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
