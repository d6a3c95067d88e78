"""The query-embedding cache every provider keeps: agents often repeat a recall query within a turn."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

DEFAULT_QUERY_CACHE_SIZE = 1024


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    size: int
    maxsize: int


class QueryEmbeddingCache:
    """A thread-safe LRU of query embeddings: agents often repeat a recall query within a turn.

    The vector is computed outside the lock, so a slow model never blocks cache hits of other
    threads; two threads missing the same text at once may both compute it (same result).
    """

    def __init__(self, maxsize: int = DEFAULT_QUERY_CACHE_SIZE) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def get_or_compute(self, text: str, compute: Callable[[str], list[float]]) -> list[float]:
        with self._lock:
            cached = self._entries.get(text)
            if cached is not None:
                self._entries.move_to_end(text)
                self._hits += 1
                return list(cached)
            self._misses += 1
        vector = compute(text)
        if self.maxsize > 0:
            with self._lock:
                self._entries[text] = tuple(vector)
                self._entries.move_to_end(text)
                while len(self._entries) > self.maxsize:
                    self._entries.popitem(last=False)
        return list(vector)

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._entries), self.maxsize)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = 0
