"""The threads that run a write's or an import's inferences, shared fairly between tenants.

Inference is the costly part of a write (a long text's embeddings take most of a second). With one
first-come queue, four long writes of one tenant put a dozen inferences ahead of another tenant's
short turn, which waited seconds behind them (benchmarks/long_texts.py). Here each caller names a
lane (its tenant) and the workers take one task per lane in turn: a newcomer waits for at most one
task of each busy lane, whatever those lanes have queued. Within a lane tasks run in order.
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from django.conf import settings

_T = TypeVar("_T")


class FairPool:
    """``workers`` daemon threads taking tasks round-robin across lanes."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lanes: OrderedDict[str, deque[tuple[Future, Callable[[], Any]]]] = OrderedDict()
        self._ready = threading.Condition()
        self._closed = False
        self.threads = [
            threading.Thread(target=self._work, name=f"atlas-embed-{n}", daemon=True) for n in range(workers)
        ]
        for thread in self.threads:
            thread.start()

    def submit(self, lane: str, task: Callable[[], _T]) -> Future:
        future: Future = Future()
        task = functools.partial(contextvars.copy_context().run, task)  # its spans are the caller's children
        with self._ready:
            self._lanes.setdefault(lane, deque()).append((future, task))
            self._ready.notify()
        return future

    def close(self) -> None:
        """Let the workers end once what was submitted has run."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def _next(self) -> tuple[Future, Callable[[], Any]] | None:
        with self._ready:
            while not self._lanes:
                if self._closed:
                    return None
                self._ready.wait()
            lane, queue = next(iter(self._lanes.items()))
            item = queue.popleft()
            del self._lanes[lane]
            if queue:
                self._lanes[lane] = queue  # to the back: every other lane's next task goes first
            return item

    def _work(self) -> None:
        while (item := self._next()) is not None:
            future, task = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(task())
            except BaseException as exc:  # handed to the caller, who re-raises it
                future.set_exception(exc)


_pool: FairPool | None = None
_pool_lock = threading.Lock()


def _pool_forget() -> None:
    """A forked child (a prefork Celery worker) has none of its parent's threads: it builds its own pool."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_pool_forget)


def embedding_workers() -> int:
    """ATLAS_EMBEDDING_WORKERS: how many inferences run at once (1: one after the other, in the caller)."""
    return max(1, int(getattr(settings, "ATLAS_EMBEDDING_WORKERS", 1) or 1))


def embeddings_run(tasks: Sequence[Callable[[], _T]], *, lane: str) -> list[_T]:
    """Run ``tasks`` (inferences: the engines release the GIL) on ATLAS_EMBEDDING_WORKERS threads, in
    ``lane``'s turn (the caller's tenant), and return their results in order. Each model's session runs
    one thread per inference (ATLAS_EMBEDDING_THREADS), so the workers spread a batch over the cores
    without oversubscribing them. Never call it from inside a task (the pool is bounded)."""
    workers = embedding_workers()
    if workers == 1:
        return [task() for task in tasks]
    global _pool
    with _pool_lock:
        if _pool is None or _pool.workers != workers:
            if _pool is not None:
                _pool.close()
            _pool = FairPool(workers)
        pool = _pool
    futures = [pool.submit(lane, task) for task in tasks]
    return [future.result() for future in futures]
