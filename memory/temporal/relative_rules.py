"""Grammar rules for dates named relative to the day a text was written: "yesterday", "last week", "next
month", "two days ago", "in two weeks", "the past few days", weekday names and "over the weekend"."""

from __future__ import annotations

import re
from datetime import date, timedelta

from memory.temporal.context import Context, Found, Reading, Rule, date_or_none
from memory.temporal.periods import month_bounds, month_shift, week_bounds, weekend_bounds, year_bounds
from memory.temporal.vocabulary import COUNT, COUNTS, RELATION_WORD, UNIT, WEEKDAY, WEEKDAYS

_UNITS = ("day", "week", "month", "year")
# Days from today to the first and last day a word means, and how fine it is. "The other day" is a vague
# "recently": the week before today.
_DAY_WORDS = {
    "the day before yesterday": (-2, -2, "day"),
    "the day after tomorrow": (2, 2, "day"),
    "today": (0, 0, "day"),
    "tonight": (0, 0, "day"),
    "this morning": (0, 0, "day"),
    "this afternoon": (0, 0, "day"),
    "this evening": (0, 0, "day"),
    "yesterday": (-1, -1, "day"),
    "last night": (-1, -1, "day"),
    "tomorrow": (1, 1, "day"),
    "the other day": (-7, -1, "week"),
}
_OFFSETS = {
    "this": 0,
    "last": -1,
    "past": -1,
    "previous": -1,
    "next": 1,
    "coming": 1,
    "following": 1,
    "before last": -2,
    "after next": 2,
}
_GRANULARITY = {"day": "day", "week": "week", "weekend": "week", "month": "month", "year": "year"}
_WEEKEND_CUES = frozenset({"over", "on", "at", "during", "for", "through", "until", "since", "by"})
_PART_OF = re.compile(r"\b(?:beginning|start|middle|end)\s+of\s+$")
_SATURDAY = 5
# Words before "in three years" in its clause that make it a duration.
_DURATION_HINT = re.compile(r"\b(?:first|only|never|ever|best|worst|longest|\w+n't)\b[^,.;!?]*$")


def _words(text: str) -> str:
    return " ".join(text.split())


def unit_bounds(today: date, unit: str, offset: int) -> tuple[date, date]:
    """The calendar day, week, weekend, month or year ``offset`` units from the one holding ``today``."""
    if unit == "day":
        day = today + timedelta(days=offset)
        return day, day
    if unit == "week":
        return week_bounds(today + timedelta(weeks=offset))
    if unit == "weekend":
        return weekend_bounds(today + timedelta(weeks=offset))
    if unit == "month":
        return month_bounds(*month_shift(today, offset))
    return year_bounds(today.year + offset)


def _day_add(today: date, unit: str, count: int) -> date:
    """``today`` moved by ``count`` units, the day of the month kept where the target month has it."""
    if unit in {"day", "week"}:
        return today + timedelta(days=count * (7 if unit == "week" else 1))
    year, month = month_shift(today, count * (12 if unit == "year" else 1))
    for day in range(today.day, 27, -1):  # 31 March minus one month is the last day of February
        if found := date_or_none(year, month, day):
            return found
    return date(year, month, today.day)


def _count(text: str) -> tuple[int, int]:
    words = [word for word in text.split() if word != "of"]
    key = words[-1]
    if key.isdigit():
        return int(key), int(key)
    return COUNTS[key]


def _day_word(found: Found, context: Context) -> Reading:
    first, last, granularity = _DAY_WORDS[_words(found.match[0])]
    return Reading(context.today + timedelta(days=first), context.today + timedelta(days=last), granularity)


def _unit_relative(found: Found, context: Context) -> Reading:
    """For "last week", "next month", "this year", "the week before last": the calendar unit, not 7 days."""
    unit = found.group("unit")
    offset = _OFFSETS[_words(found.group("relation") or found.group("which"))]
    start, end = unit_bounds(context.today, unit, offset)
    return Reading(start, end, _GRANULARITY[unit])


def _counted(found: Found, context: Context) -> Reading | None:
    """For "two days ago", "a couple of weeks ago", "in three months", "a year from now": the calendar units that
    far back or ahead, every unit a vague count may mean included. "In three years" is a duration, no date,
    in a past clause ("I finished it in two weeks") or after "first", "never" … ("the first holiday in
    three years")."""
    if found.group("way") == "in" and _is_duration(context, found.start):
        return None
    unit = found.group("unit")
    low, high = _count(found.group("count"))
    sign = -1 if found.group("way") == "ago" else 1
    near = unit_bounds(context.today, unit, sign * low)
    far = unit_bounds(context.today, unit, sign * high)
    return Reading(min(near[0], far[0]), max(near[1], far[1]), _GRANULARITY[unit])


