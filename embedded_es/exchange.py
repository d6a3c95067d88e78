"""What passes through the gateway: a request as it understood it, the engine's answer, and the answers it sends.

Shared by the gateway (gateway.py), name resolution (resolution.py) and the request handlers (handlers/),
so none of them imports another's module to reach the engine or to answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from aiohttp import web
from multidict import CIMultiDict

from . import params as P
from . import wire
from .routes import Route

JSON = "application/json"
NDJSON = "application/x-ndjson"
# Gateway-resolved parameters: the engine gets concrete names, so these never travel on.
_CONSUMED = (*P.URI_QUERY, "allow_no_indices", "expand_wildcards", "filter_path")


class EngineResponse:
    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class Engine(Protocol):
    """The engine as the gateway reaches it: every request through ``engine`` (gateway.Gateway)."""

    async def engine(
        self, method: str, path_qs: str, body: bytes | None = None, content_type: str | None = None
    ) -> EngineResponse: ...

    async def engine_json(self, method: str, path_qs: str, body: Any = None) -> EngineResponse: ...


class Incoming:
    """One request as the gateway understood it: its route, checked parameters and decoded body."""

    def __init__(self, request: web.Request, route: Route, params: P.Params, raw: bytes) -> None:
        self.request = request
        self.method = request.method
        self.path = request.path
        self.route = route
        self.params = params
        self.raw = raw
        self._json: Any = None
        self._parsed = False

    def json(self) -> dict[str, Any] | None:
        if not self._parsed:
            self._json = wire.parse_object(self.raw)
            self._parsed = True
        return self._json

    def body(self) -> dict[str, Any]:
        return dict(self.json() or {})

    def forwarded_params(self, *also_drop: str) -> dict[str, str]:
        return self.params.without((*_CONSUMED, *also_drop))


# ------------------------------------------------------------------ engine paths
def segment(name: str) -> str:
    # "." and ".." are names here (an id, an index expression), never a step up the path: escaped, and the
    # engine is called with the path as given (gateway._engine_request), so nothing normalises them away.
    if name in (".", ".."):
        return name.replace(".", "%2E")
    return quote(name, safe="")


def path(names: Iterable[str], *rest: str) -> str:
    """A URL path from unescaped parts: ``/<names,joined>/<rest>...``, every part escaped."""
    joined = ",".join(segment(n) for n in names)
    tail = "".join("/" + segment(r) for r in rest)
    return ("/" + joined if joined else "") + tail


def with_query(path: str, params: Mapping[str, str]) -> str:
    return path + ("?" + urlencode(params) if params else "")


# ------------------------------------------------------------------ answers
def respond(status: int, headers: Mapping[str, str], body: bytes) -> web.Response:
    out = CIMultiDict(headers)
    if "X-Elastic-Product" not in out:
        out["X-Elastic-Product"] = "Elasticsearch"
    if "Content-Type" not in out:
        out["Content-Type"] = JSON
    return web.Response(status=status, body=body, headers=out)


def respond_json(status: int, obj: Any, headers: Mapping[str, str] | None = None) -> web.Response:
    return respond(status, headers or {}, wire.dumps(obj))


def from_engine(resp: EngineResponse, *, head: bool = False) -> web.Response:
    return respond(resp.status, resp.headers, b"" if head else resp.body)
