"""mentions_resolve: English phrasings and the dates they resolve to, against a fixed anchor.

The anchor is Wednesday 18 March 2026, 14:00 UTC: its week runs Monday 16 to Sunday 22 March, the week before
from 9 to 15 March, the one after from 23 to 29 March; it falls in the spring of 2026 (March to May).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from memory.temporal import Mention, mentions_resolve

ANCHOR = datetime(2026, 3, 18, 14, 0, tzinfo=UTC)

# (text, phrase, first day, last day, granularity): each text names exactly one date.
PHRASINGS = [
    # Days named relative to today.
    ("I'm seeing the dentist today", "today", "2026-03-18", "2026-03-18", "day"),
    ("Pizza tonight?", "tonight", "2026-03-18", "2026-03-18", "day"),
    ("I ran 10k yesterday", "yesterday", "2026-03-17", "2026-03-17", "day"),
    ("We fly tomorrow", "tomorrow", "2026-03-19", "2026-03-19", "day"),
    ("It happened the day before yesterday", "the day before yesterday", "2026-03-16", "2026-03-16", "day"),
    ("The parcel comes the day after tomorrow", "the day after tomorrow", "2026-03-20", "2026-03-20", "day"),
    ("I couldn't sleep last night", "last night", "2026-03-17", "2026-03-17", "day"),
    ("Got the results this morning", "this morning", "2026-03-18", "2026-03-18", "day"),
    ("Call me this evening", "this evening", "2026-03-18", "2026-03-18", "day"),
    ("I bumped into her the other day", "the other day", "2026-03-11", "2026-03-17", "week"),
    # Weekdays: "last"/"next" never today, "this" in the current week, a bare one by the clause's tense.
    ("It was last Tuesday", "last Tuesday", "2026-03-17", "2026-03-17", "day"),
    ("It was last Wednesday", "last Wednesday", "2026-03-11", "2026-03-11", "day"),
    ("We met last Friday", "last Friday", "2026-03-13", "2026-03-13", "day"),
    ("Let's go next Tuesday", "next Tuesday", "2026-03-24", "2026-03-24", "day"),
    ("Let's go next Wednesday", "next Wednesday", "2026-03-25", "2026-03-25", "day"),
    ("Let's go next Friday", "next Friday", "2026-03-20", "2026-03-20", "day"),
    ("The meeting is this Monday", "this Monday", "2026-03-16", "2026-03-16", "day"),
    ("The party is this Sunday", "this Sunday", "2026-03-22", "2026-03-22", "day"),
    ("We're flying on Friday", "Friday", "2026-03-20", "2026-03-20", "day"),
    ("See you Wednesday", "Wednesday", "2026-03-25", "2026-03-25", "day"),
    ("I went to the gym on Monday", "Monday", "2026-03-16", "2026-03-16", "day"),
    ("I'll call you on Monday", "Monday", "2026-03-23", "2026-03-23", "day"),
    ("On Friday, I went to the beach", "Friday", "2026-03-13", "2026-03-13", "day"),
    ("Had my viva on Friday", "Friday", "2026-03-13", "2026-03-13", "day"),
    ("The match was on Sunday", "Sunday", "2026-03-15", "2026-03-15", "day"),
    # Calendar weeks, weekends, months and years.
    ("Busy this week", "this week", "2026-03-16", "2026-03-22", "week"),
    ("Busy last week", "last week", "2026-03-09", "2026-03-15", "week"),
    ("Busy next week", "next week", "2026-03-23", "2026-03-29", "week"),
    ("Free this weekend", "this weekend", "2026-03-21", "2026-03-22", "week"),
    ("We hiked last weekend", "last weekend", "2026-03-14", "2026-03-15", "week"),
    ("Free next weekend", "next weekend", "2026-03-28", "2026-03-29", "week"),
    ("Rent is due this month", "this month", "2026-03-01", "2026-03-31", "month"),
    ("I moved to Lisbon last month", "last month", "2026-02-01", "2026-02-28", "month"),
    ("The course starts next month", "next month", "2026-04-01", "2026-04-30", "month"),
    ("My goal this year", "this year", "2026-01-01", "2026-12-31", "year"),
    ("We married last year", "last year", "2025-01-01", "2025-12-31", "year"),
    ("We marry next year", "next year", "2027-01-01", "2027-12-31", "year"),
    ("It was the week before last", "the week before last", "2026-03-02", "2026-03-08", "week"),
    ("Maybe the week after next", "the week after next", "2026-03-30", "2026-04-05", "week"),
    ("It was the previous month", "previous month", "2026-02-01", "2026-02-28", "month"),
    # Seasons (meteorological, northern hemisphere; a winter belongs to the year of its December).
    ("Going to Crete this summer", "this summer", "2026-06-01", "2026-08-31", "season"),
    ("We went to Crete last summer", "last summer", "2025-06-01", "2025-08-31", "season"),
    ("Crete next summer", "next summer", "2026-06-01", "2026-08-31", "season"),
    ("Skiing this winter", "this winter", "2026-12-01", "2027-02-28", "season"),
    ("This winter was brutal", "This winter", "2025-12-01", "2026-02-28", "season"),
    ("The boiler broke last winter", "last winter", "2025-12-01", "2026-02-28", "season"),
    ("Skiing next winter", "next winter", "2026-12-01", "2027-02-28", "season"),
    ("Planting this spring", "this spring", "2026-03-01", "2026-05-31", "season"),
    ("Planted it last spring", "last spring", "2025-03-01", "2025-05-31", "season"),
    ("Planting next spring", "next spring", "2027-03-01", "2027-05-31", "season"),
    ("Harvest this autumn", "this autumn", "2026-09-01", "2026-11-30", "season"),
    ("We painted the house last fall", "last fall", "2025-09-01", "2025-11-30", "season"),
    ("Let's go in the summer", "the summer", "2026-06-01", "2026-08-31", "season"),
    ("We went camping in the summer", "the summer", "2025-06-01", "2025-08-31", "season"),
    ("It was the summer of 2024", "the summer of 2024", "2024-06-01", "2024-08-31", "season"),
    ("Back in winter 2024", "winter 2024", "2024-12-01", "2025-02-28", "season"),
    # Months: a relation picks the occurrence, else the tense (the current month counts both ways).
    ("The wedding is in May", "May", "2026-05-01", "2026-05-31", "month"),
    ("We went to Lisbon in May", "May", "2025-05-01", "2025-05-31", "month"),
    ("We went to Paris last May", "last May", "2025-05-01", "2025-05-31", "month"),
    ("Paris next May", "next May", "2026-05-01", "2026-05-31", "month"),
    ("Paris next March", "next March", "2027-03-01", "2027-03-31", "month"),
    ("Paris last March", "last March", "2025-03-01", "2025-03-31", "month"),
    ("Paris this March", "this March", "2026-03-01", "2026-03-31", "month"),
    ("Taxes are due in March", "March", "2026-03-01", "2026-03-31", "month"),
    ("Sales start in january", "january", "2027-01-01", "2027-01-31", "month"),
    ("I started the job in January", "January", "2026-01-01", "2026-01-31", "month"),
    ("That was May 2025", "May 2025", "2025-05-01", "2025-05-31", "month"),
    ("We moved in December 2025", "December 2025", "2025-12-01", "2025-12-31", "month"),
    ("Not since March", "since March", "2026-03-01", "2026-03-18", "month"),
    ("Not since last May", "since last May", "2025-05-01", "2026-03-18", "month"),
    ("Not seen him since Tuesday", "since Tuesday", "2026-03-17", "2026-03-18", "day"),
    # Parts of a period.
    ("Arriving early May", "early May", "2026-05-01", "2026-05-10", "week"),
    ("Arriving mid-May", "mid-May", "2026-05-11", "2026-05-20", "week"),
    ("Arriving late May", "late May", "2026-05-21", "2026-05-31", "week"),
    ("Done by the end of May", "the end of May", "2026-05-21", "2026-05-31", "week"),
    ("Starts at the beginning of June", "the beginning of June", "2026-06-01", "2026-06-10", "week"),
    ("Rent is due at the end of the month", "the end of the month", "2026-03-21", "2026-03-31", "week"),
    ("Let's finish by the end of the week", "the end of the week", "2026-03-20", "2026-03-22", "day"),
    ("We move at the beginning of next year", "the beginning of next year", "2027-01-01", "2027-04-30", "season"),
    ("Can we talk early next week", "early next week", "2026-03-23", "2026-03-24", "day"),
    ("They married late last year", "late last year", "2025-09-01", "2025-12-31", "season"),
    ("Report due end of next month", "end of next month", "2026-04-21", "2026-04-30", "week"),
    ("I was late last week", "last week", "2026-03-09", "2026-03-15", "week"),
    # Dates written out.
    ("The flight is on 2026-06-14", "2026-06-14", "2026-06-14", "2026-06-14", "day"),
    ("The flight is on 14/06/2026", "14/06/2026", "2026-06-14", "2026-06-14", "day"),
    ("The flight is on 06/14/2026", "06/14/2026", "2026-06-14", "2026-06-14", "day"),
    ("The flight is on 3 June 2026", "3 June 2026", "2026-06-03", "2026-06-03", "day"),
    ("The flight is on June 3, 2026", "June 3, 2026", "2026-06-03", "2026-06-03", "day"),
    ("Let's meet on the 3rd of June", "the 3rd of June", "2026-06-03", "2026-06-03", "day"),
    ("Let's meet June 3rd", "June 3rd", "2026-06-03", "2026-06-03", "day"),
    ("Let's meet on Wednesday, June 3", "Wednesday, June 3", "2026-06-03", "2026-06-03", "day"),
    ("We met on 3 March", "3 March", "2026-03-03", "2026-03-03", "day"),
    ("We got engaged on 14 Feb", "14 Feb", "2026-02-14", "2026-02-14", "day"),
    ("Let's meet on June 14", "June 14", "2026-06-14", "2026-06-14", "day"),
    # A date set or moved in the past is one to come (the act is past, the date is not).
    ("We picked the wedding date: June 14", "June 14", "2026-06-14", "2026-06-14", "day"),
    ("We changed the date to the 14th", "the 14th", "2026-04-14", "2026-04-14", "day"),
    ("The dentist postponed my appointment to Friday", "Friday", "2026-03-20", "2026-03-20", "day"),
    ("My flight got delayed until Tuesday", "Tuesday", "2026-03-24", "2026-03-24", "day"),
    ("I moved to Lisbon on June 14", "June 14", "2025-06-14", "2025-06-14", "day"),  # where, not when it is set
    ("I was born on 5 May 1990", "5 May 1990", "1990-05-05", "1990-05-05", "day"),
    ("Let's meet on the 14th.", "the 14th", "2026-04-14", "2026-04-14", "day"),
    ("The invoice was due on the 14th.", "the 14th", "2026-03-14", "2026-03-14", "day"),
    ("Let's meet on the 18th", "the 18th", "2026-03-18", "2026-03-18", "day"),
    ("Payday is the 31st", "the 31st", "2026-03-31", "2026-03-31", "day"),
    # Years after a word that makes them one.
    ("We lived there in 2024", "2024", "2024-01-01", "2024-12-31", "year"),
    ("I've been vegetarian since 2019", "since 2019", "2019-01-01", "2026-03-18", "year"),
    ("Back in 1999 we had no phones", "1999", "1999-01-01", "1999-12-31", "year"),
    # Counted back or ahead: calendar units, every unit a vague count may mean.
    ("I sold it two days ago", "two days ago", "2026-03-16", "2026-03-16", "day"),
    ("I sold it 3 days ago", "3 days ago", "2026-03-15", "2026-03-15", "day"),
    ("I sold it a week ago", "a week ago", "2026-03-09", "2026-03-15", "week"),
    ("I sold it two weeks ago", "two weeks ago", "2026-03-02", "2026-03-08", "week"),
    ("I moved a couple of weeks ago", "a couple of weeks ago", "2026-02-23", "2026-03-08", "week"),
    ("I moved a few days ago", "a few days ago", "2026-03-14", "2026-03-16", "day"),
    ("I moved several days ago", "several days ago", "2026-03-12", "2026-03-15", "day"),
    ("I moved a month ago", "a month ago", "2026-02-01", "2026-02-28", "month"),
    ("I moved a couple of months ago", "a couple of months ago", "2025-12-01", "2026-01-31", "month"),
    ("I moved a year ago", "a year ago", "2025-01-01", "2025-12-31", "year"),
    ("The results come in 3 days", "in 3 days", "2026-03-21", "2026-03-21", "day"),
    ("We leave in two weeks", "in two weeks", "2026-03-30", "2026-04-05", "week"),
    ("We leave in a month", "in a month", "2026-04-01", "2026-04-30", "month"),
    ("We leave in a few days", "in a few days", "2026-03-20", "2026-03-22", "day"),
    ("We leave two weeks from now", "two weeks from now", "2026-03-30", "2026-04-05", "week"),
    ("We leave in two weeks' time", "in two weeks' time", "2026-03-30", "2026-04-05", "week"),
    # Rolling spans that end (or start) today.
    ("I slept badly the past week", "the past week", "2026-03-11", "2026-03-18", "week"),
    ("It rained the last few days", "the last few days", "2026-03-14", "2026-03-18", "day"),
    ("Rain for the next 3 days", "the next 3 days", "2026-03-18", "2026-03-21", "day"),
    ("Reply within two weeks", "within two weeks", "2026-03-18", "2026-04-01", "week"),
    ("Prices rose over the past month", "the past month", "2026-02-18", "2026-03-18", "month"),
    ("Sunny the coming week", "the coming week", "2026-03-18", "2026-03-25", "week"),
    # A bare weekend, by the tense.
    ("Over the weekend I went hiking", "the weekend", "2026-03-14", "2026-03-15", "week"),
    ("Any plans for the weekend?", "the weekend", "2026-03-21", "2026-03-22", "week"),
]

NO_DATE = [
    "I may go",
    "march forward",
    "She will march on Parliament",
    "May I ask a question?",
    "the 4 of us",
    "version 2.3",
    "room 101",
    "call me at 5",
    "I swim on Mondays",
    "It's the 3rd time I've asked",
    "the 21st century",
    "June said she would come",
    "I paid 2000 dollars for it",
    "back in 5 minutes",
    "it took me two weeks",
    "before the move",
    "two days after the wedding",
    "the first holiday in three years",
    "I finished it in two weeks",
    "a spring in the garden",
    "a month-long course",
    "the mayor of Lisbon",
    "dinner in Mayfair",
    "11/10/2026",
    "the last day of term",
]


def _day(text: str) -> date:
    return date.fromisoformat(text)


@pytest.mark.parametrize(("text", "phrase", "start", "end", "granularity"), PHRASINGS)
def test_a_phrasing_resolves_to_its_dates(text, phrase, start, end, granularity):
    [mention] = mentions_resolve(text, anchor=ANCHOR)
    assert (mention.phrase, mention.start, mention.end, mention.granularity) == (
        phrase,
        _day(start),
        _day(end),
        granularity,
    )
    assert text[mention.span[0] : mention.span[1]] == phrase


def test_the_table_holds_at_least_80_phrasings():
    assert len(PHRASINGS) >= 80


@pytest.mark.parametrize("text", NO_DATE)
def test_a_text_without_a_date_has_no_mention(text):
    assert mentions_resolve(text, anchor=ANCHOR) == []


def test_every_date_of_a_turn_is_resolved_in_order():
    text = "I saw her yesterday and we meet again on Tuesday"
    assert mentions_resolve(text, anchor=ANCHOR) == [
        Mention("yesterday", date(2026, 3, 17), date(2026, 3, 17), "day", (10, 19)),
        Mention("Tuesday", date(2026, 3, 24), date(2026, 3, 24), "day", (41, 48)),
    ]


def test_a_month_after_another_month_and_a_joining_word_is_a_date():
    mentions = mentions_resolve("We'll travel from May to July", anchor=ANCHOR)
    assert [(m.phrase, m.start, m.end) for m in mentions] == [
        ("May", date(2026, 5, 1), date(2026, 5, 31)),
        ("July", date(2026, 7, 1), date(2026, 7, 31)),
    ]


def test_a_date_resolves_against_the_anchors_own_day_in_its_timezone():
    # 23:30 on the 18th in New York is already the 19th in UTC: "yesterday" is the writer's 17th.
    new_york = datetime(2026, 3, 18, 23, 30, tzinfo=timezone(timedelta(hours=-4)))
    [mention] = mentions_resolve("I called her yesterday", anchor=new_york)
    assert mention.start == date(2026, 3, 17)


@pytest.mark.parametrize(
    ("anchor", "text", "start", "end"),
    [
        # Sunday: the weekend under way is this one; "last weekend" is the week before's.
        (datetime(2026, 3, 22, 9, tzinfo=UTC), "Free this weekend", "2026-03-21", "2026-03-22"),
        (datetime(2026, 3, 22, 9, tzinfo=UTC), "We hiked last weekend", "2026-03-14", "2026-03-15"),
        (datetime(2026, 3, 22, 9, tzinfo=UTC), "Over the weekend I went hiking", "2026-03-21", "2026-03-22"),
        # Saturday: a past weekend is the one before, not the one just starting.
        (datetime(2026, 3, 21, 9, tzinfo=UTC), "Over the weekend I went hiking", "2026-03-14", "2026-03-15"),
        # Across a year's end.
        (datetime(2026, 1, 1, 9, tzinfo=UTC), "Busy last week", "2025-12-22", "2025-12-28"),
        (datetime(2026, 1, 1, 9, tzinfo=UTC), "I moved last month", "2025-12-01", "2025-12-31"),
        (datetime(2025, 12, 15, 9, tzinfo=UTC), "The course starts next month", "2026-01-01", "2026-01-31"),
        (datetime(2026, 1, 10, 9, tzinfo=UTC), "The boiler broke last winter", "2024-12-01", "2025-02-28"),
        (datetime(2026, 1, 10, 9, tzinfo=UTC), "Skiing this winter", "2025-12-01", "2026-02-28"),
        # A month back from the 31st lands in February; a leap year's February has 29 days.
        (datetime(2026, 3, 31, 9, tzinfo=UTC), "Prices rose over the past month", "2026-02-28", "2026-03-31"),
        (datetime(2028, 3, 10, 9, tzinfo=UTC), "I moved a month ago", "2028-02-01", "2028-02-29"),
        # "the 31st" skips the months without one.
        (datetime(2026, 4, 5, 9, tzinfo=UTC), "Payday is the 31st", "2026-05-31", "2026-05-31"),
    ],
)
def test_a_phrasing_resolves_against_other_anchors(anchor, text, start, end):
    [mention] = mentions_resolve(text, anchor=anchor)
    assert (mention.start, mention.end) == (_day(start), _day(end))


def test_dates_in_the_eval_conversations_resolve_like_their_answers():
    """Three turns of eval/conversations_v1 with the dates its temporal questions give as answers."""
    cases = [
        ("2023-02-04T19:05:00+00:00", "We went to the rescue centre in Otley last weekend", "2023-01-28"),
        ("2023-02-18T10:00:00+00:00", "Started guitar lessons yesterday with a guy called Pete", "2023-02-17"),
        ("2024-04-17T10:00:00+00:00", "Had my viva on Friday, passed with minor corrections!!", "2024-04-12"),
    ]
    for anchor, text, answer in cases:
        [mention] = mentions_resolve(text, anchor=datetime.fromisoformat(anchor))
        assert mention.start <= _day(answer) <= mention.end


def test_another_language_gives_no_mentions():
    assert mentions_resolve("Ich komme am Montag", anchor=ANCHOR, language="de") == []
    assert mentions_resolve("I come on Monday", anchor=ANCHOR, language="en-GB") != []


def test_a_naive_anchor_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        mentions_resolve("yesterday", anchor=datetime(2026, 3, 18, 14))