def _is_duration(context: Context, position: int) -> bool:
    if context.direction(position) == "past":
        return True
    return bool(_DURATION_HINT.search(context.lowered, max(0, position - 60), position))


def _rolling(found: Found, context: Context) -> Reading:
    """For "the past two weeks", "the last few days", "within a month", "the next 3 days": from today that many
    days back or ahead (not calendar units: "the past week" ends today, "last week" ended on Sunday). Not
    "the last week of June": that is a part of June, which this grammar does not resolve."""
    unit = found.group("unit")
    _, count = _count(found.group("count") or "one")
    if (found.group("relation") or "") in {"past", "last"}:
        return Reading(_day_add(context.today, unit, -count), context.today, _GRANULARITY[unit])
    return Reading(context.today, _day_add(context.today, unit, count), _GRANULARITY[unit])


def _weekday(found: Found, context: Context) -> Reading:
    """A weekday: "this Tuesday" is the one of the current Monday-to-Sunday week; "last"/"next Tuesday" the
    nearest one before/after today (never today); a bare "Tuesday" the nearest one the tense points to."""
    weekday = WEEKDAYS[found.group("weekday")]
    relation = _OFFSETS.get(found.group("relation") or "")
    if relation == 0:
        day = week_bounds(context.today)[0] + timedelta(days=weekday)
        return Reading(day, day, "day")
    if relation is None:
        relation = -1 if context.direction(found.start) == "past" else 1
    if relation < 0:
        day = context.today - timedelta(days=(context.today.weekday() - weekday - 1) % 7 + 1)
    else:
        day = context.today + timedelta(days=(weekday - context.today.weekday() - 1) % 7 + 1)
    return Reading(day, day, "day")


def _weekend(found: Found, context: Context) -> Reading | None:
    """For "over the weekend": the last Saturday and Sunday that began before today in a past clause, else the
    weekend of the current week."""
    if context.word_before(found.start) not in _WEEKEND_CUES:
        return None
    if context.direction(found.start) == "past":
        saturday = context.today - timedelta(days=(context.today.weekday() - _SATURDAY) % 7 or 7)
        return Reading(saturday, saturday + timedelta(days=1), "week")
    start, end = weekend_bounds(context.today)
    return Reading(start, end, "week")


def _current_unit(found: Found, context: Context) -> Reading | None:
    """The current month for "the month" in "the end of the month". Alone, "the month" is no date."""
    if not _PART_OF.search(context.lowered, max(0, found.start - 16), found.start):
        return None
    unit = found.group("unit")
    start, end = unit_bounds(context.today, unit, 0)
    return Reading(start, end, _GRANULARITY[unit])


_DAY_WORD_PATTERN = "|".join(key.replace(" ", r"\s+") for key in sorted(_DAY_WORDS, key=len, reverse=True))

RELATIVE_RULES = (
    Rule(
        "day_word",
        re.compile(rf"(?:{_DAY_WORD_PATTERN})\b"),
        _day_word,
        ("today", "tonight", "yesterday", "tomorrow", "night", "morning", "afternoon", "evening", "other day"),
    ),
    Rule(
        "unit_relative",
        re.compile(rf"{RELATION_WORD}\s+(?P<unit>week|weekend|month|year)\b"),
        _unit_relative,
        ("week", "month", "year"),
    ),
    Rule(
        "unit_before_last",
        re.compile(r"the\s+(?P<unit>week|weekend|month|year)\s+(?P<which>before\s+last|after\s+next)\b"),
        _unit_relative,
        ("before", "after"),
    ),
    Rule(
        "ago",
        re.compile(rf"{UNIT}\s+(?P<way>ago|from\s+now)\b"),
        _counted,
        ("ago", "now"),
        before=re.compile(rf"\b(?P<count>{COUNT})\s+$"),
        before_required=True,
    ),
    Rule("in", re.compile(rf"(?P<way>in)\s+(?P<count>{COUNT})\s+{UNIT}(?!-)(?:'s?\s+time)?"), _counted, _UNITS),
    Rule(
        "rolling",
        re.compile(
            rf"(?:the\s+(?P<relation>past|last|next|coming)|within)\s+(?:(?P<count>{COUNT})\s+)?{UNIT}(?!\s+of\b)"
        ),
        _rolling,
        ("past", "last", "next", "coming", "within"),
    ),
    Rule(
        "weekday",
        re.compile(rf"(?P<weekday>{WEEKDAY})"),
        _weekday,
        ("day",),
        before=re.compile(rf"\b{RELATION_WORD}\s+$"),
    ),
    Rule("weekend", re.compile(r"the\s+weekend\b"), _weekend, ("weekend",)),
    Rule("current_unit", re.compile(r"the\s+(?P<unit>week|month|year)\b"), _current_unit, (" of the ",)),
)
