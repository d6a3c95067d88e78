"""The Elasticsearch client's calls measured: a transport that times each call (its retries included) by
operation and counts the failed ones. Spans for the same calls come from the client itself: elasticsearch-py
opens one per API call on the global tracer provider once traces are on (its request bodies are left out:
OTEL_PYTHON_INSTRUMENTATION_ELASTICSEARCH_CAPTURE_SEARCH_QUERY stays at its default, omit)."""

from __future__ import annotations

import time
from typing import Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, Transport

from . import metrics as m


def engine_operation(target: str) -> str:
    """A bounded name for an Elasticsearch call: the first ``_`` segment of its path (``_msearch``, ``_doc``,
    ``_security``, ``_bulk`` …) — never an index name or a document id; ``index`` for index-level calls."""
    path = target.split("?", 1)[0]
    for segment in path.split("/"):
        if segment.startswith("_"):
            return segment[:40]
    return "index" if path.strip("/") else "root"


class MeasuredTransport(Transport):
    def perform_request(self, method: str, target: str, **kwargs: Any) -> Any:
        operation = engine_operation(target)
        started = time.perf_counter()
        try:
            response = super().perform_request(method, target, **kwargs)
        except ConnectionTimeout:
            m.ENGINE_ERRORS.labels(operation, "timeout").inc()
            raise
        except TransportConnectionError:
            m.ENGINE_ERRORS.labels(operation, "connection").inc()
            raise
        finally:
            m.ENGINE_LATENCY.labels(operation).observe(time.perf_counter() - started)
        if response.meta.status >= 400:
            m.ENGINE_ERRORS.labels(operation, str(response.meta.status)).inc()
        return response
