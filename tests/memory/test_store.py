"""memory.elastic.store.memories_fetch: memories of several indices in one call, named by their own id or
the external id their writer gave, as the subject's key (DLS) and the filters allow."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from atlas_site.elastic.keys import owner_filter
from atlas_site.errors import ValidationFailed
from memory.elastic import links, queries, store
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
        scope.reader(),
        ids=[own, theirs, other_tenant, own_fact, "missing"],
        memory_type="episodic",
        filters=scope.read_filters(),
    )
    assert list(found) == [own]
    assert found[own]["_source"]["text"] == "I moved to Lisbon" and "embedding" not in found[own]["_source"]
    assert store.memories_get(scope.reader(), ids=[], memory_type="episodic", filters=scope.read_filters()) == {}
    with pytest.raises(ValueError):  # a filter only a search decides is never silently dropped
        store.memories_get(scope.reader(), ids=[own], memory_type="episodic", filters=[{"term": {"agent_id": "a"}}])


@pytest.mark.parametrize("code_filter", [True, False], ids=["guard-and-dls", "dls-alone"])
def test_another_subjects_or_tenants_memory_named_by_own_or_external_id_is_absent(
    maya, tom, other_tenant_subject, settings, code_filter
) -> None:
    """The multi-get path of memories_fetch (own ids, filters the documents decide) keeps others out as the
    search did: another subject's and another tenant's memories, named by own id or by external id, in every
    index, are simply absent — by DLS alone when the code-level guard is off, and by the guard as well."""
    settings.ATLAS_CODE_FILTER = code_filter
    scope, toms, foreign = SubjectScope.of(maya), SubjectScope.of(tom), SubjectScope.of(other_tenant_subject)
    own_turn, own_fact, toms_turn, toms_fact, foreign_fact, foreign_entry = _stored(
        episode_prepare(**_owned(scope), text="I moved to Lisbon", external_id="own-turn"),
        fact_prepare(**_owned(scope), text="Lives in Lisbon", external_id="own-fact"),
        episode_prepare(**_owned(toms), text="Tom moved to Porto", external_id="toms-turn"),
        fact_prepare(**_owned(toms), text="Tom lives in Porto", external_id="toms-fact"),
        fact_prepare(**_owned(foreign), text="Lives in Faro", external_id="foreign-fact"),
        catalog_prepare(tenant_id=foreign.tenant_id, title="Hours", text="Open 8 to 4", external_id="foreign-cat"),
    )
    named = [toms_turn, toms_fact, foreign_fact, foreign_entry, "toms-turn", "toms-fact", "foreign-fact", "foreign-cat"]
    for versions in (False, True):
        found = store.memories_fetch(
            scope.reader(),
            ids=[own_turn, "own-fact", *named],
            memory_types=EVERY_INDEX,
            filters=scope.read_filters(),
            versions=versions,
        )
        assert {requested: hit["_id"] for requested, hit in found.items()} == {own_turn: own_turn, "own-fact": own_fact}
    assert store.memories_fetch(scope.reader(), ids=named, memory_types=EVERY_INDEX, filters=scope.read_filters()) == {}
    # The other tenant's subject, the same way round: Maya's memories are not its to read.
    assert store.memories_fetch(foreign.reader(), ids=[own_turn, own_fact, "own-fact"], memory_types=EVERY_INDEX,
                                filters=foreign.read_filters()) == {}  # fmt: skip


def test_the_code_level_guard_alone_keeps_others_out_of_a_read_by_id(maya, tom, other_tenant_subject, admin) -> None:
    """With a client that sees everything (no DLS), the subject's read filters alone decide what a read by own id
    returns: the subject's own memories and the tenant's shared catalog, never another subject's or tenant's."""
    scope, toms, foreign = SubjectScope.of(maya), SubjectScope.of(tom), SubjectScope.of(other_tenant_subject)
    own, shared, toms_fact, foreign_fact, foreign_entry = _stored(
        fact_prepare(**_owned(scope), text="Lives in Lisbon"),
        catalog_prepare(tenant_id=scope.tenant_id, title="Hours", text="Open 9 to 5"),
        fact_prepare(**_owned(toms), text="Tom lives in Porto", external_id="toms-fact"),
        fact_prepare(**_owned(foreign), text="Lives in Faro"),
        catalog_prepare(tenant_id=foreign.tenant_id, title="Hours", text="Open 8 to 4"),
    )
    every = [own, shared, toms_fact, foreign_fact, foreign_entry, "toms-fact"]
    assert set(store.memories_fetch(admin, ids=every, memory_types=EVERY_INDEX, filters=scope.read_filters())) == {
        own, shared,
    }  # fmt: skip
    tenant_only = store.memories_fetch(
        admin, ids=every, memory_types=EVERY_INDEX, filters=[owner_filter(tenant_id=scope.tenant_id, user_id=None)]
    )
    assert set(tenant_only) == {own, shared, toms_fact, "toms-fact"}


def _stored_unrefreshed(scope: SubjectScope, external_id: str) -> str:
    prepared = fact_prepare(**_owned(scope), text="Lives in Lisbon", external_id=external_id)
    store.memory_index(
        SubjectScope.writer(),
        memory_type="semantic",
        memory_id=prepared.memory_id,
        source=prepared.source,
        refresh=False,
    )
    return prepared.memory_id


def test_a_read_by_own_id_is_real_time(maya) -> None:
    """Own ids are got, and a get is real-time: a memory stored without a refresh is read at once, with the
    version an optimistic write needs (and without it when none is asked for)."""
    scope = SubjectScope.of(maya)
    memory_id = _stored_unrefreshed(scope, "lisbon")
    found = store.memories_fetch(
        scope.reader(), ids=[memory_id], memory_types=EVERY_INDEX, filters=scope.read_filters(), versions=True
    )
    hit = found[memory_id]
    assert (hit["_id"], hit["_source"]["text"]) == (memory_id, "Lives in Lisbon")
    assert isinstance(hit["_seq_no"], int) and hit["_primary_term"] == 1 and "embedding" not in hit["_source"]
    plain = store.memories_fetch(scope.reader(), ids=[memory_id], memory_types=("semantic",), filters=[])
    assert plain[memory_id]["_source"]["text"] == "Lives in Lisbon" and "_seq_no" not in plain[memory_id]


@pytest.fixture
def no_periodic_refresh(admin):
    """The indices refresh only when asked: ``index.refresh_interval: -1`` (index-modules.html#index-refresh-
    interval-setting; an explicit interval also turns search-idle refreshes off). The default refreshes every
    second, so "not searchable yet" would depend on how long the machine takes between two requests."""
    indices = store.indices_of(EVERY_INDEX)
    admin.indices.put_settings(index=indices, settings={"index": {"refresh_interval": "-1"}})
    yield
    admin.indices.put_settings(index=indices, settings={"index": {"refresh_interval": None}})


def test_an_external_id_is_searched(maya, admin, no_periodic_refresh) -> None:
    """An external id is searched, so it is found once a refresh made it searchable — where the same memory's
    own id is read at once (the get, not a search, answered that)."""
    scope = SubjectScope.of(maya)
    memory_id = _stored_unrefreshed(scope, "lisbon")
    by_external = {"ids": ["lisbon"], "memory_types": EVERY_INDEX, "filters": scope.read_filters()}
    time.sleep(1.5)  # past the default interval's next refresh: none comes
    assert store.memories_fetch(scope.reader(), **by_external) == {}
    assert memory_id in store.memories_fetch(scope.reader(), ids=[memory_id], memory_types=EVERY_INDEX, filters=[])
    admin.indices.refresh(index=store.indices_of(EVERY_INDEX))
    assert store.memories_fetch(scope.reader(), **by_external)["lisbon"]["_id"] == memory_id


def test_own_id_wins_and_a_copy_in_two_indices_is_the_later_types(maya, admin) -> None:
    """As the search per index answered: a memory's own id wins over another memory's external id equal to it,
    and a fact stored in the hot index and the archive at once (an archive move between its copy and its
    delete) is the copy of the type named later."""
    scope = SubjectScope.of(maya)
    fact = fact_prepare(**_owned(scope), text="Lives in Lisbon")
    _stored(fact, fact_prepare(**_owned(scope), text="Lives in Porto", external_id=fact.memory_id))
    read = {"ids": [fact.memory_id], "filters": scope.read_filters()}
    found = store.memories_fetch(scope.reader(), memory_types=store.FACT_TYPES_INDICES, **read)
    assert found[fact.memory_id]["_source"]["text"] == "Lives in Lisbon"
    archived = {**fact.source, "memory_type": "archive"}
    assert store.memories_bulk_index(SubjectScope.writer(), [("archive", fact.memory_id, archived)]) == []
    for types, kept in ((("semantic", "archive"), "archive"), (("archive", "semantic"), "semantic")):
        found = store.memories_fetch(scope.reader(), memory_types=types, **read)
        assert found[fact.memory_id]["_source"]["memory_type"] == kept


CURRENT_VIEW = [*queries.visibility_filter(include_superseded=False, as_of=None)]


@pytest.mark.parametrize(
    "view",
    [[], [queries.NOT_PENDING], CURRENT_VIEW],
    ids=["every-version", "not-pending", "current"],
)
@pytest.mark.parametrize("guard", ["subject", "tenant"])
def test_a_read_by_own_id_answers_what_the_search_answers(maya, tom, other_tenant_subject, admin, view, guard) -> None:
    """For every filter the multi-get decides from the documents, its answer is the search's: the same filters
    wrapped in a bool (which source_predicate does not recognise, so memories_fetch searches) find the same
    memories among pending, replaced, retracted, shared, another subject's and another tenant's ones."""
    scope, toms, foreign = SubjectScope.of(maya), SubjectScope.of(tom), SubjectScope.of(other_tenant_subject)
    variants = [
        fact_prepare(**_owned(scope), text="plain"),
        fact_prepare(**_owned(scope), text="pending"),
        fact_prepare(**_owned(scope), text="replaced"),
        fact_prepare(**_owned(scope), text="retracted"),
        fact_prepare(**_owned(scope), text="replaced by nothing listed"),
        episode_prepare(**_owned(scope), text="a turn"),
        catalog_prepare(tenant_id=scope.tenant_id, title="Hours", text="Open 9 to 5"),
        fact_prepare(**_owned(toms), text="Tom's"),
        fact_prepare(**_owned(foreign), text="another tenant's"),
    ]
    variants[1].source["review_state"] = "pending"
    variants[2].source["superseded_by"] = ["newer"]
    variants[3].source["retracted"] = True
    variants[4].source["superseded_by"] = []
    ids = _stored(*variants)
    owner = owner_filter(tenant_id=scope.tenant_id, user_id=scope.user_id if guard == "subject" else None)
    filters = [owner, *view]
    assert queries.source_predicate(filters) is not None
    got = store.memories_fetch(admin, ids=ids, memory_types=EVERY_INDEX, filters=filters)
    searched = store.memories_fetch(admin, ids=ids, memory_types=EVERY_INDEX, filters=[{"bool": {"filter": filters}}])
    assert {i: hit["_source"] for i, hit in got.items()} == {i: hit["_source"] for i, hit in searched.items()}
    assert ids[0] in got and ids[-1] not in got and (ids[-2] in got) == (guard == "tenant")
    assert (ids[1] in got) == (view == []) and (ids[2] in got) == (ids[3] in got) == (view != CURRENT_VIEW)


def test_only_the_filters_the_product_builds_are_decided_from_the_document(maya) -> None:
    """source_predicate recognises the guard, NOT_PENDING and the current view by equality with what their
    builders make; a look-alike or any other filter leaves the read to the search."""
    scope = SubjectScope.of(maya)
    owns = queries.source_predicate([owner_filter(tenant_id=scope.tenant_id, user_id=scope.user_id)])
    assert owns is not None and owns({"tenant_id": scope.tenant_id, "user_id": scope.user_id})
    assert owns({"tenant_id": scope.tenant_id}) and not owns({"tenant_id": scope.tenant_id, "user_id": "someone"})
    assert not owns({"tenant_id": "another", "user_id": scope.user_id}) and not owns({"user_id": scope.user_id})
    guard = owner_filter(tenant_id=scope.tenant_id, user_id=scope.user_id)
    look_alike = {"bool": {**guard["bool"], "minimum_should_match": 0}}
    for other in (
        [look_alike],
        [{"term": {"tenant_id": scope.tenant_id}, "boost": 2}],
        [{"term": {"user_id": scope.user_id}}],
        [guard, *queries.visibility_filter(include_superseded=False, as_of=datetime(2026, 1, 1, tzinfo=UTC))],
        [guard, {"bool": {"must_not": [{"term": {"retracted": True}}]}}],
    ):
        assert queries.source_predicate(other) is None, other


def test_unlinking_a_forgotten_id_works_on_the_document_as_stored(maya) -> None:
    """links.memory_links_forget runs on the stored document (LINKS_FORGET_SCRIPT): ``drop`` removes the
    ids, ``mark`` puts "(forgotten)" in the place of each, ``mark_if_empty`` leaves the mark only where
    nothing else remains (a fork keeps its live successor); a document of another ``created_at`` (the
    same id written again) and a missing one are left alone."""
    scope = SubjectScope.of(maya)
    fact = fact_prepare(tenant_id=scope.tenant_id, user_id=scope.user_id, text="Maya knits")
    fact.source.update(supersedes=["f1", "keep"], superseded_by=["f1", "g"], source_episodes=["e1", "e2", "e3"])
    store.memory_index(
        scope.writer(), memory_type="semantic", memory_id=fact.memory_id, source=fact.source, refresh=True
    )
    index = store.memories_fetch(scope.reader(), ids=[fact.memory_id], memory_types=("semantic",), filters=[])[
        fact.memory_id
    ]["_index"]

    def unlink(forgotten: list[str], modes: dict[str, str], created_at: str | None = fact.source["created_at"]) -> bool:
        return links.memory_links_forget(
            scope.writer(), index=index, memory_id=fact.memory_id, forgotten=forgotten, modes=modes,
            created_at=created_at,
        )  # fmt: skip

    def stored_links() -> dict:
        hit = store.memory_get_current(scope.reader(), index=index, memory_id=fact.memory_id)
        return {k: hit["_source"].get(k) for k in ("supersedes", "superseded_by", "source_episodes")}

    assert unlink(
        ["f1", "e1", "e3"], {"supersedes": "drop", "superseded_by": "mark_if_empty", "source_episodes": "mark"}
    )
    assert stored_links() == {
        "supersedes": ["keep"],
        "superseded_by": ["g"],
        "source_episodes": ["(forgotten)", "e2", "(forgotten)"],
    }
    assert unlink(["g"], {"superseded_by": "mark_if_empty"}, created_at="2001-01-01T00:00:00+00:00")  # another one
    assert stored_links()["superseded_by"] == ["g"]
    assert unlink(["g"], {"superseded_by": "mark_if_empty"})
    assert stored_links()["superseded_by"] == ["(forgotten)"]
    with pytest.raises(ValueError):
        unlink(["g"], {"text": "drop"})
    assert not links.memory_links_forget(
        scope.writer(), index=index, memory_id="never-stored", forgotten=["g"], modes={"supersedes": "drop"},
        created_at=None,
    )  # fmt: skip
