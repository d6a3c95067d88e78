"""The time a question asks about, for recall to filter or boost by (docs/temporal.md "Questions").

A question's dates are read like a turn's, against the moment it is asked, with one difference: a date
whose clause has no tense is the one under way or just past ("Where did I live in June?", "What happened
on Friday?"), since a question to a memory is mostly about what was said or done; a future word turns it
to the next one ("What did we plan for May?"). A word before a date opens the range: "before March" has
no start, "after March" no end. Several dates give the range that holds them all ("between May and July").
A question bounded by an event instead ("before I moved to Lisbon", "since I left Fenn") names no date: it
carries the event (``EventBound``) for recall to date by a first search (memory.recall.anchor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from memory.temporal.mentions import Mention, mentions_read

# Questions that ask for a date rather than name one: recall boosts the turns that carry a date.
_ASKS_WHEN = re.compile(
    r"(?:^|[.!?,:;]\s*)\W*(?:when|since\s+when|how\s+long\s+ago|(?:on|in|at)\s+(?:what|which)\s+(?:date|day|year|month)"
    r"|what\s+(?:date|day|year|month|week|time)|which\s+(?:date|day|year|month|week|weekend))\b"
    r"|\b(?:remember|recall|know|tell\s+me|ask(?:ed)?)\s+when\b",
    re.IGNORECASE,
)
# "before I moved to Lisbon?", "after Ada's wedding", "since I left Fenn": the words up to the clause's end.
_EVENT_BOUND = re.compile(r"\b(?P<bound>before|after|since)\s+(?P<event>[^?!.,;:]{2,80})", re.IGNORECASE)
# Words that end a state: "since I left Fenn" is dated by the end of the fact about Fenn, not its start.
_ENDING = re.compile(
    r"\b(?:left|leaving|leave|quit|quitting|stopped|stopping|finished|sold|(?:moved|moving|move)\s+out|ended|broke\s+up)\b",
    re.IGNORECASE,
)
# Words that begin one: "after I moved to Lisbon" is dated by the start of the fact about Lisbon.
_BEGINNING = re.compile(
    r"\b(?:moved|moving|move|started|starting|start|joined|joining|got|bought|went|began|switched|took\s+up)\b",
    re.IGNORECASE,
)
_BOUND_BEFORE = re.compile(r"\b(?P<bound>before|after|until|till|by|from)\s+$", re.IGNORECASE)
_LOOK_BACK = 8


@dataclass(frozen=True, slots=True)
class EventBound:
    """A question's bound by an event rather than a date: ``bound`` is before, after or since; ``event``
    the words naming it; ``edge`` which edge of a state the event is — "start" ("after I moved to
    Lisbon"), "end" ("since I left Fenn") or "" (the words do not say: "before the Kia" is its start,
    "after the GP placement" its end, by the bound)."""

    bound: str
    event: str
    edge: str

    def state_edge(self) -> str:
        """Which edge of a state the event dates: what the words say, else the start before and the end
        after ("before the Kia": when the Kia came; "after the GP placement": when the placement ended)."""
        return self.edge or ("start" if self.bound == "before" else "end")


# A day's routine after the bound word is no event to date ("What should I cook after work?", "before
# bed"): a first search would date it by some fact that shares the word (a job that ended).
_ROUTINE = frozenset(
    "work bed lunch dinner breakfast school class practice training dark that this then it all long now".split()
)


def event_bound(text: str) -> EventBound | None:
    """The event ``text`` is bounded by ("Where did I work before I moved to Lisbon?"), or None."""
    found = _EVENT_BOUND.search(text)
    if found is None:
        return None
    event = found["event"].strip()
    if event.lower() in _ROUTINE:
        return None
    edge = "end" if _ENDING.search(event) else "start" if _BEGINNING.search(event) else ""
    return EventBound(bound=found["bound"].lower(), event=event, edge=edge)


@dataclass(frozen=True, slots=True)
class TimeRange:
    """What time a question is about: ``start`` and ``end`` inclusive, None where the question leaves it
    open (both None when it names no time but asks *when*); ``mentions`` are the dates it names."""

    start: date | None
    end: date | None
    asks_when: bool
    mentions: tuple[Mention, ...] = ()
    # Bounded by an event, not a date ("before the move"): no start or end until recall dates the event.
    event: EventBound | None = None
    # The memory that dated the event (memory.recall.anchor), for explain.
    dated_by: str | None = None


def _bounds_open(question: str, mention: Mention) -> tuple[date | None, date | None]:
    found = _BOUND_BEFORE.search(question, max(0, mention.span[0] - _LOOK_BACK), mention.span[0])
    bound = found["bound"].lower() if found else ""
    if bound == "before":
        return None, mention.start - timedelta(days=1)
    if bound == "after":
        return mention.end + timedelta(days=1), None
    if bound in {"until", "till", "by"}:
        return None, mention.end
    if bound == "from":
        return mention.start, None
    return mention.start, mention.end


def _bounds_join(bounds: list[tuple[date | None, date | None]]) -> tuple[date | None, date | None]:
    starts = [start for start, _ in bounds]
    ends = [end for _, end in bounds]
    start = None if None in starts else min(starts)
    end = None if None in ends else max(ends)
    return start, end


def question_range(text: str, *, now: datetime) -> TimeRange | None:
    """The time question ``text``, asked at ``now`` (timezone-aware), is about; None when it names no time,
    no event bound and does not ask when. "After the move" names an event, not a time: no range, the
    event in ``event``."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    mentions = mentions_read(text, today=now.date(), default_direction="past")
    asks_when = bool(_ASKS_WHEN.search(text))
    if not mentions:
        event = event_bound(text)
        return TimeRange(None, None, asks_when=asks_when, event=event) if asks_when or event else None
    start, end = _bounds_join([_bounds_open(text, mention) for mention in mentions])
    return TimeRange(start, end, asks_when=asks_when, mentions=tuple(mentions))
