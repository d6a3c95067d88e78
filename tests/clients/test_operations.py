"""Every operation of the SDK against a live server: what it sends, and the typed answer it gives back."""

from __future__ import annotations

from datetime import datetime

import pytest
from atlas_memory import (
    Conflict,
    Forbidden,
    Hit,
    MemoryDetail,
    NotFound,
    PreconditionFailed,
    RecallOptions,
    Unauthorized,
    ValidationError,
)

from tenants import tokens
from tenants.models import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def test_write_recall_get_edit_chain_forget(atlas) -> None:
    episode = atlas.episode_write(subject="alice", text="I moved to Lisbon last month", session_id="s1")
    assert (episode.type, episode.subject, episode.session_id) == ("episodic", "alice", "s1")
    assert isinstance(episode.created_at, datetime)
    fact = atlas.fact_write(subject="alice", text="Lives in Lisbon", fact_type="identity", source_episodes=[episode.id])
    assert (fact.type, fact.status, fact.authority, fact.extra["fact_type"]) == (
        "semantic",
        "current",
        "agent",
        "identity",
    )
    recalled = atlas.recall(subject="alice", query="where does alice live?", k=3)
    assert all(isinstance(hit, Hit) for hit in recalled.hits)
    assert [hit.rank for hit in recalled.hits] == list(range(1, len(recalled.hits) + 1))
    top = next(hit for hit in recalled.hits if hit.id == fact.id)
    assert [e.id for e in top.evidence] == [episode.id] and top.evidence_count == 1
    assert "bm25" in recalled.legs and recalled.took_ms > 0 and recalled.explain is None

    detail = atlas.memory_get(subject="alice", memory_id=fact.id)
    assert isinstance(detail, MemoryDetail) and detail.etag
    assert [e.id for e in detail.provenance.episodes] == [episode.id]
    assert detail.provenance.written_by.kind == "token" and detail.provenance.run is None
    edited = atlas.fact_edit(subject="alice", memory_id=fact.id, text="Lives in Porto", if_match=detail.etag)
    assert edited.extra["supersedes"] == [fact.id] and edited.etag
    chain = atlas.memory_chain(subject="alice", memory_id=fact.id)
    assert [m.id for m in chain.chain] == [fact.id, edited.id]

    forgotten = atlas.memory_forget(subject="alice", memory_id=episode.id)
    assert (forgotten.id, forgotten.type, forgotten.forgotten) == (episode.id, "episodic", True)
    assert forgotten.receipt.indices["episodic"].ids == [episode.id]
    with pytest.raises(NotFound) as missing:
        atlas.memory_get(subject="alice", memory_id=episode.id)
    assert (missing.value.status, missing.value.code) == (404, "not_found")


def test_turn_answers_the_episode_and_the_hits(atlas) -> None:
    fact = atlas.fact_write(subject="alice", text="Alice is allergic to peanuts", fact_type="constraint")
    turn = atlas.turn(subject="alice", text="what snack can I eat, given my allergy to peanuts?", session_id="s2")
    assert turn.episode.type == "episodic" and turn.episode.text.startswith("what snack")
    assert turn.hits is turn.recall.hits and fact.id in [hit.id for hit in turn.hits]
    assert turn.episode.id not in [hit.id for hit in turn.hits]
    explained = atlas.turn(subject="alice", text="peanut allergy again", recall=RecallOptions(k=1, explain=True))
    assert len(explained.hits) == 1 and explained.hits[0].explain


def test_recall_explain_and_expect(atlas) -> None:
    kept = atlas.fact_write(subject="alice", text="Prefers window seats on trains", fact_type="preference")
    other = atlas.fact_write(subject="alice", text="Owns a grey cat named Miso", external_id="cat")
    explained = atlas.recall(subject="alice", query="train seats", explain=True, expect=["cat"], types=["semantic"])
    assert explained.hits[0].id == kept.id and explained.hits[0].explain
    assert [entry["id"] for entry in explained.explain["expected"]] == ["cat"] and other.external_id == "cat"
    as_fact_type = atlas.recall(subject="alice", query="train seats", fact_type="world")
    assert kept.id not in [hit.id for hit in as_fact_type.hits]


