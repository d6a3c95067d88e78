"""LangChain: ``AtlasRetriever``, a retriever over one subject's memories, and ``AtlasChatMessageHistory``,
a conversation's user turns kept as episodes (``pip install 'atlas-memory-client[langchain]'``)::

    retriever = AtlasRetriever(client=Atlas(url, token), subject="alice", k=5)
    docs = retriever.invoke("where does alice live?")   # Documents, best first

    history = AtlasChatMessageHistory(client=Atlas(url, token), subject="alice", session_id="s1")
    history.add_messages([HumanMessage("I moved to Lisbon"), AIMessage("Noted!")])
    history.messages                                     # [HumanMessage("I moved to Lisbon", id=…)]

Each ``Document`` is one recall hit: its text as ``page_content``, its id as ``id``, and the memory's
metadata (type, score, rank, created_at, authority, the type's own fields such as fact_type …).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever

from ._async import AsyncAtlas
from ._client import Atlas
from ._plan import Plan, arun, run
from ._sessions import session_clear, session_read, session_write
from .models import NOT_IN_SCHEMA, Hit, Memory, Recall, RecallOptions

#: Hit fields that are the document itself rather than its metadata.
_NOT_METADATA = {"text", "evidence", "explain"} | NOT_IN_SCHEMA


class AtlasRetriever(BaseRetriever):
    """Recall over ``subject``'s memories and the tenant's catalog, as LangChain ``Document``s.

    ``client`` (``Atlas``) serves ``invoke``; ``async_client`` (``AsyncAtlas``), when given, serves
    ``ainvoke`` without a thread. ``options`` narrows the recall (types, fact_type, since …).
    """

    client: Atlas | None = None
    async_client: AsyncAtlas | None = None
    subject: str
    k: int = 5
    options: RecallOptions | None = None

    def _recall_arguments(self, query: str) -> dict[str, Any]:
        options = self.options.body() if self.options else {}
        return {**options, "subject": self.subject, "query": query, "k": self.k}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self.client is None:
            raise ValueError("AtlasRetriever needs client=Atlas(...) to run synchronously")
        return documents_of(self.client.recall(**self._recall_arguments(query)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return documents_of(await self.async_client.recall(**self._recall_arguments(query)))


def documents_of(recall: Recall) -> list[Document]:
    return [Document(id=hit.id, page_content=hit.text, metadata=metadata_of(hit)) for hit in recall.hits]


def metadata_of(hit: Hit) -> dict[str, Any]:
    """The hit's fields (times as ISO 8601), its type's own fields, and the ids of the episodes it cites."""
    metadata = {
        f.name: getattr(hit, f.name) for f in dataclasses.fields(hit) if f.name not in _NOT_METADATA
    } | hit.extra
    metadata = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in metadata.items() if v is not None}
    if hit.evidence:
        metadata["evidence"] = [e.id for e in hit.evidence]
    return metadata


class AtlasChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history kept as ``subject``'s episodes in session ``session_id``.

    The API stores what the user said, and only that (an episode's ``role`` is ``user``): each
    ``HumanMessage`` becomes an episode (its text; its ``id``, when it has one, as the episode's external id,
    so adding it again stores it once), and the other messages — the AI's replies, system and tool
    messages — are not stored. ``messages`` is the session's user turns, oldest first, as
    ``HumanMessage``s whose ``id`` is the external id they came with, else the episode's id. ``clear()``
    forgets each episode of the session (the API forgets one memory or a whole subject, not a session),
    so it needs a token with the ``forget`` scope.

    ``client`` (``Atlas``) serves the sync methods; ``async_client`` (``AsyncAtlas``), when given, the async
    ones without a thread. ``agent_id`` is stored on each episode.
    """

    def __init__(
        self,
        *,
        subject: str,
        session_id: str,
        client: Atlas | None = None,
        async_client: AsyncAtlas | None = None,
        agent_id: str | None = None,
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("AtlasChatMessageHistory needs client=Atlas(...), async_client=AsyncAtlas(...), or both")
        self.subject = subject
        self.session_id = session_id
        self.client = client
        self.async_client = async_client
        self.agent_id = agent_id

    def _sync(self) -> Atlas:
        if self.client is None:
            raise ValueError("AtlasChatMessageHistory needs client=Atlas(...) to run synchronously")
        return self.client

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        episodes = run(self._sync(), session_read(subject=self.subject, session_id=self.session_id))
        return [message_of(episode) for episode in episodes]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        run(self._sync(), self._write(messages))

    def clear(self) -> None:
        run(self._sync(), session_clear(subject=self.subject, session_id=self.session_id))

    async def aget_messages(self) -> list[BaseMessage]:
        if self.async_client is None:
            return await super().aget_messages()
        episodes = await arun(self.async_client, session_read(subject=self.subject, session_id=self.session_id))
        return [message_of(episode) for episode in episodes]

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if self.async_client is None:
            return await super().aadd_messages(messages)
        await arun(self.async_client, self._write(messages))

    async def aclear(self) -> None:
        if self.async_client is None:
            return await super().aclear()
        await arun(self.async_client, session_clear(subject=self.subject, session_id=self.session_id))

    def _write(self, messages: Sequence[BaseMessage]) -> Plan[list[Memory]]:
        turns = [(text, m.id) for m in messages if isinstance(m, HumanMessage) and (text := text_of(m))]
        return session_write(subject=self.subject, session_id=self.session_id, turns=turns, agent_id=self.agent_id)


def text_of(message: BaseMessage) -> str:
    """A message's text: its content when a string, else its text blocks joined by newlines (images and
    other blocks have no place in an episode)."""
    if isinstance(message.content, str):
        return message.content
    parts = [
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in message.content
        if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
    ]
    return "\n".join(part for part in parts if part)


def message_of(episode: Memory) -> HumanMessage:
    return HumanMessage(content=episode.text, id=episode.external_id or episode.id)
