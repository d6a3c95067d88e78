"""tenants.dashboard.contributions: what another app registers is what the tenant pages show of a subject
(the memory app registers its counts when it starts: tenants imports none of its code)."""

from __future__ import annotations

from tenants.dashboard import contributions
from tenants.models import MemorySubject


def test_registered_counters_answer_for_an_active_subject_and_none_for_a_deactivated_one(monkeypatch) -> None:
    monkeypatch.setattr(contributions, "_subject_counters", {})
    contributions.subject_counter_register(name="notes", counter=lambda subject: {"notes": len(subject.external_id)})
    contributions.subject_counter_register(name="links", counter=lambda subject: {"links": 2})

    assert contributions.subject_counts(MemorySubject(external_id="maya", is_active=True)) == {"notes": 4, "links": 2}
    assert contributions.subject_counts(MemorySubject(external_id="maya", is_active=False)) is None


def test_the_memory_app_registers_its_counts_when_it_starts() -> None:
    assert "memories" in contributions._subject_counters
