"""memory.inference.query_cache: the least recently used query is the one forgotten."""

from __future__ import annotations

from memory.inference.query_cache import QueryEmbeddingCache


def test_query_cache_evicts_the_least_recently_used_text() -> None:
    computed: list[str] = []
    cache = QueryEmbeddingCache(maxsize=2)

    def compute(text: str) -> list[float]:
        computed.append(text)
        return [float(len(text))]

    for text in ["a", "bb", "a", "ccc", "bb", "a"]:
        cache.get_or_compute(text, compute)

    # "bb" was the least recently used when "ccc" arrived; then "a" was when "bb" came back.
    assert computed == ["a", "bb", "ccc", "bb", "a"]
    assert cache.info() == (1, 5, 2, 2)
