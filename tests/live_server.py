"""A real HTTP server for interface tests: uvicorn serving ``atlas_site.asgi:application`` on a free port.

It runs in a thread of the test process, so it shares the test database; tests that use it need
``transactional_db`` (or ``@pytest.mark.django_db(transaction=True)``) so their rows are committed
and visible to the server's own connections. Requests go over real sockets through the whole ASGI
stack (middleware, routing, authentication, serialisation), exactly as an agent's would.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class LiveServer:
    url: str

    def __str__(self) -> str:
        return self.url


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def live_server(application, django_db_blocker) -> Iterator[LiveServer]:
    """Serve ``application`` with uvicorn (its lifespan included) in a thread until the block ends."""
    import uvicorn

    port = _free_port()
    config = uvicorn.Config(application, host="127.0.0.1", port=port, log_level="warning", lifespan="auto")
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # a thread may not install signal handlers

    def serve() -> None:
        with django_db_blocker.unblock():
            asyncio.run(server.serve())

    thread = threading.Thread(target=serve, name="live-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the live server did not start")
        time.sleep(0.02)
    try:
        yield LiveServer(url=f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def atlas_server(atlas_es, django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    from atlas_site.asgi import application

    with live_server(application, django_db_blocker) as server:
        yield server
