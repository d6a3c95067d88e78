"""memory.inference.openai_embeddings against a real local HTTP server speaking the embeddings API
(POST /embeddings, OpenAI's shapes: https://platform.openai.com/docs/api-reference/embeddings/create)."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from atlas_site.errors import DependencyUnavailable
from memory.inference.openai_embeddings import OpenAIEmbeddingProvider
from tests.memory.inference.support import DIMS, EmbeddingsAPI, api_vector, unit


def remote(api: EmbeddingsAPI, **options) -> OpenAIEmbeddingProvider:
    options = {"backoff": 0.01, "max_retries": 2, "timeout": 5.0, **options}
    return OpenAIEmbeddingProvider(api.base_url, "sk-test-key", "text-embedding-test", DIMS, **options)


def test_openai_provider_sends_the_embeddings_request_and_orders_by_index(api: EmbeddingsAPI) -> None:
    provider = remote(api)

    vectors = provider.embed_documents(["alpha", "beta", "gamma"])

    np.testing.assert_allclose(vectors, [unit(api_vector(t)) for t in ["alpha", "beta", "gamma"]], rtol=1e-6)
    assert [np.linalg.norm(v) for v in vectors] == pytest.approx([1.0, 1.0, 1.0])
    [request] = api.requests
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "text-embedding-test", "input": ["alpha", "beta", "gamma"]}
    assert request["headers"]["Authorization"] == "Bearer sk-test-key"
    assert request["headers"]["Content-Type"] == "application/json"
    assert provider.model_id == "text-embedding-test"
    assert provider.dims == DIMS


def test_openai_provider_batches_documents(api: EmbeddingsAPI) -> None:
    texts = ["one", "two", "three", "four", "five"]

    vectors = remote(api, batch_size=2).embed_documents(texts)

    assert api.bodies() == [
        {"model": "text-embedding-test", "input": ["one", "two"]},
        {"model": "text-embedding-test", "input": ["three", "four"]},
        {"model": "text-embedding-test", "input": ["five"]},
    ]
    np.testing.assert_allclose(vectors, [unit(api_vector(t)) for t in texts], rtol=1e-6)
    assert remote(api).embed_documents([]) == []
    assert len(api.requests) == 3


def test_openai_provider_retries_a_rate_limit_then_succeeds(api: EmbeddingsAPI) -> None:
    api.failures = [429]

    vector = remote(api).embed_query("retry me")

    assert vector == pytest.approx(unit(api_vector("retry me")))
    assert api.bodies() == [{"model": "text-embedding-test", "input": ["retry me"]}] * 2


def test_openai_provider_gives_up_on_a_persistent_server_error(api: EmbeddingsAPI) -> None:
    api.failures = [500] * 10

    with pytest.raises(DependencyUnavailable) as failure:
        remote(api, max_retries=2).embed_documents(["doomed"])

    message = failure.value.message
    assert f"The embeddings API at {api.base_url}/embeddings failed 3 times in a row" in message
    assert "HTTP 500 (upstream model crashed)" in message
    assert "sk-test-key" not in message
    assert failure.value.status == 503
    assert len(api.requests) == 3


def test_openai_provider_does_not_retry_a_refused_key(api: EmbeddingsAPI) -> None:
    api.failures = [401]

    with pytest.raises(
        DependencyUnavailable,
        match=r"refused the request: HTTP 401 \(Incorrect API key provided\) \(check ATLAS_EMBEDDING_API_KEY\)",
    ):
        remote(api).embed_query("hello")

    assert len(api.requests) == 1


def test_openai_provider_retries_timeouts_and_unreachable_servers(api: EmbeddingsAPI) -> None:
    api.failures = ["slow", "slow"]
    with pytest.raises(DependencyUnavailable, match=r"failed 2 times in a row \(last: no answer within 0.2s\)"):
        remote(api, timeout=0.2, max_retries=1).embed_query("slow")
    assert len(api.requests) == 2

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    unreachable = OpenAIEmbeddingProvider(
        f"http://127.0.0.1:{closed_port}/v1", None, "m", DIMS, backoff=0.01, max_retries=1
    )
    with pytest.raises(DependencyUnavailable, match=r"failed 2 times in a row \(last: connection failed\)"):
        unreachable.embed_query("anyone there?")


def test_openai_provider_refuses_vectors_of_the_wrong_size(api: EmbeddingsAPI) -> None:
    api.dims = 1536

    with pytest.raises(
        DependencyUnavailable, match=r"returned 1536-dimensional vectors .* expect 8 \(ATLAS_EMBEDDING_DIMS\)"
    ):
        remote(api).embed_query("too big")


def test_openai_provider_caches_query_embeddings(api: EmbeddingsAPI) -> None:
    provider = remote(api)

    first = provider.embed_query("same question")
    second = provider.embed_query("same question")

    assert first == second
    assert len(api.requests) == 1
