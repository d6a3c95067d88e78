"""AtlasRetriever with the real langchain-core: a retriever in a runnable chain, sync and async."""

from __future__ import annotations

import asyncio

import pytest
from atlas_memory import AsyncAtlas, RecallOptions
from atlas_memory.langchain import AtlasRetriever
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from .conftest import FAST

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_retriever_returns_documents_with_the_memorys_metadata(world, atlas) -> None:
    said = atlas.episode_write(subject="alice", text="I moved to Lisbon last month", session_id="s1")
    fact = atlas.fact_write(
        subject="alice", text="Alice lives in Lisbon", fact_type="identity", source_episodes=[said.id]
    )
    atlas.fact_write(subject="bob", text="Bob lives in Oslo")
    retriever = AtlasRetriever(client=atlas, subject="alice", k=3)
    documents = retriever.invoke("where does alice live?")
    assert all(isinstance(d, Document) for d in documents)
    top = documents[0]
    assert (top.id, top.page_content) == (fact.id, "Alice lives in Lisbon")
    assert top.metadata["type"] == "semantic" and top.metadata["fact_type"] == "identity"
    assert top.metadata["rank"] == 1 and top.metadata["score"] > 0 and top.metadata["subject"] == "alice"
    assert top.metadata["evidence"] == [said.id] and top.metadata["created_at"] == fact.created_at.isoformat()
    assert "Oslo" not in " ".join(d.page_content for d in documents)  # only alice's memories

    episodes_only = AtlasRetriever(client=atlas, subject="alice", options=RecallOptions(types=["episodic"]))
    assert [d.metadata["type"] for d in episodes_only.invoke("Lisbon")] == ["episodic"]

    chain = retriever | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    assert chain.invoke("where does alice live?").startswith("Alice lives in Lisbon")


def test_the_retriever_runs_async_natively_or_in_a_thread(world, atlas) -> None:
    fact = atlas.fact_write(subject="alice", text="Alice plays the cello")

    async def both() -> tuple[list[Document], list[Document]]:
        async with AsyncAtlas(world.url, world.svc, retry=FAST) as native:
            awaited = await AtlasRetriever(async_client=native, subject="alice").ainvoke("cello")
        threaded = await AtlasRetriever(client=atlas, subject="alice").ainvoke("cello")
        return awaited, threaded

    awaited, threaded = asyncio.run(both())
    assert [d.id for d in awaited] == [d.id for d in threaded] == [fact.id]
