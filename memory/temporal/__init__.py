"""Dates in text: the dates a turn names, resolved against its own timestamp (``mentions_resolve``), and
the time a question asks about (``question_range``). Pure functions, English, standard library only;
the grammar and its rules for ambiguous dates are in docs/temporal.md."""

from memory.temporal.mentions import Mention, mentions_resolve
from memory.temporal.questions import EventBound, TimeRange, question_range

__all__ = ["EventBound", "Mention", "TimeRange", "mentions_resolve", "question_range"]
