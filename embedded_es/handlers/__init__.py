"""The gateway's request handlers, one module per group of Elasticsearch APIs.

``HANDLERS`` maps the handler name a route carries (routes.py) to its function; gateway.py dispatches
through it. Every handler takes ``(gw: base.Backend, req, principal)`` and never imports the gateway.
"""

from __future__ import annotations

from . import contexts, documents, indices, search
from .base import Handler

HANDLERS: dict[str, Handler] = {**search.HANDLERS, **contexts.HANDLERS, **documents.HANDLERS, **indices.HANDLERS}
