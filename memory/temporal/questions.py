"""The time a question asks about, for recall to filter or boost by (docs/temporal.md "Questions").

A question's dates are read like a turn's, against the moment it is asked, with one difference: a date
whose clause has no tense is the one under way or just past ("Where did I live in June?", "What happened
on Friday?"), since a question to a memory is mostly about what was said or done; a future word turns it
to the next one ("What did we plan for May?"). A word before a date opens the range: "before March" has
no start, "after March" no end. Several dates give the range that holds them all ("between May and July").
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
_BOUND_BEFORE = re.compile(r"\b(?P<bound>before|after|until|till|by|from)\s+$", re.IGNORECASE)
_LOOK_BACK = 8


@dataclass(frozen=True, slots=True)
class TimeRange:
    """What time a question is about: ``start`` and ``end`` inclusive, None where the question leaves it
    open (both None when it names no time but asks *when*); ``mentions`` are the dates it names."""

    start: date | None
    end: date | None
    asks_when: bool
    mentions: tuple[Mention, ...] = ()


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
    """The time question ``text``, asked at ``now`` (timezone-aware), is about; None when it names no time
    and does not ask when. "After the move" names an event, not a time: no range."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    mentions = mentions_read(text, today=now.date(), default_direction="past")
    asks_when = bool(_ASKS_WHEN.search(text))
    if not mentions:
        return TimeRange(None, None, asks_when=True) if asks_when else None
    start, end = _bounds_join([_bounds_open(text, mention) for mention in mentions])
    return TimeRange(start, end, asks_when=asks_when, mentions=tuple(mentions))