def test_lists_page_by_cursor_and_iterate_every_page(atlas) -> None:
    written = [atlas.episode_write(subject="alice", text=f"turn number {n}", session_id="paged").id for n in range(5)]
    page = atlas.memory_list(subject="alice", types=["episodic"], page_size=2)
    assert len(page.memories) == 2 and page.next_cursor
    second = atlas.memory_list(subject="alice", types=["episodic"], page_size=2, cursor=page.next_cursor)
    assert not {m.id for m in second.memories} & {m.id for m in page.memories}
    every = list(atlas.memory_list_iter(subject="alice", types=["episodic"], page_size=2))
    assert [m.id for m in every] == written[::-1]  # newest first
    only = atlas.memory_list(subject="alice", session_id="elsewhere")
    assert only.memories == [] and only.next_cursor is None

    created = atlas.subject_create(id="carol", display_name="Carol")
    assert (created.id, created.display_name, created.active) == ("carol", "Carol", True)
    assert [s.id for s in atlas.subject_list_iter(page_size=2)] == ["alice", "bob", "carol"]
    assert [s.id for s in atlas.subject_list(page_size=2).subjects] == ["alice", "bob"]


def test_a_conflict_gives_the_newest_by_its_external_id_from_the_problems_member(atlas) -> None:
    atlas.fact_write(subject="alice", text="Lives in Berlin", external_id="home-1")
    lisbon = atlas.fact_write(subject="alice", text="Lives in Lisbon", supersedes=["home-1"], external_id="home-2")
    with pytest.raises(Conflict) as replaced:
        atlas.fact_write(subject="alice", text="Lives in Faro", supersedes=["home-1"])
    assert (replaced.value.newest, replaced.value.newest_external_id) == (lisbon.id, "home-2")


def test_facts_superseded_include_superseded_and_conflict_names_the_newest(atlas) -> None:
    first = atlas.fact_write(subject="alice", text="Drinks coffee")
    etag = atlas.memory_get(subject="alice", memory_id=first.id).etag
    second = atlas.fact_edit(subject="alice", memory_id=first.id, text="Drinks tea", if_match=etag)
    with pytest.raises(PreconditionFailed) as stale:
        atlas.fact_edit(subject="alice", memory_id=first.id, text="Drinks water", if_match=etag)
    assert stale.value.status == 412 and stale.value.newest == second.id
    with pytest.raises(Conflict) as replaced:
        atlas.fact_edit(subject="alice", memory_id=first.id, text="Drinks water")
    assert type(replaced.value) is Conflict and replaced.value.newest == second.id
    with pytest.raises(Conflict) as again:
        atlas.fact_write(subject="alice", text="Drinks water", supersedes=[first.id])
    assert (again.value.newest, again.value.newest_external_id) == (second.id, None)
    current = atlas.memory_list(subject="alice", types=["semantic"])
    assert [m.text for m in current.memories] == ["Drinks tea"]
    everything = atlas.memory_list(subject="alice", types=["semantic"], include_superseded=True)
    assert {m.id for m in everything.memories} == {first.id, second.id}


def test_playbooks_and_outcomes(atlas) -> None:
    playbook = atlas.playbook_write(
        subject="alice",
        name="router reset",
        trigger_text="my internet is down",
        steps=["unplug the router for 30 seconds", {"instruction": "plug it back in"}],
    )
    assert playbook.type == "procedural"
    outcome = atlas.playbook_outcome(
        subject="alice", memory_id=playbook.id, success=True, refined_steps=["unplug it", "wait", "plug it in"]
    )
    assert outcome.id == playbook.id
    assert [s["instruction"] for s in outcome.extra["steps"]] == ["unplug it", "wait", "plug it in"]


def test_catalog_and_me(world, atlas) -> None:
    me = atlas.me()
    assert (me.kind, me.subject, me.name, sorted(me.scopes)) == ("tenant", None, "svc", ["forget", "read", "write"])
    entry = atlas.catalog_write(title="Return policy", text="Returns within 30 days.", tags=["policy"])
    assert entry.shared and entry.type == "catalog"
    got = atlas.catalog_get(entry_id=entry.id)
    assert got.text == "Returns within 30 days." and got.etag
    edited = atlas.catalog_edit(entry_id=entry.id, text="Returns within 60 days.", if_match=got.etag)
    assert edited.text == "Returns within 60 days."
    with pytest.raises(PreconditionFailed):
        atlas.catalog_edit(entry_id=entry.id, text="Returns within 90 days.", if_match=got.etag)
    assert [m.id for m in atlas.catalog_list_iter(page_size=1)] == [entry.id]
    assert atlas.catalog_list().memories[0].id == entry.id
    assert atlas.catalog_delete(entry_id=entry.id).forgotten is True
    with pytest.raises(NotFound):
        atlas.catalog_get(entry_id=entry.id)


