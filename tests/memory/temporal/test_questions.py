"""question_range: the time a question asks about, asked on Wednesday 18 March 2026 at 14:00 UTC."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memory.temporal import question_range

NOW = datetime(2026, 3, 18, 14, 0, tzinfo=UTC)

# (question, first day or None, last day or None, asks when)
QUESTIONS = [
    # Asks for a time and names none: no range, but recall should favour turns that carry a date.
    ("When did I move to Lisbon?", None, None, True),
    ("When did we last talk about Lisbon?", None, None, True),
    ("Which day did I start the new job?", None, None, True),
    ("How long ago did I adopt the dog?", None, None, True),
    ("Can you remember when I moved?", None, None, True),
    # A month: the one just past unless the question speaks of plans or the future.
    ("What did we plan for May?", "2026-05-01", "2026-05-31", False),
    ("What did I do in May?", "2025-05-01", "2025-05-31", False),
    ("Where did I live in June?", "2025-06-01", "2025-06-30", False),
    ("What did we do in March?", "2026-03-01", "2026-03-31", False),
    ("What happened between May and July?", "2025-05-01", "2025-07-31", False),
    # Relative dates.
    ("What did I buy last year?", "2025-01-01", "2025-12-31", False),
    ("What did I say about the dentist yesterday?", "2026-03-17", "2026-03-17", False),
    ("What did I do last weekend?", "2026-03-14", "2026-03-15", False),
    ("What are we doing next week?", "2026-03-23", "2026-03-29", False),
    ("What did I eat on Friday?", "2026-03-13", "2026-03-13", False),
    ("What's planned for Friday?", "2026-03-20", "2026-03-20", False),
    ("What was I doing two weeks ago?", "2026-03-02", "2026-03-08", False),
    ("What did I do in the past two weeks?", "2026-03-04", "2026-03-18", False),
    ("When is the wedding in 2027?", "2027-01-01", "2027-12-31", True),
    # Open ranges: "before" has no start, "after" and "from" no end, "since" ends now.
    ("What happened before March?", None, "2026-02-28", False),
    ("What changed after March?", "2026-04-01", None, False),
    ("What have I done since January?", "2026-01-01", "2026-03-18", False),
    ("What did I read until 2025?", None, "2025-12-31", False),
    ("What did I cook from June 2025?", "2025-06-01", None, False),
]

# Neither a time nor a question about when: recall does not filter.
NO_TIME = [
    "Hello again",
    "Have I told you this before?",
    "What should I cook after work?",
    "Any ideas for before bed?",
    "What should I cook tonight for the two of us? Something with rice",
]

# Bounded by an event, not a date: (question, bound, the event's words, the edge of a state it dates).
EVENTS = [
    ("Where did I work before I moved to Lisbon?", "before", "I moved to Lisbon", "start"),
    ("What did we do after the move?", "after", "the move", "start"),
    ("Anything before the move?", "before", "the move", "start"),
    ("What car did I have before the Kia?", "before", "the Kia", "start"),
    ("What have I been doing since I left Fenn?", "since", "I left Fenn", "end"),
    ("What did I move on to after the GP placement?", "after", "the GP placement", "end"),
    ("Where did we go after I started at the clinic, and why?", "after", "I started at the clinic", "start"),
    ("Where did I live before moving out of Leipzig?", "before", "moving out of Leipzig", "end"),
]


def _day(text: str | None) -> date | None:
    return date.fromisoformat(text) if text else None


@pytest.mark.parametrize(("question", "start", "end", "asks_when"), QUESTIONS)
def test_a_question_asks_about_its_range(question, start, end, asks_when):
    asked = question_range(question, now=NOW)
    assert asked is not None
    assert (asked.start, asked.end, asked.asks_when) == (_day(start), _day(end), asks_when)


def test_the_table_holds_at_least_20_questions():
    assert len(QUESTIONS) >= 20


@pytest.mark.parametrize("question", NO_TIME[:4])
def test_a_question_about_nothing_has_no_range(question):
    assert question_range(question, now=NOW) is None


@pytest.mark.parametrize(("question", "bound", "words", "edge"), EVENTS)
def test_a_question_bounded_by_an_event_carries_it_without_days(question, bound, words, edge):
    """The days come from the subject's memories at recall (memory.recall.anchor), not from the words."""
    asked = question_range(question, now=NOW)
    assert (asked.start, asked.end, asked.asks_when) == (None, None, False)
    assert (asked.event.bound, asked.event.event, asked.event.state_edge()) == (bound, words, edge)


def test_a_date_after_the_bound_word_is_a_date_not_an_event():
    asked = question_range("What did I do before March?", now=NOW)
    assert (asked.start, asked.end, asked.event) == (None, date(2026, 2, 28), None)


def test_tonight_in_a_question_is_a_date():
    asked = question_range(NO_TIME[4], now=NOW)
    assert (asked.start, asked.end, asked.asks_when) == (date(2026, 3, 18), date(2026, 3, 18), False)


def test_a_range_keeps_the_dates_it_was_made_of():
    asked = question_range("What happened between May and July?", now=NOW)
    assert [(m.phrase, m.span) for m in asked.mentions] == [("May", (22, 25)), ("July", (30, 34))]


def test_a_naive_now_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        question_range("What did I do last year?", now=datetime(2026, 3, 18, 14))
