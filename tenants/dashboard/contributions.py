"""What other apps show on this app's tenant pages, registered when they start: this app imports none of
them. Today one thing: how many of each kind of content a subject holds (the subjects list and a
subject's page)."""

from __future__ import annotations

from collections.abc import Callable

from tenants.models import MemorySubject

SubjectCounter = Callable[[MemorySubject], dict[str, int]]
_subject_counters: dict[str, SubjectCounter] = {}


def subject_counter_register(*, name: str, counter: SubjectCounter) -> None:
    """Register (or replace) ``counter`` under ``name``: it answers ``{kind: count}`` for an active subject."""
    _subject_counters[name] = counter


def subject_counts(subject: MemorySubject) -> dict[str, int] | None:
    """What the registered counters report of the subject, or None when it cannot be read (a deactivated
    subject's key is revoked)."""
    if not subject.is_active:
        return None
    counts: dict[str, int] = {}
    for counter in _subject_counters.values():
        counts.update(counter(subject))
    return counts
