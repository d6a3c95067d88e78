"""``AsyncAtlas``: ``Atlas`` for asyncio. Its methods are ``Operations``' own, so its typed signatures live in
``_async.pyi``, generated from them (tests/clients/async_stub.py; a test fails when it is stale)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from ._client import Client, broken_stream, line_of, request_of
from ._operations import Call
from ._retry import Attempts


class AsyncAtlas(Client):
    """``Atlas`` for asyncio: the same methods, each returning an awaitable of the same answer (the
    ``*_iter`` methods and ``memory_export`` are async iterators)."""

    http_class = httpx.AsyncClient
    _http: httpx.AsyncClient

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncAtlas:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self, call: Call) -> Any:
        attempts = Attempts(self.retry, call.kind)
        while True:
            try:
                outcome: httpx.Response | httpx.TransportError = await self._http.request(
                    call.method, call.path, **request_of(call)
                )
            except httpx.TransportError as exc:
                outcome = exc
            settled = attempts.settle(outcome)
            if isinstance(settled, httpx.Response):
                return call.answer(settled)
            await asyncio.sleep(settled)

    async def _pages(self, page: Callable[[Any], Call], items: str, by: str = "cursor") -> AsyncIterator[Any]:
        cursor = None
        while True:
            answer = await self._run(page(cursor))
            for item in getattr(answer, items):
                yield item
            cursor = getattr(answer, f"next_{by}")
            if not cursor:
                return

    async def _lines(self, call: Call) -> AsyncIterator[dict[str, Any]]:
        attempts, yielded = Attempts(self.retry, call.kind), False
        while True:
            try:
                async with self._http.stream(call.method, call.path, **request_of(call)) as response:
                    if response.is_success:
                        async for raw in response.aiter_lines():
                            if (line := line_of(raw)) is not None:
                                yielded = True
                                yield line
                        return
                    await response.aread()
                    outcome: httpx.Response | httpx.TransportError = response
            except httpx.TransportError as exc:
                outcome = broken_stream(exc) if yielded else exc
            await asyncio.sleep(attempts.wait(outcome))
