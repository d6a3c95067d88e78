"""A conversation kept as one session's episodes, for the chat-history adapters (LangChain's message history,
the OpenAI Agents SDK's session): read in order, appended, forgotten — as plans (``_plan``) that either
client runs.

Episodes are what the user said: the API stores user turns only (``role`` is ``user``; the agent's own
replies are not memories: README "Allowed field values"), so the adapters keep the user's turns and leave the rest.
"""

from __future__ import annotations

from ._plan import Plan, call
from .errors import NotFound
from .models import Memory

#: The largest page the API lists.
PAGE_SIZE = 200


def session_read(*, subject: str, session_id: str, limit: int | None = None) -> Plan[list[Memory]]:
    """The session's episodes, oldest first; with ``limit``, the latest ``limit`` of them (fewer pages read)."""
    newest_first: list[Memory] = []
    cursor = None
    while limit is None or len(newest_first) < limit:
        page = yield call(
            "memory_list",
            subject=subject,
            types=["episodic"],
            session_id=session_id,
            page_size=PAGE_SIZE if limit is None else max(1, min(PAGE_SIZE, limit - len(newest_first))),
            cursor=cursor,
        )
        newest_first.extend(page.memories)
        cursor = page.next_cursor
        if not cursor:
            break
    kept = newest_first if limit is None else newest_first[:limit]
    return kept[::-1]


def session_write(
    *, subject: str, session_id: str, turns: list[tuple[str, str | None]], agent_id: str | None = None
) -> Plan[list[Memory]]:
    """Each ``(text, external_id)`` stored as an episode of the session, in order (one after the other, so
    their times keep that order)."""
    written = []
    for text, external_id in turns:
        episode = yield call(
            "episode_write",
            subject=subject,
            text=text,
            session_id=session_id,
            agent_id=agent_id,
            external_id=external_id,
        )
        written.append(episode)
    return written


def session_forget(*, subject: str, episodes: list[Memory]) -> Plan[None]:
    """Forget each episode (the API forgets one memory or a whole subject, not a session)."""
    for episode in episodes:
        try:
            yield call("memory_forget", subject=subject, memory_id=episode.id)
        except NotFound:
            pass  # forgotten meanwhile: what clearing wanted


def session_clear(*, subject: str, session_id: str) -> Plan[None]:
    episodes = yield from session_read(subject=subject, session_id=session_id)
    yield from session_forget(subject=subject, episodes=episodes)
