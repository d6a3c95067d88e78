"""Rerank providers: none (default), an HTTP ``/rerank`` API, or an Elasticsearch inference endpoint.

A reranker reorders the fused candidates by a cross-encoder's relevance; the
time decay still applies afterwards, so an old episode does not jump back to
the top on relevance alone.
"""

from __future__ import annotations

import time
from datetime import datetime
from functools import lru_cache
from typing import Any, Protocol

import requests
from django.conf import settings

from atlas_site.errors import DependencyUnavailable
from atlas_site.observability.hooks import inference
from memory import recall_constants as rc


class RerankProvider(Protocol):
    name: str

    def scores(self, query: str, texts: list[str]) -> list[float]:
        """One relevance score per text, in the order given."""


class HttpRerankProvider:
    """The ``/rerank`` shape served by text-embeddings-inference ({query, texts} → [{index, score}]) and by
    Jina/Cohere ({query, documents, model, top_n} → {results: [{index, relevance_score}]}); both answers are read."""

    name = "http"

    def __init__(self, *, url: str, api_key: str = "", model: str = "", timeout: float = 2.0) -> None:
        self.url = url
        self.model = model
        self.timeout = timeout
        self.session = requests.Session()
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"

    def scores(self, query: str, texts: list[str]) -> list[float]:
        body: dict[str, Any] = {"query": query, "texts": texts, "documents": texts, "top_n": len(texts)}
        if self.model:
            body["model"] = self.model
        data = _post_json(self.session, self.url, body, self.timeout, "the rerank service")
        results = data["results"] if isinstance(data, dict) else data
        out = [0.0] * len(texts)
        for item in results:
            out[item["index"]] = float(item.get("relevance_score", item.get("score", 0.0)))
        return out


class ElasticsearchRerankProvider:
    """An inference endpoint of the cluster: POST _inference/rerank/<id> {query, input} → {rerank: [{index, relevance_score}]}."""

    name = "elasticsearch"

    def __init__(self, *, inference_id: str, timeout: float = 2.0, client: Any = None) -> None:
        self.inference_id = inference_id
        self.timeout = timeout
        self._client = client

    def scores(self, query: str, texts: list[str]) -> list[float]:
        from atlas_site.elastic.client import bootstrap_client, es_errors

        with es_errors("rerank with the inference endpoint"):
            response = (
                (self._client or bootstrap_client())
                .options(request_timeout=self.timeout)
                .perform_request(
                    "POST",
                    f"/_inference/rerank/{self.inference_id}",
                    headers={"content-type": "application/json", "accept": "application/json"},
                    body={"query": query, "input": texts},
                )
            )
        out = [0.0] * len(texts)
        for item in response.body["rerank"]:
            out[item["index"]] = float(item["relevance_score"])
        return out


def _post_json(session: requests.Session, url: str, body: dict[str, Any], timeout: float, what: str) -> Any:
    last_error = ""
    for attempt in range(3):
        try:
            response = session.post(url, json=body, timeout=timeout)
        except requests.RequestException as exc:
            last_error = str(exc)
        else:
            if response.status_code == 200:
                return response.json()
            last_error = f"HTTP {response.status_code}"
            if response.status_code not in (429, 500, 502, 503, 504):
                break
        time.sleep(0.1 * 2**attempt)
    raise DependencyUnavailable(f"{what} failed ({last_error})")


@lru_cache(maxsize=1)
def rerank_provider() -> RerankProvider:
    kind = settings.ATLAS_RERANK_PROVIDER
    if kind == "http":
        if not settings.ATLAS_RERANK_URL:
            raise DependencyUnavailable("ATLAS_RERANK_PROVIDER=http needs ATLAS_RERANK_URL")
        return HttpRerankProvider(
            url=settings.ATLAS_RERANK_URL,
            api_key=settings.ATLAS_RERANK_API_KEY,
            model=settings.ATLAS_RERANK_MODEL,
            timeout=settings.ATLAS_RERANK_TIMEOUT,
        )
    if kind == "elasticsearch":
        if not settings.ATLAS_RERANK_INFERENCE_ID:
            raise DependencyUnavailable("ATLAS_RERANK_PROVIDER=elasticsearch needs ATLAS_RERANK_INFERENCE_ID")
        return ElasticsearchRerankProvider(
            inference_id=settings.ATLAS_RERANK_INFERENCE_ID, timeout=settings.ATLAS_RERANK_TIMEOUT
        )
    raise DependencyUnavailable("no rerank provider is configured (ATLAS_RERANK_PROVIDER is 'none')")


def _age_days(value: str | None, now: datetime) -> float:
    if not value:
        return 0.0
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return (now - when).total_seconds() / 86400


def hit_decay(source: dict[str, Any], now: datetime) -> float:
    """The decay factor recall's function_score gave this hit (episodes by time, facts by last use)."""
    memory_type = source.get("memory_type")
    if memory_type == "episodic":
        return rc.decay_multiplier(_age_days(source.get("timestamp"), now))
    if memory_type in ("semantic", "archive") and source.get("last_used_at"):
        return rc.decay_multiplier(_age_days(source["last_used_at"], now))
    return 1.0


def reranked(
    provider: RerankProvider, query: str, fused: list[tuple[str, float, dict]], *, now: datetime
) -> list[tuple[str, float, dict]]:
    texts = [hit["_source"].get("text") or "" for _, _, hit in fused]
    with inference(getattr(provider, "model", "") or getattr(provider, "inference_id", "") or "rerank", "rerank"):
        relevance = provider.scores(query, texts)
    rescored = [
        (memory_id, relevance[i] * hit_decay(hit["_source"], now), hit) for i, (memory_id, _, hit) in enumerate(fused)
    ]
    return sorted(rescored, key=lambda item: (-item[1], item[0]))


def rerank_reset() -> None:
    rerank_provider.cache_clear()
