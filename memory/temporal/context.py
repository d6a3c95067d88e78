"""What a grammar rule sees: the text, the day it is read against, and the direction an ambiguous date takes
when its words do not say; and what a rule answers (a Reading)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Literal, NamedTuple

from memory.temporal.periods import Choice
from memory.temporal.tense import Direction, TenseReader
from memory.temporal.vocabulary import MONTH_VERBS, MONTHS

Granularity = Literal["day", "week", "month", "season", "year"]

_WORD_BEFORE = re.compile(r"([a-z]+)[\s-]*$")
# How far back a cue word is looked for: the longest cue ("throughout") and its spaces.
_LOOK_BACK = 16


class Reading(NamedTuple):
    """A resolved date: the first and the last day it covers (both inclusive) and how fine it is."""

    start: date
    end: date
    granularity: Granularity


@dataclass(frozen=True, slots=True)
class Context:
    """``lowered`` is ``text`` in lower case, position for position: the rules match it without
    re.IGNORECASE (several times faster) and look at ``text`` only where case matters ("May" or "may")."""

    text: str
    lowered: str
    today: date
    default_direction: Direction
    tenses: TenseReader

    def direction(self, position: int) -> Direction:
        # "Since Tuesday" can only look back, whatever the clause's tense.
        if self.word_before(position) == "since":
            return "past"
        return self.tenses.direction_at(position) or self.default_direction

    def choice(self, position: int) -> Choice:
        """The occurrence an ambiguous date means: the one under way or just past when the clause speaks of
        the past, the one under way or next otherwise."""
        return "past" if self.direction(position) == "past" else "future"

    def word_before(self, position: int) -> str:
        found = _WORD_BEFORE.search(self.lowered, max(0, position - _LOOK_BACK), position)
        return found.group(1) if found else ""


@dataclass(frozen=True, slots=True)
class Found:
    """A match of a rule, with the words its ``before`` pattern found right before it (a relation word, a
    count, a weekday); ``start`` is where the phrase starts, those words included."""

    match: re.Match[str]
    before: re.Match[str] | None
    start: int

    def group(self, name: str) -> str | None:
        if self.before is not None and name in self.before.re.groupindex:
            return self.before[name]
        return self.match[name] if name in self.match.re.groupindex else None


@dataclass(frozen=True, slots=True)
class Rule:
    """A pattern over the lowered text and what its matches mean.

    Every pattern starts with the word that makes it a date (a month, a digit, "weekend" …), so that the
    regex engine skips ahead to it instead of trying the whole pattern at every character (several
    times faster); optional words before it ("last", "a couple of", "Tuesday,") are ``before``: a pattern ending
    in ``$``, matched against the few characters before. ``needs``: strings one of which any match holds,
    so that a rule is not run over a text without (most texts name no date)."""

    name: str
    pattern: re.Pattern[str]
    read: Callable[[Found, Context], Reading | None]
    needs: tuple[str, ...]
    before: re.Pattern[str] | None = None
    before_required: bool = False


def text_lower(text: str) -> str:
    """``text`` in lower case with every character where it was (str.lower turns a few characters, "İ" for
    one, into two)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(char if len(char.lower()) != 1 else char.lower() for char in text)


def month_number(found: Found, context: Context) -> int | None:
    """The month the ``month`` group of a match names; None for a word that only starts like one, and for a
    lower-case "may" or "march" (verbs)."""
    key = found.match["month"].rstrip(".")
    if key in MONTH_VERBS and context.text[found.match.start("month")].islower():
        return None
    return MONTHS.get(key)


def date_or_none(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:  # the 31st of a 30-day month, the 29th of February in a common year
        return None
