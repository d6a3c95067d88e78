"""Recall, list and chains are isolated by the subject's key alone: the application filter is switched off."""

from __future__ import annotations

import pytest

from atlas_site.errors import NotFound
from memory.recall import memory_recall
from memory.selectors import memory_chain_get, memory_get, memory_list
from memory.services.writes import episode_write, fact_write


@pytest.fixture(autouse=True)
def dls_only(settings):
    settings.ATLAS_CODE_FILTER = False
    settings.ATLAS_USAGE_RECORDING = "off"


def test_subjects_never_see_each_other(maya, tom, other_tenant_subject) -> None:
    episode_write(subject=maya, text="Maya's bank PIN hint is the cat's birthday")
    toms = episode_write(subject=tom, text="Tom's bank PIN hint is his bike's brand")
    foreign = episode_write(subject=other_tenant_subject, text="Other Maya's bank PIN hint is blue")
    hits = memory_recall(subject=maya, query="bank PIN hint", k=20).hits
    assert [h["text"] for h in hits] == ["Maya's bank PIN hint is the cat's birthday"]
    listed = memory_list(subject=maya, page_size=200)["memories"]
    assert [m["text"] for m in listed] == ["Maya's bank PIN hint is the cat's birthday"]
    for memory_id in (toms["id"], foreign["id"]):
        with pytest.raises(NotFound):
            memory_get(subject=maya, memory_id=memory_id)


def test_chains_do_not_cross_subjects(maya, tom) -> None:
    toms_old = fact_write(subject=tom, text="Tom runs 10k")
    fact_write(subject=tom, text="Tom runs marathons", supersedes=[toms_old["id"]])
    with pytest.raises(NotFound):
        memory_chain_get(subject=maya, memory_id=toms_old["id"])
