"""The threads that embed a recall's question while its first search is in flight."""

from __future__ import annotations

import contextvars
from concurrent.futures import Future, ThreadPoolExecutor


class ContextThreadPool(ThreadPoolExecutor):
    """Runs each call in a copy of the submitter's context: a model's inference span is a child of the
    recall that asked for it (atlas_site/observability/tracing.py)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


QUERY_EMBEDDER = ContextThreadPool(max_workers=2, thread_name_prefix="atlas-query-embed")
