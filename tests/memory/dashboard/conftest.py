"""Fixtures for the dashboard tests: people linked to the memory tests' subjects, with memories."""

from __future__ import annotations

import pytest

from memory.services import writes
from tenants.models import MemorySubject
from tests.browser import person_create

PASSWORD = "a long enough password 1"


def linked_person(email: str, *subjects: MemorySubject):
    person = person_create(email, PASSWORD)
    for subject in subjects:
        MemorySubject.objects.filter(pk=subject.pk).update(person=person)
        subject.person = person
    return person


@pytest.fixture
def maya_person(maya):
    return linked_person("maya@example.org", maya)


@pytest.fixture
def maya_memories(maya) -> dict[str, dict]:
    """A conversation, a fact distilled from it and corrected twice (a chain of three), a playbook."""
    said = writes.episode_write(subject=maya, text="I moved to Lisbon last spring", session_id="chat-1")
    writes.episode_write(subject=maya, text="My cat Miso hates the vet", session_id="chat-1")
    first = writes.fact_write(subject=maya, text="Lives in Porto", fact_type="identity", source_episodes=[said["id"]])
    second = writes.fact_edit(subject=maya, memory_id=first["id"], text="Lives in Lisbon")
    third = writes.fact_edit(subject=maya, memory_id=second["id"], text="Lives in Lisbon, in Alfama")
    likes = writes.fact_write(subject=maya, text="Prefers window seats on trains", fact_type="preference")
    playbook = writes.playbook_write(
        subject=maya,
        name="vet visit",
        trigger_text="the cat has to see the vet",
        steps=[{"instruction": "put a towel in the carrier"}, {"instruction": "book the first slot"}],
    )
    return {"said": said, "first": first, "second": second, "third": third, "likes": likes, "playbook": playbook}
