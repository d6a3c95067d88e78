"""``Atlas``: how a call goes over HTTP (httpx), retried within its budget; the settings both clients share."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from ._operations import Call, Operations
from ._retry import Attempts, Retry
from ._version import __version__
from .errors import ConnectionFailed


class Client(Operations):
    """A client's settings: the server's root URL (``/api/v1`` may end it), the token, the timeout of
    one attempt, and the retry budget of one call."""

    http_class: type[httpx.Client] | type[httpx.AsyncClient]

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, retry: Retry | None = None) -> None:
        self.retry = retry or Retry()
        self._http = self.http_class(
            base_url=base_url.rstrip("/").removesuffix("/api/v1"),
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "User-Agent": f"atlas-memory-client/{__version__}",
            },
            timeout=timeout,
        )


def request_of(call: Call) -> dict[str, Any]:
    return {"params": call.params, "json": call.json, "headers": call.headers}


def broken_stream(exc: httpx.TransportError) -> httpx.TransportError:
    raise ConnectionFailed(f"the stream broke after it began: {type(exc).__name__}: {exc}") from exc


def line_of(raw: str) -> dict[str, Any] | None:
    return json.loads(raw) if raw.strip() else None


class Atlas(Client):
    """The Atlas Memory REST API, one method per operation::

        with Atlas("http://127.0.0.1:8000", token) as atlas:
            turn = atlas.turn(subject="alice", text="I moved to Lisbon")
            print([hit.text for hit in turn.hits])

    ``retry`` bounds the retries (attempts and seconds; ``NEVER`` for none).
    """

    http_class = httpx.Client
    _http: httpx.Client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Atlas:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, call: Call) -> Any:
        attempts = Attempts(self.retry, call.kind)
        while True:
            try:
                outcome: httpx.Response | httpx.TransportError = self._http.request(
                    call.method, call.path, **request_of(call)
                )
            except httpx.TransportError as exc:
                outcome = exc
            settled = attempts.settle(outcome)
            if isinstance(settled, httpx.Response):
                return call.answer(settled)
            time.sleep(settled)

    def _pages(self, page: Callable[[Any], Call], items: str, by: str = "cursor") -> Iterator[Any]:
        cursor = None
        while True:
            answer = self._run(page(cursor))
            yield from getattr(answer, items)
            cursor = getattr(answer, f"next_{by}")
            if not cursor:
                return

    def _lines(self, call: Call) -> Iterator[dict[str, Any]]:
        """The stream's lines; opening it is retried as a read, a break once lines came is not (a stream
        cannot resume where it broke)."""
        attempts, yielded = Attempts(self.retry, call.kind), False
        while True:
            try:
                with self._http.stream(call.method, call.path, **request_of(call)) as response:
                    if response.is_success:
                        for raw in response.iter_lines():
                            if (line := line_of(raw)) is not None:
                                yielded = True
                                yield line
                        return
                    response.read()
                    outcome: httpx.Response | httpx.TransportError = response
            except httpx.TransportError as exc:
                outcome = broken_stream(exc) if yielded else exc
            time.sleep(attempts.wait(outcome))
