"""The OpenAI Agents SDK: ``AtlasSession``, a conversation's user turns kept as episodes, and
``atlas_recall_tool``, a function tool that recalls for the current turn (``pip install
'atlas-memory-client[openai-agents]'``)::

    atlas = AsyncAtlas(url, token)
    agent = Agent(name="helper", tools=[atlas_recall_tool(atlas, subject="alice")])
    session = AtlasSession("conversation-1", client=atlas, subject="alice")
    result = await Runner.run(agent, "where do I live?", session=session)

The API stores what the user said, and only that (an episode's ``role`` is ``user``): the session keeps
the user's messages and leaves the rest — the assistant's messages, tool calls and their outputs,
reasoning items — so ``get_items`` answers the user's turns, each as ``{"content": text, "role": "user"}``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import FunctionTool, function_tool

from ._async import AsyncAtlas
from ._client import Atlas
from ._plan import arun
from ._sessions import session_clear, session_forget, session_read, session_write
from .models import Hit, Memory, RecallOptions

#: What the tool answers when recall found nothing that fits.
NOTHING_RECALLED = "No memories found."


class AtlasSession:
    """An Agents SDK ``Session`` (the protocol ``agents.memory.Session``) kept as ``subject``'s episodes in
    session ``session_id``.

    ``add_items`` stores each user message as an episode (its text: a string content, or its
    ``input_text`` parts joined by newlines) and leaves every other item; ``get_items(limit)`` answers the
    session's user turns, oldest first (the latest ``limit`` of them); ``pop_item`` forgets the latest
    turn and answers it; ``clear_session`` forgets each episode of the session (the API forgets one
    memory or a whole subject, not a session). Popping and clearing need the ``forget`` scope.
    """

    session_settings = None

    def __init__(self, session_id: str, *, client: AsyncAtlas, subject: str, agent_id: str | None = None) -> None:
        self.session_id = session_id
        self.client = client
        self.subject = subject
        self.agent_id = agent_id

    async def get_items(self, limit: int | None = None) -> list[Any]:
        if limit is not None and limit <= 0:
            return []
        episodes = await arun(self.client, session_read(subject=self.subject, session_id=self.session_id, limit=limit))
        return [item_of(episode) for episode in episodes]

    async def add_items(self, items: list[Any]) -> None:
        turns: list[tuple[str, str | None]] = [(text, None) for item in items if (text := user_text(item))]
        if turns:
            plan = session_write(subject=self.subject, session_id=self.session_id, turns=turns, agent_id=self.agent_id)
            await arun(self.client, plan)

    async def pop_item(self) -> Any | None:
        latest = await arun(self.client, session_read(subject=self.subject, session_id=self.session_id, limit=1))
        if not latest:
            return None
        await arun(self.client, session_forget(subject=self.subject, episodes=latest))
        return item_of(latest[0])

    async def clear_session(self) -> None:
        await arun(self.client, session_clear(subject=self.subject, session_id=self.session_id))


def user_text(item: Any) -> str:
    """The text of a user message item ("" for any other item, or one without text)."""
    if not isinstance(item, dict) or item.get("role") != "user" or item.get("type", "message") != "message":
        return ""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "input_text"]
    return "\n".join(p for p in parts if isinstance(p, str) and p)


def item_of(episode: Memory) -> dict[str, str]:
    """An episode as the input item the SDK makes of a user's string input."""
    return {"content": episode.text, "role": "user"}


def atlas_recall_tool(
    atlas: Atlas | AsyncAtlas,
    *,
    subject: str,
    k: int = 5,
    options: RecallOptions | None = None,
    name: str = "atlas_recall",
) -> FunctionTool:
    """A function tool that recalls ``subject``'s memories (and the tenant's catalog) for a query the model
    gives — the user's latest message, or what it wants to look up — and answers the hits as text, one
    a line, best first: ``1. [semantic, 2026-12-04] Alice lives in Lisbon``; ``NOTHING_RECALLED`` when
    none fits. An episode that is the query itself is left out: with ``AtlasSession`` the current turn
    is stored before the model runs, and recall would find it. ``options`` narrows the recall (types, fact_type, since …). An ``AsyncAtlas`` is awaited;
    an ``Atlas`` runs in a thread. A failed recall answers the model the SDK's error text, as any tool."""
    fixed = {**(options.body() if options else {}), "subject": subject, "k": k}

    async def recall(query: str) -> str:
        """Recall what is known about the user that bears on the current turn.

        Args:
            query: The user's latest message, or what to look up about the user.
        """
        if isinstance(atlas, AsyncAtlas):
            found = await atlas.recall(**fixed, query=query)
        else:
            found = await asyncio.to_thread(lambda: atlas.recall(**fixed, query=query))
        # The session stores the user's turn before the model runs: recall finds that turn itself.
        return hits_text([hit for hit in found.hits if not (hit.type == "episodic" and hit.text == query)])

    return function_tool(recall, name_override=name)


def hits_text(hits: list[Hit]) -> str:
    if not hits:
        return NOTHING_RECALLED
    return "\n".join(f"{n}. [{hit.type}, {hit.created_at:%Y-%m-%d}] {hit.text}" for n, hit in enumerate(hits, 1))
