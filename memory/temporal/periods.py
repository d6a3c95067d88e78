"""Calendar arithmetic for the date grammar: the inclusive (first day, last day) span of a week, month,
season or year, the occurrence of a repeating period a relation word picks, and the early/mid/late part
of a period. Weeks run Monday to Sunday (ISO 8601)."""

from __future__ import annotations

import calendar
from datetime import date, timedelta
from typing import Literal

Span = tuple[date, date]
# "last": the latest that ended before today; "next": the earliest that starts after today; "past": the
# latest that started by today (today's own included); "future": the earliest that has not ended by today.
Choice = Literal["last", "next", "past", "future"]
Part = Literal["early", "mid", "late"]


def week_bounds(day: date) -> Span:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6)


def weekend_bounds(day: date) -> Span:
    """The Saturday and Sunday of ``day``'s Monday-to-Sunday week."""
    monday, sunday = week_bounds(day)
    return sunday - timedelta(days=1), sunday


def month_bounds(year: int, month: int) -> Span:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def month_shift(day: date, months: int) -> tuple[int, int]:
    """The (year, month) ``months`` calendar months from ``day``'s month."""
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def year_bounds(year: int) -> Span:
    return date(year, 1, 1), date(year, 12, 31)


def season_bounds(year: int, first_month: int) -> Span:
    """Three months from ``first_month`` of ``year``: a winter (December) ends in February of the next year."""
    last_year, last_month = month_shift(date(year, first_month, 1), 2)
    return date(year, first_month, 1), month_bounds(last_year, last_month)[1]


def occurrence_pick(candidates: list[Span], *, today: date, choice: Choice) -> Span | None:
    """Among the occurrences of a repeating period (every May, every Tuesday …), sorted by date, the one
    ``choice`` names relative to ``today``."""
    if choice == "last":
        before = [span for span in candidates if span[1] < today]
        return before[-1] if before else None
    if choice == "next":
        after = [span for span in candidates if span[0] > today]
        return after[0] if after else None
    if choice == "past":
        started = [span for span in candidates if span[0] <= today]
        return started[-1] if started else None
    unfinished = [span for span in candidates if span[1] >= today]
    return unfinished[0] if unfinished else None


def part_bounds(span: Span, *, part: Part) -> Span | None:
    """The early, mid or late third of a week, month, season or year: days 1–10, 11–20 and 21–end of a
    month; Monday–Tuesday, Wednesday–Thursday and Friday–Sunday of a week; the first, middle and last
    third of the months of a season or year. None for any other span (a day, a weekend, a few days)."""
    start, end = span
    third = ("early", "mid", "late").index(part)
    days = (end - start).days + 1
    if days == 7:
        first = start + timedelta(days=2 * third)
        return first, end if part == "late" else first + timedelta(days=1)
    if 28 <= days <= 31:
        first = start + timedelta(days=10 * third)
        return first, end if part == "late" else first + timedelta(days=9)
    if days < 89:
        return None
    months = (end.year - start.year) * 12 + end.month - start.month + 1
    per_part = months // 3
    first_year, first_month = month_shift(start, per_part * third)
    last_year, last_month = month_shift(start, per_part * third + per_part - 1)
    return date(first_year, first_month, 1), month_bounds(last_year, last_month)[1]
