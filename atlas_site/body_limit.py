"""ASGI wrapper: a request body sent without Content-Length (chunked) is held to DATA_UPLOAD_MAX_MEMORY_SIZE too.

Django refuses an oversized body by its declared Content-Length only (HttpRequest.body); its ASGI
handler reads a chunked body to the end, however long, so a 4 MiB chunked POST reached the API and
was refused for what it said (400) rather than for its size. This wrapper counts the chunks as they
arrive and answers 413 problem details as soon as the limit is passed, before Django reads more.
A chunked body within the limit goes on with the length it turned out to have: DRF reads a request
without a Content-Length as having no body at all, so without it a small chunked POST was "text:
This field is required".
"""

from __future__ import annotations

import json

from django.conf import settings

from atlas_site.api import PROBLEM_JSON


class ChunkedBodyLimit:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or any(name == b"content-length" for name, _ in scope.get("headers", ())):
            await self.app(scope, receive, send)  # a declared length: Django checks it (413 on the API)
            return
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        held: list[dict] = []
        size = 0
        while True:
            message = await receive()
            held.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if limit is not None and size > limit:
                await _too_large(send, limit)
                return
            if not message.get("more_body"):
                break

        async def replay() -> dict:
            return held.pop(0) if held else await receive()

        headers = [(k, v) for k, v in scope.get("headers", ()) if k != b"transfer-encoding"]
        scope = {**scope, "headers": [*headers, (b"content-length", str(size).encode())]}
        await self.app(scope, replay, send)


async def _too_large(send, limit: int) -> None:
    body = json.dumps(
        {
            "type": "urn:atlas-memory:problem:too_large",
            "title": "Request too large",
            "status": 413,
            "detail": f"the request body is larger than {limit} bytes",
        }
    ).encode()
    headers = [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
