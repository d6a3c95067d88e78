"""An Elasticsearch outage for page tests: the app pointed at a port nothing listens on, then restored."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def elasticsearch_unreachable(settings) -> Iterator[None]:
    from atlas_site.elastic.client import clients_reset

    original = settings.ATLAS_ES_URL
    settings.ATLAS_ES_URL = "http://127.0.0.1:9"  # nothing listens there
    settings.ATLAS_ES_REQUEST_TIMEOUT = 2
    clients_reset()
    try:
        yield
    finally:
        settings.ATLAS_ES_URL = original
        clients_reset()
