"""Fixtures of the inference tests: no network for local models, the fake embeddings API, fresh providers."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from memory.inference.embeddings import embedding_provider_reset
from tests.memory.inference.support import EmbeddingsAPI


@pytest.fixture
def fresh_configured_provider() -> Iterator[None]:
    embedding_provider_reset()
    yield
    embedding_provider_reset()


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model hub, and no network at all: a local model has no reason to connect anywhere."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")

    def refuse(self: socket.socket, address: object) -> None:
        raise AssertionError(f"a local embedding model tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture
def api() -> Iterator[EmbeddingsAPI]:
    server = EmbeddingsAPI()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()
