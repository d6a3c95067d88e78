"""Helpers of the inference tests: cosine similarity, and a real local HTTP server speaking OpenAI's
embeddings API (the only fake: a paid service)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


DIMS = 8


def api_vector(text: str, dims: int = DIMS) -> list[float]:
    """What the fake API returns for ``text``: deterministic, and deliberately not unit length."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return (np.random.default_rng(seed).normal(size=dims) * 3).tolist()


def unit(vector: list[float]) -> list[float]:
    return (np.asarray(vector) / np.linalg.norm(vector)).tolist()


class EmbeddingsAPI:
    """A real HTTP server on 127.0.0.1 speaking OpenAI's embeddings API.

    ``failures`` is a queue of statuses to answer (429, 500, 401, "slow") before answering
    normally; ``dims`` is the size of the vectors it returns. Every request is recorded.
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.failures: list[int | str] = []
        self.dims = DIMS
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                failure = api.failures.pop(0) if api.failures else None
                if failure == "slow":
                    time.sleep(1.0)
                    return self._send(200, {"data": []})
                if failure == 429:
                    return self._send(
                        429, {"error": {"message": "Rate limit reached", "type": "requests"}}, {"Retry-After": "0"}
                    )
                if failure == 500:
                    return self._send(500, {"error": {"message": "upstream model crashed", "type": "server_error"}})
                if failure == 401:
                    return self._send(
                        401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
                    )
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": "no such route"}})
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [
                    {"object": "embedding", "index": i, "embedding": api_vector(text, api.dims)}
                    for i, text in enumerate(inputs)
                ]
                data.reverse()  # clients must order by "index", not by position
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    },
                )

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests]
