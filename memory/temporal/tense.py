"""Whether the words around a date speak of the past or the future, which decides the ambiguous dates:
"on Friday", "in May", "the 14th", "over the weekend" (docs/temporal.md "Ambiguous dates").

No parser: a clause that holds a future word ("will", "going to", "plan" …) or sets a date ("picked the
date", "postponed to") speaks of the future, else one
that holds a past word ("was", "went", "ago", a verb in -ed …) of the past. The date's own clause is read
first (", ", ";", "and", "but" … end one), then, when that clause is only a few words, its sentence, since
"On Friday, I went" puts the verb after the comma.
"""

from __future__ import annotations

import re
from typing import Literal

from memory.temporal.vocabulary import FUTURE_PHRASES, FUTURE_WORDS, NOT_PAST_ED, PAST_WORDS

Direction = Literal["past", "future"]

_WORD = re.compile(r"[a-z']+")
# What ends a sentence, and what else ends a clause. Found with str.find around the date, several times
# faster than a regex over the whole text.
_SENTENCE_ENDS = (". ", "! ", "? ", "\n")
_CLAUSE_ENDS = (*_SENTENCE_ENDS, "; ", ", ", " and ", " but ", " so ", " because ", " although ")
# A clause this short has no verb of its own ("On Friday, I went"): its sentence's verb decides.
_SHORT_CLAUSE_WORDS = 3


def _around(text: str, position: int, separators: tuple[str, ...]) -> tuple[int, int]:
    """The stretch of ``text`` around ``position`` between the nearest separators."""
    start, end = 0, len(text)
    for separator in separators:
        before = text.rfind(separator, 0, position)
        if before >= 0:
            start = max(start, before + len(separator))
        after = text.find(separator, position)
        if after >= 0:
            end = min(end, after)
    return start, end


# A date set or moved in the past is a date to come: "we picked the wedding date: June 14", "the dentist
# postponed my appointment to Friday". Not "moved to": that is where someone went ("I moved to Lisbon in May").
_DATE_SET = re.compile(
    r"\b(?:picked|set|fixed|chose|chosen|changed|confirmed|settled on|agreed on|moved|pushed back)"
    r"(?:\s+[\w']+){0,3}?\s+date\b"
    r"|\b(?:postponed|rescheduled|pushed back|delayed|brought forward|put off)(?:\s+[\w']+){0,3}?\s+(?:to|until|till)\s"
)


def _direction_of(text: str) -> Direction | None:
    words = set(_WORD.findall(text))
    if words & FUTURE_WORDS or any(phrase in text for phrase in FUTURE_PHRASES) or _DATE_SET.search(text):
        return "future"
    if words & PAST_WORDS or any(word.endswith("ed") and len(word) > 3 for word in words - NOT_PAST_ED):
        return "past"
    return None


class TenseReader:
    """The direction each clause of a lower-cased text speaks in, each clause read once."""

    def __init__(self, lowered: str) -> None:
        self._lowered = lowered
        self._read: dict[int, Direction | None] = {}
        # Only the separators the text holds (a few of them) are looked for around each date.
        self._clause_ends = tuple(separator for separator in _CLAUSE_ENDS if separator in lowered)
        self._sentence_ends = tuple(separator for separator in _SENTENCE_ENDS if separator in lowered)

    def direction_at(self, position: int) -> Direction | None:
        """The direction of the clause around ``position`` (its sentence's, when the clause is a few words
        without a verb); None when they do not say."""
        clause_start, clause_end = _around(self._lowered, position, self._clause_ends)
        if clause_start not in self._read:
            self._read[clause_start] = self._clause_read(clause_start, clause_end)
        return self._read[clause_start]

    def _clause_read(self, start: int, end: int) -> Direction | None:
        clause = self._lowered[start:end]
        direction = _direction_of(clause)
        if direction is None and len(clause.split()) <= _SHORT_CLAUSE_WORDS:
            sentence_start, sentence_end = _around(self._lowered, start, self._sentence_ends)
            direction = _direction_of(self._lowered[sentence_start:sentence_end])
        return direction
