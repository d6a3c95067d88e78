"""Grammar rules for dates named by the calendar: ISO and unambiguous numeric dates, a day and a month
("3 June 2026", "June 3rd", "the 14th"), a month ("May 2025", "in May", "last May"), a season and a year.

A date without its year (or month) is the occurrence the clause's tense points to (Context.choice); a bare
month, season or year counts only after a word that makes it a date (vocabulary.DATE_CUES)."""

from __future__ import annotations

import re
from datetime import date

from memory.temporal.context import Context, Found, Reading, Rule, date_or_none, month_number
from memory.temporal.periods import (
    Span,
    month_bounds,
    month_shift,
    occurrence_pick,
    season_bounds,
    year_bounds,
)
from memory.temporal.vocabulary import DATE_CUES, MONTH, RELATION_WORD, RELATIONS, SEASON, SEASONS, WEEKDAY

_DIGITS = tuple("0123456789")
_MONTH_STEMS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# A weekday before a full date only confirms it ("Tuesday, June 3"): it is part of the phrase, not a date.
_WEEKDAY_BEFORE = re.compile(rf"\b{WEEKDAY},?\s+(?:the\s+)?$|\bthe\s+$")
_RELATION_BEFORE = re.compile(rf"\b{RELATION_WORD}\s+$")
_SEASON_BEFORE = re.compile(rf"\b{RELATION_WORD}\s+$|\bthe\s+$")
_YEAR_TAIL = r"(?:,?\s+(?P<year>\d{4})\b)?"
# A bare year needs one of these before it: "for 2000 dollars" or "room 2024" is no date.
_YEAR_CUES = frozenset({"in", "during", "since", "until", "till", "by", "before", "after", "from", "of", "year"})
_YEAR_RANGE = range(1900, 2101)
# "May and June", "from May to July": a month right after another month and a joining word is a date too.
_AFTER_MONTH = re.compile(rf"\b{MONTH}\s*(?:and|or|to|through|till|until|-|–)\s*$")


def _day_pick(context: Context, position: int, candidates: list[date]) -> Reading | None:
    spans: list[Span] = [(day, day) for day in sorted(candidates)]
    span = occurrence_pick(spans, today=context.today, choice=context.choice(position))
    return Reading(span[0], span[1], "day") if span else None


def _day_month(found: Found, context: Context) -> Reading | None:
    month = month_number(found, context)
    day = int(found.match["day"])
    if month is None:
        return None
    if found.match["year"]:
        exact = date_or_none(int(found.match["year"]), month, day)
        return Reading(exact, exact, "day") if exact else None
    years = range(context.today.year - 1, context.today.year + 2)
    candidates = [exact for year in years if (exact := date_or_none(year, month, day))]
    return _day_pick(context, found.start, candidates)


def _iso(found: Found, context: Context) -> Reading | None:
    match = found.match
    exact = date_or_none(int(match["year"]), int(match["month"]), int(match["day"]))
    return Reading(exact, exact, "day") if exact else None


def _numeric(found: Found, context: Context) -> Reading | None:
    """d/m/yyyy or m/d/yyyy only when the numbers tell which is which: one above 12, or both equal."""
    match = found.match
    first, second, year = int(match["first"]), int(match["second"]), int(match["year"])
    if first > 12 >= second or first == second:
        exact = date_or_none(year, second, first)
    elif second > 12 >= first:
        exact = date_or_none(year, first, second)
    else:
        return None
    return Reading(exact, exact, "day") if exact else None


def _ordinal(found: Found, context: Context) -> Reading | None:
    """For "the 14th": that day of the month before, this month or the one after, whichever the tense picks."""
    day = int(found.match["day"])
    months = [month_shift(context.today, offset) for offset in range(-2, 3)]
    candidates = [exact for year, month in months if (exact := date_or_none(year, month, day))]
    return _day_pick(context, found.start, candidates)


def _month_year(found: Found, context: Context) -> Reading | None:
    month = month_number(found, context)
    if month is None:
        return None
    start, end = month_bounds(int(found.match["year"]), month)
    return Reading(start, end, "month")


