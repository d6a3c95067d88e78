"""Requests measured (a middleware: count and latency by URL pattern and status, and the request's span),
and /metrics, answered only to the bearer of ATLAS_METRICS_TOKEN or to an address in ATLAS_METRICS_ALLOW.

/metrics is default-deny: with neither setting, every request is refused with a message saying which
to set. The client address is the connection's (REMOTE_ADDR), never a forwarded header a client can write.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import time
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from . import metrics as m
from .tracing import span_started

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"  # no URL pattern: a 404, never the path that was asked for


def route_of(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    return (match.route or match.view_name or UNMATCHED) if match is not None else UNMATCHED


def _observe(request: HttpRequest, status: int, started: float, current) -> None:
    route, method = route_of(request), request.method if request.method in METHODS else "other"
    m.HTTP_REQUESTS.labels(route, method, str(status)).inc()
    m.HTTP_LATENCY.labels(route, method, str(status)).observe(time.perf_counter() - started)
    if current is not None:
        current.update_name(f"{method} {route}")
        current.set_attribute("http.route", route)
        current.set_attribute("http.response.status_code", status)


def _request_span(request: HttpRequest):
    return span_started(f"HTTP {request.method}", **{"http.request.method": request.method or ""})


@sync_and_async_middleware
def requests_measured(get_response: Callable) -> Callable:
    """First in MIDDLEWARE: measures all the rest. Labels are the URL pattern (``api/v1/subjects/<str:subject>/
    recall``), so their number is bounded by the URL map, whatever paths clients send."""
    from asgiref.sync import iscoroutinefunction

    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponse:
            started = time.perf_counter()
            with _request_span(request) as current:
                response = await get_response(request)
                _observe(request, response.status_code, started, current)
            return response

    else:

        def middleware(request: HttpRequest) -> HttpResponse:
            started = time.perf_counter()
            with _request_span(request) as current:
                response = get_response(request)
                _observe(request, response.status_code, started, current)
            return response

    return middleware


MCP_ROUTE = "mcp"


async def asgi_measured(app, scope, receive, send) -> None:
    """An ASGI app served beside Django (the MCP endpoint) measured as the middleware measures Django's
    requests, under the one route ``mcp``: counted and timed when its response starts (a stream's
    length is not its latency), and a span for the request."""
    started, method = time.perf_counter(), scope.get("method", "")
    method = method if method in METHODS else "other"
    answered = False

    async def measured_send(message) -> None:
        nonlocal answered
        if message["type"] == "http.response.start" and not answered:
            answered = True
            status = str(message["status"])
            m.HTTP_REQUESTS.labels(MCP_ROUTE, method, status).inc()
            m.HTTP_LATENCY.labels(MCP_ROUTE, method, status).observe(time.perf_counter() - started)
            if current is not None:
                current.set_attribute("http.response.status_code", message["status"])
        await send(message)

    with span_started(f"{method} {MCP_ROUTE}", **{"http.request.method": method, "http.route": MCP_ROUTE}) as current:
        try:
            await app(scope, receive, measured_send)
        finally:
            if not answered:  # the app failed before answering: the server answers 500
                m.HTTP_REQUESTS.labels(MCP_ROUTE, method, "500").inc()
                m.HTTP_LATENCY.labels(MCP_ROUTE, method, "500").observe(time.perf_counter() - started)


@lru_cache(maxsize=8)
def _networks(allow: tuple[str, ...]) -> tuple:
    try:
        return tuple(ipaddress.ip_network(cidr.strip(), strict=False) for cidr in allow if cidr.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"ATLAS_METRICS_ALLOW: {exc}") from exc


def _address_allowed(request: HttpRequest) -> bool:
    networks = _networks(tuple(settings.ATLAS_METRICS_ALLOW))
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in networks)


def _refused(status: int, detail: str) -> HttpResponse:
    response = HttpResponse(detail + "\n", status=status, content_type="text/plain; charset=utf-8")
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def metrics_refusal(request: HttpRequest) -> HttpResponse | None:
    """None when the caller may read /metrics; else the 401/403 to answer."""
    token, allow = settings.ATLAS_METRICS_TOKEN, [c for c in settings.ATLAS_METRICS_ALLOW if c.strip()]
    if not token and not allow:
        return _refused(
            403,
            "metrics are off: set ATLAS_METRICS_TOKEN (a bearer token) or ATLAS_METRICS_ALLOW "
            "(CIDRs of the scrapers' addresses) to serve them",
        )
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, given = header.partition(" ")
        if token and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return None
        return _refused(403, "this token may not read the metrics")
    if _address_allowed(request):
        return None
    if token:
        return _refused(401, "the metrics need Authorization: Bearer <ATLAS_METRICS_TOKEN>")
    return _refused(403, "this address may not read the metrics (ATLAS_METRICS_ALLOW)")


def metrics_exposition(*, queue_depth: bool = True) -> bytes:
    """Every metric in Prometheus' text format: this process's, or with PROMETHEUS_MULTIPROC_DIR the sum of
    every process writing there; the queue depth read from the broker now."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        text = generate_latest(registry)
    else:
        text = generate_latest(REGISTRY)
    if queue_depth:
        from atlas_site.celery import app

        from .celery import QueueDepthCollector

        extra = CollectorRegistry()
        extra.register(QueueDepthCollector(app))
        text += generate_latest(extra)
    return text


def metrics_view(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        return _refused(405, "GET /metrics")
    refusal = metrics_refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(metrics_exposition(), content_type=CONTENT_TYPE_LATEST)
