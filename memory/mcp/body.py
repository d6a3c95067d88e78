"""The body of a POST to /mcp/, held to the rules every JSON interface keeps before the SDK reads it:
at most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes (the SDK reads a body whole, however long) and nested no
deeper than atlas_site.json_input allows (the REST API's parser applies the same check).

The SDK parses the body itself, so it is read here in full, checked, and replayed to the SDK unchanged.
"""

from __future__ import annotations

from django.conf import settings
from starlette.types import Message, Receive

from atlas_site.errors import ValidationFailed
from atlas_site.json_input import json_depth_check

PARSE_ERROR = -32700  # JSON-RPC: invalid JSON was received by the server
INVALID_REQUEST = -32600


class BodyRefused(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


async def body_checked(receive: Receive) -> Receive | None:
    """A ``receive`` that replays the request's checked body; None when the client went away first.

    Raises BodyRefused (413, or 400 for nesting) without handing anything to the SDK."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None  # http.disconnect: nobody to answer
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise BodyRefused(413, INVALID_REQUEST, f"the request body is larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    try:
        json_depth_check(body)
    except ValidationFailed as error:
        raise BodyRefused(400, PARSE_ERROR, error.message) from None
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()  # after the body: the disconnect, when it comes
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