def _is_cued(context: Context, position: int) -> bool:
    if context.word_before(position) in DATE_CUES:
        return True
    return bool(_AFTER_MONTH.search(context.lowered, max(0, position - 16), position))


def _occurrence(found: Found, context: Context, candidates: list[Span]) -> Span | None:
    relation = RELATIONS.get(found.group("relation") or "")
    if relation == "this":
        containing = [span for span in candidates if span[0] <= context.today <= span[1]]
        if containing:
            return containing[0]
        relation = None
    if relation is None:
        if not found.group("relation") and not _is_cued(context, found.start):
            return None
        relation = context.choice(found.start)
    return occurrence_pick(candidates, today=context.today, choice=relation)


def _month(found: Found, context: Context) -> Reading | None:
    """For "in May", "last May", "next March": May of the year the relation or the tense picks."""
    month = month_number(found, context)
    if month is None:
        return None
    years = range(context.today.year - 1, context.today.year + 2)
    span = _occurrence(found, context, [month_bounds(year, month) for year in years])
    return Reading(span[0], span[1], "month") if span else None


def _season(found: Found, context: Context) -> Reading | None:
    first_month = SEASONS[found.match["season"]]
    if found.match["year"]:
        start, end = season_bounds(int(found.match["year"]), first_month)
        return Reading(start, end, "season")
    years = range(context.today.year - 2, context.today.year + 2)
    span = _occurrence(found, context, [season_bounds(year, first_month) for year in years])
    return Reading(span[0], span[1], "season") if span else None


def _year(found: Found, context: Context) -> Reading | None:
    year = int(found.match["year"])
    if year not in _YEAR_RANGE or context.word_before(found.start) not in _YEAR_CUES:
        return None
    start, end = year_bounds(year)
    return Reading(start, end, "year")


CALENDAR_RULES = (
    Rule("iso", re.compile(r"(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})\b(?![-/:]\d)"), _iso, ("-",)),
    Rule(
        "numeric",
        re.compile(r"(?P<first>\d{1,2})/(?P<second>\d{1,2})/(?P<year>\d{4})\b(?!/\d)"),
        _numeric,
        ("/",),
    ),
    Rule(
        "day_month",
        re.compile(rf"(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{MONTH}){_YEAR_TAIL}"),
        _day_month,
        _DIGITS,
        before=_WEEKDAY_BEFORE,
    ),
    Rule(
        "month_day",
        re.compile(rf"(?P<month>{MONTH})\s+(?:the\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:.,/]\d)\b{_YEAR_TAIL}"),
        _day_month,
        _DIGITS,
        before=_WEEKDAY_BEFORE,
    ),
    Rule("month_year", re.compile(rf"(?P<month>{MONTH}),?\s+(?:of\s+)?(?P<year>\d{{4}})\b"), _month_year, _DIGITS),
    Rule(
        "ordinal",
        # "the 14th" only where a date can stand: before punctuation, the end or a joining word, so that
        # "the 3rd time" and "the 21st century" stay no dates.
        re.compile(
            r"the\s+(?P<day>[1-9]|[12]\d|3[01])(?:st|nd|rd|th)\b"
            r"(?=\s*(?:[,.;:!?)]|$)|\s+(?:and|or|at|in|on|when|if|so|but|because|for|to|until|till|through|then|"
            r"we|i|you|he|she|they|is|was|will|works?)\b)"
        ),
        _ordinal,
        _DIGITS,
        before=re.compile(rf"\b{WEEKDAY},?\s+$"),
    ),
    Rule(
        "season",
        re.compile(rf"(?P<season>{SEASON})(?:\s+(?:of\s+)?(?P<year>\d{{4}})\b)?"),
        _season,
        tuple(SEASONS),
        before=_SEASON_BEFORE,
    ),
    Rule("month", re.compile(rf"(?P<month>{MONTH})"), _month, _MONTH_STEMS, before=_RELATION_BEFORE),
    Rule("year", re.compile(r"(?P<year>\d{4})\b(?![-/.:]\d)"), _year, _DIGITS),
)
