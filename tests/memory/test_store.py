"""memory.elastic.store.memories_fetch: memories of several indices in one call, named by their own id or
the external id their writer gave, as the subject's key (DLS) and the filters allow."""

from __future__ import annotations

import pytest

from atlas_site.errors import ValidationFailed
from memory.elastic import store
from memory.scope import SubjectScope
from memory.selectors import RECALL_TYPES
from memory.services.prepare import catalog_prepare, episode_prepare, fact_prepare, playbook_prepare

pytestmark = pytest.mark.django_db
EVERY_INDEX = (*RECALL_TYPES, "archive")


def _stored(*prepared) -> list[str]:
    assert (
        store.memories_bulk_index(SubjectScope.writer(), [(p.memory_type, p.memory_id, p.source) for p in prepared])
        == []
    )
    return [p.memory_id for p in prepared]


def _owned(scope: SubjectScope) -> dict[str, str]:
    return {"tenant_id": scope.tenant_id, "user_id": scope.user_id}


def test_memories_of_several_indices_by_own_or_external_id(maya, tom) -> None:
    scope, toms = SubjectScope.of(maya), SubjectScope.of(tom)
    episode, fact, playbook, entry, same_name_turn, same_name_fact, foreign = _stored(
        episode_prepare(**_owned(scope), text="I moved to Lisbon", external_id="turn-1"),
        fact_prepare(**_owned(scope), text="Lives in Lisbon", external_id="fact-1"),
        playbook_prepare(**_owned(scope), name="move", trigger_text="moving", steps=["pack"], external_id="pb-1"),
        catalog_prepare(tenant_id=scope.tenant_id, title="Hours", text="Open 9 to 5", external_id="cat-1"),
        episode_prepare(**_owned(scope), text="a turn", external_id="twice"),
        fact_prepare(**_owned(scope), text="a fact", external_id="twice"),
        fact_prepare(**_owned(toms), text="Tom's fact", external_id="toms-1"),
    )
    found = store.memories_fetch(
        scope.reader(),
        ids=[episode, "fact-1", playbook, "cat-1", foreign, "toms-1", "missing"],
        memory_types=EVERY_INDEX,
        filters=scope.read_filters(),
        versions=True,
    )
    assert {requested: (hit["_id"], hit["_source"]["memory_type"]) for requested, hit in found.items()} == {
        episode: (episode, "episodic"), "fact-1": (fact, "semantic"), playbook: (playbook, "procedural"),
        "cat-1": (entry, "catalog"),
    }  # fmt: skip
    assert all(isinstance(hit["_seq_no"], int) and "embedding" not in hit["_source"] for hit in found.values())
    with pytest.raises(ValidationFailed, match="names 2 memories"):
        store.memories_fetch(scope.reader(), ids=["twice"], memory_types=EVERY_INDEX, filters=scope.read_filters())
    by_type = store.memories_fetch(scope.reader(), ids=["twice"], memory_types=("semantic",), filters=[])
    assert by_type["twice"]["_id"] == same_name_fact and same_name_turn != same_name_fact
