"""Running the synchronous services (Django ORM, Elasticsearch client) from the MCP app's event loop."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
from django.db import close_old_connections

T = TypeVar("T")


def _with_fresh_connections(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    # A worker thread keeps its database connection between calls; close it as Django does at the end
    # of a request (CONN_MAX_AGE), so a broken or stale connection is never reused.
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()


async def run_sync(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a worker thread: the ORM refuses to run on the event loop, and a
    recall's searches would block every other request on it."""
    return await anyio.to_thread.run_sync(functools.partial(_with_fresh_connections, fn, *args, **kwargs))
