"""What other apps show on this app's tenant pages, registered when they start: this app imports none of
them. How many of each kind of content a subject holds (the subjects list and a subject's page), and
notices every page of the section shows (an app's warning to the tenant's admins)."""

from __future__ import annotations

from collections.abc import Callable

from tenants.models import MemorySubject, Tenant

SubjectCounter = Callable[[MemorySubject], dict[str, int]]
SectionNotice = Callable[[Tenant], list[str]]
_subject_counters: dict[str, SubjectCounter] = {}
_section_notices: dict[str, SectionNotice] = {}


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


def section_notice_register(*, name: str, notice: SectionNotice) -> None:
    """Register (or replace) ``notice`` under ``name``: it answers the warnings (plain text) for a tenant."""
    _section_notices[name] = notice


def section_notices(tenant: Tenant) -> list[str]:
    """Every registered app's warnings for ``tenant``'s admins, shown on each page of the section."""
    return [line for notice in _section_notices.values() for line in notice(tenant)]
