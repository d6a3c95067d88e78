"""The dates a text names, each resolved against the moment the text was written (docs/temporal.md).

Every rule of the grammar (calendar_rules, relative_rules) is run over the text; where two readings
overlap, the one that starts first wins, then the longer ("the day before yesterday" over "yesterday",
"May 2025" over "May"). Then two words before a reading may change it: a part ("early May", "the end of
next month") narrows it, "since" stretches it to today.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from memory.temporal.calendar_rules import CALENDAR_RULES
from memory.temporal.context import Context, Found, Granularity, Reading, Rule, text_lower
from memory.temporal.periods import part_bounds
from memory.temporal.relative_rules import RELATIVE_RULES
from memory.temporal.tense import Direction, TenseReader

_RULES = CALENDAR_RULES + RELATIVE_RULES
_NEEDS = frozenset(needed for rule in _RULES for needed in rule.needs)
_PART = re.compile(r"(?:\bthe\s+)?\b(?P<part>early|late|mid|beginning\s+of|start\s+of|middle\s+of|end\s+of)[\s-]*$")
_PARTS = {
    "early": "early",
    "beginning": "early",
    "start": "early",
    "mid": "mid",
    "middle": "mid",
    "late": "late",
    "end": "late",
}
# "I was late last week", "running early today": after these words "late" and "early" say how someone was,
# not which part of the week.
_NOT_A_PART_AFTER = frozenset({"was", "were", "is", "are", "am", "i'm", "be", "been", "running", "too", "so", "very"})
# A part of a period is one step finer than the period.
_PART_GRANULARITY: dict[str, Granularity] = {"week": "day", "month": "week", "season": "month", "year": "season"}
_WORD_APOSTROPHE_BEFORE = re.compile(r"([a-z']+)\s+$")
_SINCE = re.compile(r"\b(?:ever\s+)?since\s+$")
_LOOK_BACK = 24


@dataclass(frozen=True, slots=True)
class Mention:
    """A date a text names: ``phrase`` is ``text[span[0]:span[1]]``; ``start`` and ``end`` are the first and
    the last day it covers, both inclusive."""

    phrase: str
    start: date
    end: date
    granularity: Granularity
    span: tuple[int, int]


def _found_at_word(rule: Rule, match: re.Match[str], context: Context) -> Found | None:
    """The match with the words its rule looks for before it; None when it starts inside a word ("camper"
    holds no March) or lacks the words it needs before it."""
    before = None
    if rule.before is not None:
        before = rule.before.search(context.lowered, max(0, match.start() - _LOOK_BACK), match.start())
    if before is None and rule.before_required:
        return None
    start = before.start() if before is not None else match.start()
    if start > 0 and context.lowered[start - 1].isalnum():
        return None
    return Found(match=match, before=before, start=start)


def _matches_collect(context: Context) -> list[tuple[Found, Rule]]:
    present = {needed for needed in _NEEDS if needed in context.lowered}
    found = []
    for rule in _RULES:
        if present.isdisjoint(rule.needs):
            continue
        for match in rule.pattern.finditer(context.lowered):
            at_word = _found_at_word(rule, match, context)
            if at_word is not None:
                found.append((at_word, rule))
    return found


def _readings_choose(context: Context, matches: list[tuple[Found, Rule]]) -> list[tuple[int, int, Reading]]:
    """The readings that do not overlap, the earliest (then the longest) first. A match is read only once
    it has won its place (reading is the slow part); one that reads as no date gives its place up."""
    chosen: list[tuple[int, int, Reading]] = []
    for found, rule in sorted(matches, key=lambda item: (item[0].start, item[0].start - item[0].match.end())):
        if chosen and found.start < chosen[-1][1]:
            continue
        reading = rule.read(found, context)
        if reading is not None:
            chosen.append((found.start, found.match.end(), reading))
    return chosen


def _word_before(context: Context, position: int) -> str:
    found = _WORD_APOSTROPHE_BEFORE.search(context.lowered, max(0, position - 12), position)
    return found[1] if found else ""


def _part_apply(context: Context, start: int, reading: Reading) -> tuple[int, Reading]:
    if reading.granularity not in _PART_GRANULARITY:
        return start, reading
    found = _PART.search(context.lowered, max(0, start - _LOOK_BACK), start)
    if found is None:
        return start, reading
    part = _PARTS[found["part"].split()[0]]
    if found["part"] in {"early", "late"} and _word_before(context, found.start("part")) in _NOT_A_PART_AFTER:
        return start, reading
    bounds = part_bounds((reading.start, reading.end), part=part)
    if bounds is None:
        return start, reading
    return found.start(), Reading(bounds[0], bounds[1], _PART_GRANULARITY[reading.granularity])


def _since_apply(context: Context, start: int, reading: Reading) -> tuple[int, Reading]:
    """For "since March": from the first day of March to today; a "since" before a date to come is ignored."""
    window = max(0, start - _LOOK_BACK)
    if "since" not in context.lowered[window:start]:  # the usual case, and a regex search costs more
        return start, reading
    found = _SINCE.search(context.lowered, window, start)
    if found is None or reading.start > context.today:
        return start, reading
    return found.start(), Reading(reading.start, context.today, reading.granularity)


def mentions_read(text: str, *, today: date, default_direction: Direction) -> list[Mention]:
    """The dates ``text`` names, read against ``today``; an ambiguous one whose clause has no tense goes in
    ``default_direction``."""
    lowered = text_lower(text)
    context = Context(text, lowered, today, default_direction, TenseReader(lowered))
    mentions = []
    for start, end, reading in _readings_choose(context, _matches_collect(context)):
        start, reading = _part_apply(context, start, reading)
        start, reading = _since_apply(context, start, reading)
        mentions.append(Mention(text[start:end], reading.start, reading.end, reading.granularity, (start, end)))
    return mentions


def mentions_resolve(text: str, *, anchor: datetime, language: str = "en") -> list[Mention]:
    """The dates a turn names, resolved against its own timestamp ``anchor`` (timezone-aware: its date is
    the day in that timezone). A date whose clause does not say past or future is read as the next one
    ("on Tuesday", "in May"). English only: another language gives no mentions (its words are not read).
    A date relative to an event ("before the move", "two days after the wedding") gives none either."""
    if anchor.tzinfo is None or anchor.utcoffset() is None:
        raise ValueError("anchor must be timezone-aware")
    if not language.lower().startswith("en"):
        return []
    return mentions_read(text, today=anchor.date(), default_direction="future")
