"""Embeddings from any server speaking OpenAI's ``POST /embeddings``, with retries and backoff."""

from __future__ import annotations

import logging
import random
import threading
import time

import numpy as np
import requests
from django.core.exceptions import ImproperlyConfigured

from atlas_site.errors import DependencyUnavailable
from memory.inference.provider import texts_checked, unit_rows
from memory.inference.query_cache import DEFAULT_QUERY_CACHE_SIZE, QueryEmbeddingCache

logger = logging.getLogger(__name__)


class _RetryableFailure(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class OpenAIEmbeddingProvider:
    """Embeddings from a server speaking OpenAI's API: ``POST {base_url}/embeddings``.

    Sends ``{"model": model, "input": [texts]}`` in batches and reads ``data[i].embedding`` by
    ``index``. Rate limits (429), server errors (5xx), timeouts and refused connections are
    retried with exponential backoff and jitter (honouring ``Retry-After``); after the last
    attempt, or on any other refusal (a wrong key, an unknown model), it raises
    :class:`~atlas_site.errors.DependencyUnavailable` naming the server and the reason.
    Vectors are re-normalised: not every compatible server returns unit vectors.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        dims: int,
        *,
        timeout: float = 10.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        batch_size: int = 64,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
    ) -> None:
        if not base_url:
            raise ImproperlyConfigured("The embeddings API needs a base URL (ATLAS_EMBEDDING_API_URL).")
        if not model:
            raise ImproperlyConfigured("The embeddings API needs a model name (ATLAS_EMBEDDING_MODEL).")
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model_id = model
        self.dims = dims
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.batch_size = batch_size
        self.query_cache = QueryEmbeddingCache(query_cache_size)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._local = threading.local()  # requests.Session is not documented as thread-safe

    def __repr__(self) -> str:
        return f"<OpenAIEmbeddingProvider {self.model_id} at {self.url}>"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        texts = texts_checked(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed_batch(texts[start : start + self.batch_size]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        texts_checked([text])
        return self.query_cache.get_or_compute(text, lambda t: self._embed_batch([t])[0])

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        body = {"model": self.model_id, "input": texts}
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return self._post(body, len(texts))
            except _RetryableFailure as failure:
                if attempt + 1 == attempts:
                    raise DependencyUnavailable(
                        f"The embeddings API at {self.url} failed {attempts} times in a row "
                        f"(last: {failure.reason}); memories cannot be embedded until it recovers."
                    ) from failure
                delay = min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
                if failure.retry_after is not None:
                    delay = min(self.max_backoff, max(delay, failure.retry_after))
                logger.warning("embeddings API %s: %s; retrying in %.2fs", self.url, failure.reason, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _post(self, body: dict, expected: int) -> list[list[float]]:
        try:
            response = self._session().post(self.url, json=body, headers=self._headers, timeout=self.timeout)
        except requests.Timeout as exc:
            raise _RetryableFailure(f"no answer within {self.timeout:g}s") from exc
        except requests.ConnectionError as exc:
            raise _RetryableFailure("connection failed") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise _RetryableFailure(
                f"HTTP {response.status_code}{_error_detail(response)}",
                _retry_after(response.headers.get("Retry-After")),
            )
        if response.status_code != 200:
            hint = " (check ATLAS_EMBEDDING_API_KEY)" if response.status_code in (401, 403) else ""
            raise DependencyUnavailable(
                f"The embeddings API at {self.url} refused the request: HTTP {response.status_code}"
                f"{_error_detail(response)}{hint}."
            )
        return self._vectors(response, expected)

    def _vectors(self, response: requests.Response, expected: int) -> list[list[float]]:
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (ValueError, KeyError, TypeError) as exc:
            raise DependencyUnavailable(
                f"The embeddings API at {self.url} answered 200 with a body that is not an embeddings list."
            ) from exc
        if len(vectors) != expected or [item["index"] for item in items] != list(range(expected)):
            raise DependencyUnavailable(
                f"The embeddings API at {self.url} returned {len(vectors)} embeddings for {expected} inputs."
            )
        for vector in vectors:
            if len(vector) != self.dims:
                raise DependencyUnavailable(
                    f"The embeddings API at {self.url} returned {len(vector)}-dimensional vectors for model "
                    f"{self.model_id!r}, but the indices expect {self.dims} (ATLAS_EMBEDDING_DIMS)."
                )
        return unit_rows(np.asarray(vectors, dtype=np.float32))


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _error_detail(response: requests.Response) -> str:
    """The server's own error message (OpenAI's ``{"error": {"message"}}``), shortened."""
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = response.text
    message = " ".join(str(message or "").split())[:200]
    return f" ({message})" if message else ""