def test_export_streams_the_header_then_each_memory(atlas) -> None:
    fact = atlas.fact_write(subject="alice", text="Speaks Portuguese")
    lines = list(atlas.memory_export(subject="alice"))
    assert lines[0]["format"] == "atlas-memory-export" and lines[0]["version"] == 1
    assert [line["id"] for line in lines[1:]] == [fact.id]
    with pytest.raises(NotFound):
        list(atlas.memory_export(subject="nobody"))


def test_forget_all_needs_the_confirmation(atlas) -> None:
    atlas.episode_write(subject="bob", text="I like jazz")
    with pytest.raises(ValidationError) as unconfirmed:
        atlas.memory_forget_all(subject="bob", confirm="alice")
    assert unconfirmed.value.fields == {"confirm": unconfirmed.value.errors[0].message}
    assert "confirm must repeat" in unconfirmed.value.detail
    everything = atlas.memory_forget_all(subject="bob", confirm="bob")
    assert everything.forgotten == {"episodic": 1} | {k: 0 for k in everything.forgotten if k != "episodic"}
    assert atlas.memory_list(subject="bob").memories == []


def test_errors_are_typed(world, atlas) -> None:
    with pytest.raises(ValidationError) as bad:
        atlas.fact_write(subject="alice", text="x", fact_type="opinion")
    assert bad.value.status == 400 and "fact_type" in bad.value.fields
    assert bad.value.title and bad.value.type == "urn:atlas-memory:problem:invalid"
    with world.client(world.ro) as reader, pytest.raises(Forbidden) as forbidden:
        reader.episode_write(subject="alice", text="not allowed")
    assert forbidden.value.status == 403
    with world.client("atlas_000000000000_" + "x" * 43) as stranger, pytest.raises(Unauthorized):
        stranger.me()
    with world.client(world.own) as own, pytest.raises(NotFound):
        own.memory_list(subject="bob")  # another subject's memories: the same 404 as a missing one
    with pytest.raises(Conflict) as taken:
        atlas.subject_create(id="alice")
    assert taken.value.status == 409


def test_proposals_are_listed_accepted_and_rejected(world, atlas) -> None:
    Tenant.objects.filter(pk=world.tenant.pk).update(review_mode="agents")  # every agent write waits for review
    fact = atlas.fact_write(subject="alice", text="Alice collects stamps")
    playbook = atlas.playbook_write(subject="alice", name="n", trigger_text="t", steps=["s"])
    assert (fact.status, playbook.status) == ("pending", "pending") and fact.version
    listed = list(atlas.proposal_list_iter(subject="alice", page_size=1))
    assert [p.id for p in listed] == [playbook.id, fact.id]
    assert atlas.proposal_list(subject="alice", written_by="token:nobody").proposals == []
    with pytest.raises(Forbidden):  # deciding needs the review scope, never implied by write
        atlas.proposal_accept(subject="alice", proposal_id=fact.id, version=fact.version)
    reviewer = tokens.token_create(tenant=world.tenant, name="reviewer", scopes="read,review", actor="t").secret
    with world.client(reviewer) as review:
        with pytest.raises(Conflict) as changed:
            review.proposal_accept(subject="alice", proposal_id=fact.id, version='"an-old-version"')
        assert changed.value.version == fact.version
        accepted = review.proposal_accept(subject="alice", proposal_id=fact.id, version=fact.version, text="Stamps!")
        assert (accepted.status, accepted.text) == ("current", "Stamps!")
        rejected = review.proposal_reject(subject="alice", proposal_id=playbook.id, version=playbook.version)
        assert (rejected.id, rejected.type, rejected.status) == (playbook.id, "procedural", "rejected")
    assert atlas.proposal_list(subject="alice").proposals == []
