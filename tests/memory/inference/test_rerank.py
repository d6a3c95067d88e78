"""Rerank providers against a real local HTTP server speaking each API (the only fakes: paid services)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from elasticsearch import Elasticsearch

from atlas_site.errors import DependencyUnavailable
from memory.inference.rerank import ElasticsearchRerankProvider, HttpRerankProvider, rerank_reset
from memory.recall import RecallOptions, memory_recall
from memory.services.writes import episode_write


class RerankServer:
    """Scores each text by how many query words it contains; records every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict]] = []
        self.fail_next = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body))
                if server.fail_next:
                    server.fail_next -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                query_words = set(body["query"].lower().split())
                texts = body.get("texts") or body.get("documents") or body.get("input")
                scores = [len(query_words & set(t.lower().split())) / (1 + len(query_words)) for t in texts]
                if self.path == "/rerank":  # text-embeddings-inference
                    out = sorted(({"index": i, "score": s} for i, s in enumerate(scores)), key=lambda r: -r["score"])
                elif self.path == "/v1/rerank":  # Cohere / Jina
                    out = {
                        "results": sorted(
                            ({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
                            key=lambda r: -r["relevance_score"],
                        )
                    }
                else:  # Elasticsearch inference API
                    out = {"rerank": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}
                data = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("X-Elastic-Product", "Elasticsearch")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = RerankServer()
    yield s
    s.close()


TEXTS = ["red apples", "green pears and red apples", "bananas"]


@pytest.mark.parametrize("path", ["/rerank", "/v1/rerank"])
def test_http_rerank_reads_both_answer_shapes(server, path) -> None:
    provider = HttpRerankProvider(url=server.url + path, api_key="k", model="bge-reranker")
    assert provider.scores("red apples", TEXTS) == pytest.approx([2 / 3, 2 / 3, 0.0])
    sent_path, body = server.requests[-1]
    assert sent_path == path
    assert body == {"query": "red apples", "texts": TEXTS, "documents": TEXTS, "top_n": 3, "model": "bge-reranker"}


def test_http_rerank_retries_then_gives_a_clear_503(server) -> None:
    provider = HttpRerankProvider(url=server.url + "/rerank")
    server.fail_next = 1
    assert provider.scores("bananas", TEXTS)[2] > 0
    server.fail_next = 5
    with pytest.raises(DependencyUnavailable) as info:
        provider.scores("bananas", TEXTS)
    assert info.value.message == "the rerank service failed (HTTP 503)"


def test_elasticsearch_inference_rerank(server) -> None:
    provider = ElasticsearchRerankProvider(inference_id="my-reranker", client=Elasticsearch(server.url))
    assert provider.scores("bananas", TEXTS) == pytest.approx([0.0, 0.0, 0.5])
    path, body = server.requests[-1]
    assert path == "/_inference/rerank/my-reranker"
    assert body == {"query": "bananas", "input": TEXTS}


def test_recall_reranks_and_can_skip_it_per_request(server, maya, settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"
    settings.ATLAS_RERANK_PROVIDER = "http"
    settings.ATLAS_RERANK_URL = server.url + "/rerank"
    rerank_reset()
    try:
        episode_write(subject=maya, text="umbrella stand in the hallway")
        episode_write(subject=maya, text="umbrella umbrella umbrella stand hallway storm forecast")
        reranked = memory_recall(subject=maya, query="storm forecast umbrella", k=2, options=RecallOptions(rerank=True))
        assert reranked.hits[0]["text"].startswith("umbrella umbrella")
        assert "rerank" in reranked.timings_ms
        assert reranked.hits[0]["score"] == pytest.approx(3 / 4)
        calls = len(server.requests)
        skipped = memory_recall(subject=maya, query="storm forecast umbrella", k=2, options=RecallOptions(rerank=False))
        assert len(server.requests) == calls and "rerank" not in skipped.timings_ms
    finally:
        rerank_reset()
