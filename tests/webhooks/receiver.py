"""A real HTTP receiver for webhook tests: a threaded server on loopback that records every request
(headers, raw body) and answers with the statuses it is given, in turn (the last one repeats)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    statuses: list[int] = field(default_factory=lambda: [200])
    location: str = ""  # the Location of a 3xx answer
    requests: list[Received] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def answer(self) -> int:
        n = len(self.requests) - 1
        return self.statuses[min(n, len(self.statuses) - 1)]


def receiver_start(receiver: Receiver) -> Receiver:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            receiver.requests.append(Received(self.path, dict(self.headers.items()), body))
            status = receiver.answer()
            self.send_response(status)
            if receiver.location:
                self.send_header("Location", receiver.location)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    receiver.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=receiver.server.serve_forever, daemon=True).start()
    return receiver
