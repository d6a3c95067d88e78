"""The gateway dispatches a route to ``embedded_es.handlers.HANDLERS[route.handler]`` (gateway.py): every
handler name a route can carry has a handler there, and every handler there serves some route. Without a
server: routes are classified from paths built of every endpoint segment the route table knows."""

from __future__ import annotations

import itertools

from embedded_es import routes
from embedded_es.handlers import HANDLERS

_SEGMENTS = (
    "idx", "_all", "_doc", "_source", "_create", "_update", "_explain", "_search", "_count", "_msearch", "_mget",
    "_bulk", "_refresh", "_mapping", "_settings", "_alias", "_aliases", "_pit", "_field_caps", "_terms_enum",
    "_stats", "_validate", "query", "_resolve", "index", "1", "_cluster", "health", "_index_template",
    "_delete_by_query", "_update_by_query", "_reindex", "scroll",
)  # fmt: skip
_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE")


def _routed_handlers() -> set[str]:
    found = set()
    for length in range(4):
        for segments in itertools.product(_SEGMENTS, repeat=length):
            for method in _METHODS:
                route = routes.classify(method, "/" + "/".join(segments))
                if route.kind not in ("local", "unknown"):
                    found.add(route.handler)
    return found


def test_every_routed_handler_name_has_its_handler_and_every_handler_a_route() -> None:
    assert _routed_handlers() == set(HANDLERS)
