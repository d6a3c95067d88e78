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


@pytest.mark.parametrize("code_filter", [True, False], ids=["guard-and-dls", "dls-alone"])
def test_memories_by_own_id_are_the_subjects_own_and_the_shared_ones(
    maya, tom, other_tenant_subject, settings, code_filter
) -> None:
    """memories_get (recall's evidence): one mget with the subject's key; another subject's turn, even named by
    its id, is not read — by DLS alone when the code-level guard is off, and by the guard as well."""
    settings.ATLAS_CODE_FILTER = code_filter
    scope, toms, foreign = SubjectScope.of(maya), SubjectScope.of(tom), SubjectScope.of(other_tenant_subject)
    own, theirs, other_tenant, own_fact = _stored(
        episode_prepare(**_owned(scope), text="I moved to Lisbon"),
        episode_prepare(**_owned(toms), text="Tom moved to Porto"),
        episode_prepare(**_owned(foreign), text="moved to Faro"),
        fact_prepare(**_owned(scope), text="Lives in Lisbon"),
    )
    found = store.memories_get(
        scope.reader(), ids=[own, theirs, other_tenant, own_fact, "missing"], memory_type="episodic", owned=scope.owns
    )
    assert list(found) == [own]
    assert found[own]["_source"]["text"] == "I moved to Lisbon" and "embedding" not in found[own]["_source"]
    assert store.memories_get(scope.reader(), ids=[], memory_type="episodic", owned=scope.owns) == {}


def test_the_guard_over_one_document_is_the_read_filter(maya, tom) -> None:
    """SubjectScope.owns says of a document's values what read_filters (owner_filter) says in a query."""
    scope = SubjectScope.of(maya)
    assert scope.owns({"tenant_id": scope.tenant_id, "user_id": scope.user_id})
    assert scope.owns({"tenant_id": scope.tenant_id})  # shared: the tenant's catalog
    assert not scope.owns({"tenant_id": scope.tenant_id, "user_id": SubjectScope.of(tom).user_id})
    assert not scope.owns({"tenant_id": "another", "user_id": scope.user_id})
    assert not scope.owns({"user_id": scope.user_id})
