"""AsyncAtlas against the live server: the same operations, awaited; paged lists and the export as async
iterators; the same retries."""

from __future__ import annotations

import asyncio

import pytest
from atlas_memory import AsyncAtlas, NotFound, RecallOptions

from .conftest import FAST
from .proxy import proxy_to

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_async_client_writes_recalls_pages_and_exports(world) -> None:
    async def agent() -> None:
        async with AsyncAtlas(world.url, world.svc, retry=FAST) as atlas:
            fact = await atlas.fact_write(subject="alice", text="Alice is a vegetarian", fact_type="preference")
            turn = await atlas.turn(subject="alice", text="any dinner ideas for me?", recall=RecallOptions(k=3))
            assert fact.id in [hit.id for hit in turn.hits] and turn.episode.type == "episodic"
            recalled = await atlas.recall(subject="alice", query="vegetarian dinner", explain=True)
            assert recalled.hits[0].id == fact.id and recalled.hits[0].explain
            listed = [m.id async for m in atlas.memory_list_iter(subject="alice", page_size=1)]
            assert listed == [turn.episode.id, fact.id]
            exported = [line async for line in atlas.memory_export(subject="alice")]
            assert exported[0]["format"] == "atlas-memory-export" and len(exported) == 3
            detail = await atlas.memory_get(subject="alice", memory_id=fact.id)
            assert detail.etag and detail.provenance.episodes == []
            with pytest.raises(NotFound):
                await atlas.memory_get(subject="alice", memory_id="no-such-memory")
            # Concurrent calls share one connection pool.
            many = await asyncio.gather(*(atlas.episode_write(subject="bob", text=f"turn {n}") for n in range(4)))
            assert len({m.id for m in many}) == 4

    asyncio.run(agent())


def test_the_async_client_retries_a_lost_answer_with_the_same_key(world) -> None:
    async def agent(url: str) -> str:
        async with AsyncAtlas(url, world.svc, retry=FAST) as atlas:
            return (await atlas.episode_write(subject="alice", text="I adopted a cat")).id

    with proxy_to(world.url, ["lost", "503"]) as proxy:
        written = asyncio.run(agent(proxy.url))
        assert len(proxy.seen) == 3 and len({s.idempotency_key for s in proxy.seen}) == 1
    with world.client() as direct:
        assert [m.id for m in direct.memory_list(subject="alice").memories] == [written]
