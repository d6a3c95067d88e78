"""The Elasticsearch client's calls measured: a transport that times each call (its retries included) by
operation, counts the failed ones and, while traces are on, is a span per call.

elasticsearch-py has spans of its own, which record an error's message (an engine error may echo the
query, and so a question); they are off unless OTEL_PYTHON_INSTRUMENTATION_ELASTICSEARCH_ENABLED says
otherwise, set before any client exists (the client reads it when it is made)."""

from __future__ import annotations

import os
import time
from typing import Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, Transport

from . import metrics as m
from .tracing import span_started

os.environ.setdefault("OTEL_PYTHON_INSTRUMENTATION_ELASTICSEARCH_ENABLED", "false")


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
            with span_started(
                f"elasticsearch {operation}",
                **{"db.system": "elasticsearch", "db.operation": operation, "http.request.method": method},
            ) as current:
                response = super().perform_request(method, target, **kwargs)
                if current is not None:
                    current.set_attribute("http.response.status_code", response.meta.status)
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
