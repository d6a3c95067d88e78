"""One subject's memories as consolidation leaves them, and two turns an agent passes to recall (issue 26).

The same scenario runs through REST, MCP, the CLI and the dashboard, so each interface is shown to give an
agent's turn what the core ranking gives it: the distilled memory first, the turn it was learnt from
folded under it, and neither the same question asked before nor a past request sharing words in front.

- "Where do I live?" — a question about the user: the fact "Lives in Lisbon, in Alfama" first, carrying
  the turn it was distilled from as evidence; the earlier "Where do I live again?" (a repeat, and a turn
  that asked) is not first.
- "Book me a train to Porto on Friday" — a request: the booking playbook ahead of the past request "Can you
  book me the train to Porto again?", and the seat preference among the hits.
"""

from __future__ import annotations

from typing import Any

from memory.services import writes

QUESTION = "Where do I live?"
REQUEST = "Book me a train to Porto on Friday"


def agent_turn_memories(subject) -> dict[str, dict[str, Any]]:
    said = writes.episode_write(
        subject=subject,
        text="I moved to Lisbon last spring, we love Alfama",
        session_id="s1",
        at="2026-03-02T10:00:00Z",
    )
    home = writes.fact_write(
        subject=subject, text="Lives in Lisbon, in Alfama", fact_type="identity", source_episodes=[said["id"]]
    )
    asked = writes.episode_write(
        subject=subject, text="Where do I live again?", session_id="s2", at="2026-06-10T09:00:00Z"
    )
    seat = writes.episode_write(
        subject=subject, text="Always get me a window seat on trains", session_id="s3", at="2026-07-01T08:00:00Z"
    )
    window = writes.fact_write(
        subject=subject, text="Prefers window seats on trains", fact_type="preference", source_episodes=[seat["id"]]
    )
    booked = writes.episode_write(
        subject=subject, text="Can you book me the train to Porto again?", session_id="s4", at="2026-09-15T18:00:00Z"
    )
    playbook = writes.playbook_write(
        subject=subject,
        name="train booking",
        trigger_text="book a train ticket",
        steps=["check the timetable on cp.pt", "pick a window seat", "pay with the saved card"],
    )
    return {
        "said": said,
        "home": home,
        "asked": asked,
        "seat": seat,
        "window": window,
        "booked": booked,
        "playbook": playbook,
    }


def distilled_first(hits: list[dict[str, Any]], memories: dict[str, dict[str, Any]]) -> None:
    """What each interface must give for QUESTION (``hits`` in rank order, each with ``id`` and ``evidence``)."""
    assert hits[0]["id"] == memories["home"]["id"], hits
    assert [e["id"] for e in hits[0]["evidence"]] == [memories["said"]["id"]]
    ids = [hit["id"] for hit in hits]
    assert memories["said"]["id"] not in ids  # folded under the fact, not a hit of its own


def request_served(hits: list[dict[str, Any]], memories: dict[str, dict[str, Any]]) -> None:
    """What each interface must give for REQUEST: the playbook first, not the past request that shares its
    words ("Can you book me the train to Porto again?", first in every leg), and the seat preference with
    the turn it came from folded under it."""
    ids = [hit["id"] for hit in hits]
    assert ids[0] == memories["playbook"]["id"], hits
    assert memories["window"]["id"] in ids and memories["seat"]["id"] not in ids
