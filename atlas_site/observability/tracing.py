"""OpenTelemetry traces: off by default, on with the standard OTEL_* variables.

On when ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``: OTLP over HTTP/protobuf; ``console``), or when
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (then ``otlp``);
``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` keep them off. Everything else — the endpoint,
headers, timeout, sampler (``OTEL_TRACES_SAMPLER``), batch sizes (``OTEL_BSP_*``), ``OTEL_SERVICE_NAME``
(default ``atlas-memory``) and ``OTEL_RESOURCE_ATTRIBUTES`` — the SDK reads itself.

Spans carry ids (tenant, subject, task, model, route), never a memory's text, a question or a token.
While off, :func:`span` is a null context: no tracer is asked for anything.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

log = logging.getLogger(__name__)
DEFAULT_SERVICE_NAME = "atlas-memory"
_tracer: Any = None
_provider: Any = None


def tracing_enabled() -> bool:
    return _tracer is not None


def _exporters_from_env() -> list[str]:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = [name.strip().lower() for name in os.environ.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()]
    if not named and (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        named = ["otlp"]
    return [name for name in named if name != "none"]


def _exporter(name: str) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name == "otlp":
        protocol = os.environ.get(
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        )
        if protocol != "http/protobuf":
            raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: Atlas exports OTLP over http/protobuf only")
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
            if os.environ.get(name) == "":  # compose passes an unset variable on as empty: the default then
                del os.environ[name]
        return OTLPSpanExporter()
    raise ValueError(f"OTEL_TRACES_EXPORTER names {name!r}: Atlas knows otlp, console and none")


def tracing_configure(*, processor: Any = None) -> bool:
    """Start tracing from the OTEL_* variables (or with ``processor``, e.g. an in-memory exporter's, in
    tests); True when traces are on. Once per process: OpenTelemetry's tracer provider is global."""
    global _tracer, _provider
    if _tracer is not None:
        return True
    names = [] if processor is not None else _exporters_from_env()
    if processor is None and not names:
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: DEFAULT_SERVICE_NAME}
    provider = TracerProvider(resource=Resource.create(attributes))
    for processor_of in [processor] if processor is not None else [BatchSpanProcessor(_exporter(n)) for n in names]:
        provider.add_span_processor(processor_of)
    # Global, for the spans the Elasticsearch client opens itself; once set, a process keeps it.
    trace.set_tracer_provider(provider)
    _provider, _tracer = provider, provider.get_tracer("atlas-memory")
    log.info("traces on: %s", ", ".join(names) or type(processor).__name__)
    return True


def span(name: str, **attributes: Any):
    """A child span of the current one for the block (a null context while traces are off)."""
    if _tracer is None:
        return nullcontext()
    return span_started(name, **attributes)


@contextmanager
def span_started(name: str, **attributes: Any) -> Iterator[Any]:
    """Like :func:`span`, yielding the span (None while off) so the block can add to it. An exception
    marks the span failed with its type only: the SDK's default would record its message, which may
    quote what failed (an engine error can echo a query)."""
    if _tracer is None:
        yield None
        return
    from opentelemetry.trace import Status, StatusCode

    kept = {k: v for k, v in attributes.items() if v is not None}
    with _tracer.start_as_current_span(
        name, attributes=kept, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_attribute("error.type", type(exc).__name__)
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def span_tag(**attributes: Any) -> None:
    """Add ids to the current span (the request's or the task's): tenant, subject. Never texts."""
    if _tracer is None:
        return
    from opentelemetry import trace

    current = trace.get_current_span()
    for key, value in attributes.items():
        if value is not None:
            current.set_attribute(key, value)


def tracer() -> Any:
    return _tracer


def tracing_reset() -> None:
    """Traces off again (tests): this module's spans stop and the provider is shut down, so the spans
    the Elasticsearch client still opens on it are dropped."""
    global _tracer, _provider
    if _provider is not None:
        _provider.shutdown()
    _tracer = _provider = None
