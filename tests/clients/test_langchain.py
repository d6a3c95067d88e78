"""The LangChain adapters with the real langchain-core against the live server: AtlasRetriever in a runnable
chain, and AtlasChatMessageHistory (the user's turns as a session's episodes), sync and async."""

from __future__ import annotations

import asyncio

import pytest
from atlas_memory import AsyncAtlas, Forbidden, NotFound, RecallOptions
from atlas_memory.langchain import AtlasChatMessageHistory, AtlasRetriever
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

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


def test_the_chat_history_keeps_the_users_turns_as_the_sessions_episodes_in_order(world, atlas) -> None:
    history = AtlasChatMessageHistory(client=atlas, subject="alice", session_id="s1", agent_id="helper")
    history.add_messages(
        [
            SystemMessage("You are helpful."),
            HumanMessage("I moved to Lisbon", id="msg-1"),
            AIMessage("Noted: Lisbon."),
            HumanMessage(
                [{"type": "text", "text": "Here is my cat"}, {"type": "image_url", "image_url": {"url": "x"}}]
            ),
        ]
    )
    history.add_user_message("And I have a dog")
    history.add_ai_message("Lovely.")
    other = AtlasChatMessageHistory(client=atlas, subject="alice", session_id="s2")
    other.add_user_message("Another conversation")

    episodes = list(reversed(atlas.memory_list(subject="alice", session_id="s1").memories))
    assert [(m.type, m.text, m.session_id, m.extra["role"], m.agent_id) for m in episodes] == [
        ("episodic", "I moved to Lisbon", "s1", "user", "helper"),
        ("episodic", "Here is my cat", "s1", "user", "helper"),
        ("episodic", "And I have a dog", "s1", "user", "helper"),
    ]
    assert history.messages == [
        HumanMessage("I moved to Lisbon", id="msg-1"),
        HumanMessage("Here is my cat", id=episodes[1].id),
        HumanMessage("And I have a dog", id=episodes[2].id),
    ]
    history.add_messages([HumanMessage("I moved to Lisbon", id="msg-1")])  # the same message again: stored once
    assert [m.content for m in history.messages] == ["I moved to Lisbon", "Here is my cat", "And I have a dog"]

    history.clear()
    assert history.messages == [] and atlas.memory_list(subject="alice", session_id="s1").memories == []
    assert [m.content for m in other.messages] == ["Another conversation"]  # another session stays


# RunnableWithMessageHistory is deprecated in langchain-core 1.x, and still what consumes a message history.
@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_the_chat_history_serves_a_runnable_with_message_history(world, atlas) -> None:
    def model(messages: list) -> AIMessage:
        return AIMessage(f"I have seen {len(messages)} message(s)")

    chain = RunnableWithMessageHistory(
        RunnableLambda(model),
        lambda session_id: AtlasChatMessageHistory(client=atlas, subject="alice", session_id=session_id),
    )
    config = {"configurable": {"session_id": "chat"}}
    assert chain.invoke([HumanMessage("hello")], config=config).content == "I have seen 1 message(s)"
    # The AI's reply was not stored (episodes are user turns): the history holds the two user turns.
    assert chain.invoke([HumanMessage("again")], config=config).content == "I have seen 2 message(s)"
    stored = AtlasChatMessageHistory(client=atlas, subject="alice", session_id="chat").messages
    assert [m.content for m in stored] == ["hello", "again"]


def test_the_chat_history_runs_async_on_the_async_client(world) -> None:
    async def agent() -> list[str]:
        async with AsyncAtlas(world.url, world.svc, retry=FAST) as client:
            history = AtlasChatMessageHistory(async_client=client, subject="alice", session_id="s1")
            await history.aadd_messages([HumanMessage("one"), AIMessage("reply"), HumanMessage("two")])
            seen = [m.content for m in await history.aget_messages()]
            await history.aclear()
            assert await history.aget_messages() == []
            with pytest.raises(ValueError, match="client=Atlas"):
                history.messages  # noqa: B018 - the property reads
            return seen

    assert asyncio.run(agent()) == ["one", "two"]


def test_a_subjects_chat_history_never_reaches_another_subjects_session(world, atlas) -> None:
    atlas.episode_write(subject="bob", text="Bob's secret turn", session_id="s1")
    with world.client(world.own) as own:
        alices = AtlasChatMessageHistory(client=own, subject="alice", session_id="s1")
        alices.add_user_message("Alice's turn")
        assert [m.content for m in alices.messages] == ["Alice's turn"]  # not bob's turn of the same session id
        bobs = AtlasChatMessageHistory(client=own, subject="bob", session_id="s1")
        with pytest.raises(NotFound):
            bobs.messages  # noqa: B018 - the property reads
        with pytest.raises(NotFound):
            bobs.add_user_message("written into bob's session")
        with pytest.raises(Forbidden):  # clearing forgets, and alice's token has no forget scope
            alices.clear()
    assert [m.text for m in atlas.memory_list(subject="bob").memories] == ["Bob's secret turn"]
    assert [m.text for m in atlas.memory_list(subject="alice").memories] == ["Alice's turn"]
