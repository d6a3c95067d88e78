"""Project-level views: the landing page and /healthz."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView

from memory.elastic.health import elasticsearch_health

log = logging.getLogger(__name__)


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema for API clients (YAML, or JSON by Accept or ``?format=json``); a browser, which
    asks for a page, is sent to the documentation page instead of downloading a file."""

    @extend_schema(exclude=True)  # as drf-spectacular's own view, with SERVE_INCLUDE_SCHEMA off
    def get(self, request, *args, **kwargs):
        if "format" not in request.query_params and _asks_for_html(request.headers.get("Accept", "")):
            return redirect("api-docs")
        return super().get(request, *args, **kwargs)


def _asks_for_html(accept: str) -> bool:
    return any(part.split(";", 1)[0].strip().lower() == "text/html" for part in accept.split(","))


def _database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True, "vendor": connection.vendor}


def _broker() -> dict:
    from atlas_site.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        return {
            "ok": True,
            "transport": conn.transport_cls
            if isinstance(conn.transport_cls, str)
            else settings.CELERY_BROKER_URL.split(":", 1)[0],
        }


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database, Elasticsearch (with isolation available) and the broker all answer; else 503."""
    checks: dict[str, dict] = {}
    for name, probe in (("database", _database), ("elasticsearch", elasticsearch_health), ("broker", _broker)):
        try:
            checks[name] = probe()
        except Exception as exc:  # a health check reports every failure, whatever its kind
            log.warning("health check %s failed: %s", name, exc)
            checks[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    healthy = all(c["ok"] for c in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": checks}, status=200 if healthy else 503
    )


def favicon(request: HttpRequest) -> HttpResponse:
    """The site's icon for pages that name none (the admin's, the API docs): resolved per request, as the
    static files' manifest exists only once collectstatic has run."""
    return HttpResponsePermanentRedirect(static("atlas/favicon.svg"))
