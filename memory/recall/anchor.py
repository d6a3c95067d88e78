"""Dating the event a question is bounded by: "Where did I work before I moved to Lisbon?" names no date,
but the subject's memories date the move — the fact "Sam lives in Lisbon" holds from 2 June 2025 — so the
question asks about 1 June 2025, and recall's time leg and the versions that held then do the rest
(docs/temporal.md "Questions bounded by an event").

One BM25 search for the event's words over the subject's facts (current and replaced; most of the words)
and turns (all of them); the best match that can date the event does:
- a fact with a stated validity dates the event by the edge the words name: its start ("after I moved to
  Lisbon", "before the Kia") or its end ("since I left Fenn", "after the GP placement");
- otherwise a turn naming a date ("Ada and Tom picked the wedding date, June 14"): the first date it names.
  A turn naming none does not date the event: the day something was said about bed or a trip is not
  the day of the event.
"before" asks about the day before the event; "after" and "since" about the day after (a state's end:
the day it ended, when its successor began). A turn's event gives a month's window, since what follows
it ("after the wedding we fly to Crete") is said about the weeks around it, not one day.
"""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, timedelta
from typing import Any

from memory.elastic import queries, store
from memory.scope import SubjectScope
from memory.temporal import EventBound, TimeRange

# A fact: most of the event's words ("before I moved to Lisbon": "lisbon" of "move lisbon"; the english
# analyzer drops "I" and "to"): a state's words seldom repeat the event's verb. A turn: every word — turns
# are many and loosely worded, and one sharing "trip" or "surgery" with the question dates nothing
# ("after the last trip", "after keyhole knee surgery" in eval/atlas_v1 lost their answers to such turns).
_EVENT_MATCH = "60%"
_CANDIDATES = 5
# A turn's event: the window after (or before) it where what follows it is said to happen.
_TURN_WINDOW = timedelta(days=30)
_FIELDS = ["memory_type", "valid_from", "valid_to", "mentions"]


def event_dated(scope: SubjectScope, asked: TimeRange) -> TimeRange:
    """``asked`` with the days its event bounds, when the subject's memories date the event; unchanged
    otherwise (no event, or none of the memories matches it well enough)."""
    if asked.event is None or asked.start or asked.end:
        return asked
    for hit in _event_search(scope, asked.event.event):
        days = _fact_days(hit["_source"], asked.event) or _turn_days(hit["_source"], asked.event)
        if days is not None:
            return dataclasses.replace(asked, start=days[0], end=days[1], dated_by=hit["_id"])
    return asked


def _event_search(scope: SubjectScope, words: str) -> list[dict[str, Any]]:
    """The subject's facts (every version but a harshly corrected one, which never held) and turns that
    match the event's words, best first."""
    never_held = {"term": {"retracted": True}}
    facts = {
        "bool": {
            "must": [{"match": {"text": {"query": words, "minimum_should_match": _EVENT_MATCH}}}],
            "filter": [{"term": {"memory_type": "semantic"}}],
        }
    }
    turns = {
        "bool": {
            "must": [{"match": {"text": {"query": words, "operator": "and"}}}],
            "filter": [{"term": {"memory_type": "episodic"}}],
        }
    }
    body = {
        "size": _CANDIDATES,
        "_source": _FIELDS,
        "query": {
            "bool": {
                "should": [facts, turns],
                "minimum_should_match": 1,
                "filter": [*scope.read_filters(), queries.NOT_PENDING, {"bool": {"must_not": [never_held]}}],
            }
        },
    }
    answer = store.memories_search(scope.reader(), memory_types=("semantic", "archive", "episodic"), body=body)
    return answer["hits"]["hits"]


def _day(value: Any) -> date | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).date()


def _fact_days(source: dict[str, Any], event: EventBound) -> tuple[date, date] | None:
    """The day a fact's state dates the event by, as a one-day range on the asked side of it."""
    if source.get("memory_type") != "semantic":
        return None
    edge = event.state_edge()
    when = _day(source.get("valid_to") if edge == "end" else source.get("valid_from"))
    if when is None:
        return None
    # valid_to is exclusive: the state's last day is the day before it, its successor's first day is it.
    if event.bound == "before":
        day = when - timedelta(days=1)
    else:
        day = when if edge == "end" else when + timedelta(days=1)
    return day, day


def _turn_days(source: dict[str, Any], event: EventBound) -> tuple[date, date] | None:
    """The window a turn dates the event by: the first date it names."""
    named = [m for m in source.get("mentions") or [] if m.get("start") and m.get("end")]
    if source.get("memory_type") != "episodic" or not named:
        return None
    start, end = _day(named[0]["start"]), _day(named[0]["end"])
    if start is None or end is None:
        return None
    if event.bound == "before":
        return start - _TURN_WINDOW, start - timedelta(days=1)
    return end + timedelta(days=1), end + _TURN_WINDOW
