"""The turn classifier: requests, questions, statements and small talk, from rules on the text."""

from __future__ import annotations

import pytest

from memory.recall.turn_kind import (
    QUESTION,
    REQUEST,
    SMALL_TALK,
    STATEMENT,
    turn_asks,
    turn_classify,
    turn_in_first_person,
)


@pytest.mark.parametrize(
    "text",
    [
        "Book me a train to Cardiff for Friday",
        "book me a table for two",
        "Can you suggest a dinner place near home?",
        "Could you please find me a plumber",
        "Please sort out the invoice for Lumen",
        "ok so fix the printer again",
        "Hey, can you book the flights?",
        "I need you to email the landlord",
        "We're off to Lisbon in May, can you sort out who has Biscuit?",
        "We're heading to the cabin on Friday, help me get ready",
        "What should we bring to the cabin this weekend?",
        "How do I tell my clients about a rate increase?",
        "I'd like to book a haircut",
    ],
)
def test_requests(text: str) -> None:
    assert turn_classify(text=text) == REQUEST


@pytest.mark.parametrize(
    "text",
    [
        "Where do I live again?",
        "where do i live",
        "Is Emil still allergic to eggs?",
        "What's my day rate at the moment",
        "How do we usually fly to Monterrey?",
        "Remind me, who's the GM now?",
        "Am I still with PureGym?",
    ],
)
def test_questions(text: str) -> None:
    assert turn_classify(text=text) == QUESTION


@pytest.mark.parametrize(
    "text",
    [
        "Priti's moving out next month, sadly",
        "I've been getting stomach cramps after lunch again",
        "Did the same as last time",
        "When we go away, our neighbour has the dog",
        "Mi vuelo sale mañana",
    ],
)
def test_statements(text: str) -> None:
    assert turn_classify(text=text) == STATEMENT


@pytest.mark.parametrize(
    "text", ["cheers!", "haha fair enough", "ok", "thanks, have a good evening", "you're the best", "takk!", "  ", "🙂"]
)
def test_small_talk(text: str) -> None:
    assert turn_classify(text=text) == SMALL_TALK


def test_small_talk_is_short_and_only_small_talk_words() -> None:
    assert turn_classify(text="ok thanks") == SMALL_TALK
    assert turn_classify(text="ok thanks, book it") == REQUEST  # one word of substance is enough
    assert turn_classify(text="yes yes yes yes yes yes yes") == STATEMENT  # longer than small talk runs


def test_turn_asks_tells_asked_turns_from_stated_ones() -> None:
    assert turn_asks(text="Which vet is Biscuit registered with?")
    assert turn_asks(text="Remind me to redirect post from the old flat")
    assert not turn_asks(text="When we go away, our neighbour Priti usually has Biscuit")
    assert not turn_asks(text="I live in Didsbury, just off Burton Road")


@pytest.mark.parametrize(
    ("text", "first_person"),
    [
        ("Where do I live again?", True),
        ("what's my day rate", True),
        ("When did we move to Lisbon?", True),
        ("Is the flat ours or rented?", True),
        ("I’m not sure, what did the vet say about me?", True),  # a typographic apostrophe
        ("Where does Kofi live?", False),
        ("Is there any ingredient that could put Kofi in hospital?", False),
        ("Which hospital unit did Amara transfer to?", False),
        ("Is Iris on the mailing list?", False),  # "is" is not "I"
        ("What does MYOB stand for?", False),  # nor a word that starts like one
    ],
)
def test_a_turn_in_the_first_person_speaks_of_its_writer(text: str, first_person: bool) -> None:
    assert turn_in_first_person(text=text) is first_person
