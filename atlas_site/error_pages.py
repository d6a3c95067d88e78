"""How a domain error becomes a web page, the same in the person's dashboard and the tenant section."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from atlas_site.errors import AtlasError, DependencyUnavailable

log = logging.getLogger(__name__)


def error_page(request: HttpRequest, error: AtlasError) -> HttpResponse:
    """A domain error as a page: what failed, in words, with the status it stands for."""
    if isinstance(error, DependencyUnavailable):
        log.warning("dashboard %s: %s", request.path, error.message)
    titles = {404: "Not found", 503: "Temporarily unavailable", 409: "Changed meanwhile", 412: "Changed meanwhile"}
    return render(
        request,
        "dashboard/error.html",
        {"title": titles.get(error.status, "That did not work"), "error": error},
        status=error.status,
    )
