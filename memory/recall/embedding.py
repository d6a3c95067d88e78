"""The threads that embed a recall's question while its first search is in flight."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

QUERY_EMBEDDER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="atlas-query-embed")
