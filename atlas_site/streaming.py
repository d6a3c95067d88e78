"""Streamed answers (exports) that really stream under ASGI and fail before their first byte.

Used by the dashboard's downloads and the REST export: both are interfaces over the same reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from itertools import chain
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest

T = TypeVar("T")


def streamed(request: HttpRequest, chunks: Iterator[str]) -> Iterator[str] | AsyncIterator[str]:
    """What ``StreamingHttpResponse`` should get so the download really streams.

    Under ASGI, Django consumes a synchronous iterator whole before sending a byte (core/handlers/
    asgi.py warns "must consume synchronous iterators"): 10,000 memories would sit in memory. An
    asynchronous iterator that pulls each chunk in the request's thread streams instead; the test
    client (WSGI) keeps the plain iterator.
    """
    if not isinstance(request, ASGIRequest):
        return chunks

    async def pulled() -> AsyncIterator[str]:
        step = sync_to_async(next, thread_sensitive=True)
        while (chunk := await step(chunks, None)) is not None:
            yield chunk

    return pulled()


def primed(items: Iterator[T], count: int = 2) -> Iterator[T]:
    """``items`` with its first ``count`` read now: an outage on the first read is the request's error
    (a 503 with a body that says so), not a download cut off after its status line."""
    first = [item for _, item in zip(range(count), items, strict=False)]
    return chain(first, items)
