"""A real HTTP server between the SDK and the live server, to make the failures the SDK must survive.

It forwards each request to the live server, except that the first requests can be given another fate
(``script``): ``"503"`` answers a problem-details 503 with ``Retry-After: 1`` without forwarding;
``"lost"`` forwards it (the server acts on it) and then closes the connection without an answer, as a
timeout or a dropped link does; ``"cut"`` answers only the first line of the server's answer, then closes; a callable runs on the request's (path, headers, body) before it is
forwarded. Every request it receives is recorded.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

Fate = str | Callable[[str, dict[str, str], bytes], None]
RELAYED = ("Content-Type", "ETag", "Retry-After", "Idempotent-Replayed")


@dataclass
class Seen:
    method: str
    path: str
    idempotency_key: str | None


@dataclass
class Proxy:
    url: str
    script: list[Fate]
    seen: list[Seen] = field(default_factory=list)


def _handler(proxy: Proxy, upstream: httpx.Client, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet: pytest shows failures
            pass

        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
            with lock:
                proxy.seen.append(Seen(self.command, self.path, self.headers.get("Idempotency-Key")))
                fate = proxy.script.pop(0) if proxy.script else "forward"
            if fate == "503":
                self._answer(503, {"Content-Type": "application/problem+json", "Retry-After": "1"}, _UNAVAILABLE)
                return
            if callable(fate):
                fate(self.path, headers, body)
            answer = upstream.request(self.command, self.path, headers=headers, content=body)
            if fate == "lost":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            relayed = {k: answer.headers[k] for k in RELAYED if k in answer.headers}
            if fate == "cut":
                self._answer(answer.status_code, relayed, answer.content, cut_after=answer.content.index(b"\n") + 1)
                return
            self._answer(answer.status_code, relayed, answer.content)

        def _answer(self, status: int, headers: dict[str, str], body: bytes, cut_after: int | None = None) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:cut_after])
            if cut_after is not None:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

        do_GET = do_POST = do_PATCH = do_DELETE = _any

    return Handler


_UNAVAILABLE = json.dumps(
    {"type": "urn:atlas-memory:problem:unavailable", "title": "Service unavailable", "status": 503, "detail": "busy"}
).encode()


@contextmanager
def proxy_to(upstream_url: str, script: list[Fate]) -> Iterator[Proxy]:
    with httpx.Client(base_url=upstream_url, timeout=60) as upstream:
        server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        proxy = Proxy(url=f"http://127.0.0.1:{server.server_address[1]}", script=list(script))
        server.RequestHandlerClass = _handler(proxy, upstream, threading.Lock())
        thread = threading.Thread(target=server.serve_forever, name="sdk-proxy", daemon=True)
        thread.start()
        try:
            yield proxy
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
