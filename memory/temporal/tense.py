"""Whether the words around a date speak of the past or the future, which decides the ambiguous dates:
"on Friday", "in May", "the 14th", "over the weekend" (docs/temporal.md "Ambiguous dates").

No parser: a clause that holds a future word ("will", "going to", "plan" …) speaks of the future, else one
that holds a past word ("was", "went", "ago", a verb in -ed …) of the past. The date's own clause is read
first (", ", ";", "and", "but" … end one), then, when that clause is only a few words, its sentence, since
"On Friday, I went" puts the verb after the comma.
"""

from __future__ import annotations

import bisect
import re
from typing import Literal

from memory.temporal.vocabulary import FUTURE_PHRASES, FUTURE_WORDS, NOT_PAST_ED, PAST_WORDS

Direction = Literal["past", "future"]

_WORD = re.compile(r"[a-z']+")
_SENTENCE_END = re.compile(r"[.!?\n]+(?:\s|$)")
_CLAUSE_END = re.compile(r"[.!?\n;]+(?:\s|$)|,\s|\s(?:and|but|so|because|although)\s")
# A clause this short has no verb of its own ("On Friday, I went"): its sentence's verb decides.
_SHORT_CLAUSE_WORDS = 3


class _Breaks:
    """Where a text's clauses (or sentences) end: the clause around a position, found by bisection."""

    def __init__(self, text: str, pattern: re.Pattern[str]) -> None:
        found = [(match.start(), match.end()) for match in pattern.finditer(text)]
        self._starts = [start for start, _ in found]
        self._ends = [end for _, end in found]
        self._length = len(text)

    def around(self, position: int) -> tuple[int, int]:
        index = bisect.bisect_right(self._starts, position)
        start = self._ends[index - 1] if index else 0
        end = self._starts[index] if index < len(self._starts) else self._length
        return start, end


def _direction_of(text: str) -> Direction | None:
    words = set(_WORD.findall(text))
    if words & FUTURE_WORDS or any(phrase in text for phrase in FUTURE_PHRASES):
        return "future"
    if words & PAST_WORDS or any(word.endswith("ed") and len(word) > 3 for word in words - NOT_PAST_ED):
        return "past"
    return None


class TenseReader:
    """The direction each clause of a lower-cased text speaks in, each clause read once."""

    def __init__(self, lowered: str) -> None:
        self._lowered = lowered
        # Found on the first question: most texts have no date whose reading depends on the tense.
        self._clauses: _Breaks | None = None
        self._sentences: _Breaks | None = None
        self._read: dict[int, Direction | None] = {}

    def direction_at(self, position: int) -> Direction | None:
        """The direction of the clause around ``position`` (its sentence's, when the clause is a few words
        without a verb); None when they do not say."""
        if self._clauses is None:
            self._clauses = _Breaks(self._lowered, _CLAUSE_END)
        clause_start, clause_end = self._clauses.around(position)
        if clause_start not in self._read:
            self._read[clause_start] = self._clause_read(clause_start, clause_end)
        return self._read[clause_start]

    def _clause_read(self, start: int, end: int) -> Direction | None:
        clause = self._lowered[start:end]
        direction = _direction_of(clause)
        if direction is None and len(clause.split()) <= _SHORT_CLAUSE_WORDS:
            if self._sentences is None:
                self._sentences = _Breaks(self._lowered, _SENTENCE_END)
            sentence_start, sentence_end = self._sentences.around(start)
            direction = _direction_of(self._lowered[sentence_start:sentence_end])
        return direction
