"""Content-Security-Policy on every response: no inline scripts, nothing from another origin.

Django 5.2 has no CSP of its own (6.0 adds one); this is the small middleware we need until then.
The policy is ``ATLAS_CSP``; ``ATLAS_CSP_PATHS`` gives a different one to a path prefix — the API
docs pages, whose Swagger UI and Redoc bundles set styles inline and Redoc starts its search worker
from a blob: URL. No page, those included, may run an inline script: Swagger UI's start-up script
comes from its own URL (drf-spectacular's split view) and Redoc needs none.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware

HEADER = "Content-Security-Policy"


def policy_for(path: str) -> str:
    for prefix, policy in settings.ATLAS_CSP_PATHS:
        if path.startswith(prefix):
            return policy
    return settings.ATLAS_CSP


@sync_and_async_middleware
def content_security_policy(get_response: Callable) -> Callable:
    from asgiref.sync import iscoroutinefunction

    def stamped(request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if HEADER not in response:  # a view that sets its own (stricter) policy keeps it
            response[HEADER] = policy_for(request.path)
        return response

    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponse:
            return stamped(request, await get_response(request))

    else:

        def middleware(request: HttpRequest) -> HttpResponse:
            return stamped(request, get_response(request))

    return middleware
