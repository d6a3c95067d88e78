"""Supersession: chains both ways, natural vs harsh, include_superseded, as_of, crash repair, concurrency."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from atlas_site.errors import Conflict, NotFound
from memory.elastic import store
from memory.recall import memory_recall
from memory.scope import SubjectScope
from memory.selectors import memory_chain_get, memory_get
from memory.services.archive import superseded_facts_archive
from memory.services.documents import embed_into, fact_prepare
from memory.services.supersession import supersessions_reconcile
from memory.services.writes import fact_edit, fact_write


def texts(result) -> list[str]:
    return [h["text"] for h in result.hits]


def test_chain_of_three_followed_from_any_link(maya, settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"
    abc = fact_write(subject=maya, text="Maya works at Acme Design", fact_type="identity")
    xyz = fact_write(subject=maya, text="Maya works at Studio Xyz", fact_type="identity", supersedes=[abc["id"]])
    pqr = fact_write(subject=maya, text="Maya works at Pqr Labs", fact_type="identity", supersedes=[xyz["id"]])
    for start in (abc, xyz, pqr):
        chain = memory_chain_get(subject=maya, memory_id=start["id"])
        assert [m["id"] for m in chain] == [abc["id"], xyz["id"], pqr["id"]]
    old = memory_get(subject=maya, memory_id=abc["id"])
    assert old["superseded_by"] == [xyz["id"]] and old["superseded_at"]
    assert old["retracted"] is False
    current = memory_recall(subject=maya, query="where does Maya work", k=10)
    assert texts(current) == ["Maya works at Pqr Labs"]
    everything = memory_recall(subject=maya, query="where does Maya work", k=10, include_superseded=True)
    assert set(texts(everything)) == {"Maya works at Acme Design", "Maya works at Studio Xyz", "Maya works at Pqr Labs"}


def test_chain_is_followed_across_the_archive(maya, settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"
    abc = fact_write(subject=maya, text="Maya's dog is called Bolt")
    xyz = fact_write(subject=maya, text="Maya's dog is called Pixel", supersedes=[abc["id"]])
    pqr = fact_write(subject=maya, text="Maya's dog is called Luna", supersedes=[xyz["id"]])
    assert superseded_facts_archive(tenant=maya.tenant) == 2
    chain = memory_chain_get(subject=maya, memory_id=pqr["id"])
    assert [m["id"] for m in chain] == [abc["id"], xyz["id"], pqr["id"]]
    assert [m["type"] for m in chain] == ["archive", "archive", "semantic"]
    assert superseded_facts_archive(tenant=maya.tenant) == 0
    everything = memory_recall(subject=maya, query="dog's name", k=10, include_superseded=True)
    assert set(texts(everything)) == {
        "Maya's dog is called Bolt",
        "Maya's dog is called Pixel",
        "Maya's dog is called Luna",
    }


def test_natural_and_harsh_contradictions(maya) -> None:
    old = fact_write(subject=maya, text="Maya is vegetarian", confidence=0.9)
    natural = fact_write(subject=maya, text="Maya is pescatarian", confidence=0.9, supersedes=[old["id"]])
    assert natural["confidence"] == 0.9
    assert memory_get(subject=maya, memory_id=old["id"])["retracted"] is False
    wrong = fact_write(subject=maya, text="Maya is allergic to peanuts", confidence=0.9)
    harsh = fact_write(
        subject=maya,
        text="Maya is allergic to shellfish",
        confidence=0.9,
        supersedes=[wrong["id"]],
        contradiction="harsh",
    )
    assert harsh["confidence"] == pytest.approx(0.8)
    assert harsh["contradiction"] == "harsh"
    retracted = memory_get(subject=maya, memory_id=wrong["id"])
    assert retracted["retracted"] is True and retracted["superseded_by"] == [harsh["id"]]


def test_as_of_returns_what_was_valid_then(maya, settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"
    two_years_ago = datetime.now(UTC) - timedelta(days=730)
    last_year = datetime.now(UTC) - timedelta(days=365)
    berlin = fact_write(subject=maya, text="Maya lives in Berlin", fact_type="identity", at=two_years_ago.isoformat())
    lisbon = fact_write(
        subject=maya,
        text="Maya lives in Lisbon",
        fact_type="identity",
        supersedes=[berlin["id"]],
        at=last_year.isoformat(),
    )
    fact_write(
        subject=maya, text="Maya lives with her dog", valid_from=(datetime.now(UTC) + timedelta(days=30)).isoformat()
    )
    then = memory_recall(
        subject=maya, query="where does Maya live", k=10, as_of=(two_years_ago + timedelta(days=30)).isoformat()
    )
    assert texts(then) == ["Maya lives in Berlin"]
    now = memory_recall(subject=maya, query="where does Maya live", k=10)
    assert "Maya lives in Lisbon" in texts(now) and "Maya lives in Berlin" not in texts(now)
    assert lisbon["id"] in [h["id"] for h in now.hits]
    assert "Maya lives with her dog" not in texts(
        memory_recall(subject=maya, query="lives with", k=10, as_of=datetime.now(UTC).isoformat())
    )


def test_reconciler_repairs_a_half_finished_supersession(maya) -> None:
    """The new fact was stored, then the process died before the old one was linked."""
    old = fact_write(subject=maya, text="Maya's laptop is a ThinkPad X1")
    scope = SubjectScope.of(maya)
    new = fact_prepare(
        tenant_id=scope.tenant_id, user_id=scope.user_id, text="Maya's laptop is a MacBook Air", supersedes=[old["id"]]
    )
    embed_into([new])
    store.memory_index(scope.writer(), memory_type="semantic", memory_id=new.memory_id, source=new.source, refresh=True)
    assert memory_get(subject=maya, memory_id=old["id"]).get("superseded_by") is None
    assert supersessions_reconcile(tenant=maya.tenant) == [(old["id"], new.memory_id)]
    assert memory_get(subject=maya, memory_id=old["id"])["superseded_by"] == [new.memory_id]
    assert supersessions_reconcile(tenant=maya.tenant) == []


@pytest.mark.django_db(transaction=True)
def test_concurrent_supersessions_keep_both_links(atlas_es) -> None:
    from tenants import services

    services.shared_credential_ensure(kind="writer", actor="test")
    tenant = services.tenant_create(slug="concurrent-facts", name="Concurrent", actor="test")
    maya = services.subject_create(tenant=tenant, external_id="maya", actor="test")
    old = fact_write(subject=maya, text="Maya's phone number ends in 12")
    results: list[dict] = []
    errors: list[BaseException] = []

    def supersede(text: str) -> None:
        try:
            results.append(fact_write(subject=maya, text=text, supersedes=[old["id"]]))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=supersede, args=(f"Maya's phone number ends in {n}",)) for n in (34, 56, 78)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    links = memory_get(subject=maya, memory_id=old["id"])["superseded_by"]
    assert sorted(links) == sorted(r["id"] for r in results)


def test_fact_edit_is_a_natural_supersession_keeping_the_fact_type(maya, settings) -> None:
    """The edit of MCP's update_fact and the dashboard: a new version, the old one in its chain."""
    settings.ATLAS_USAGE_RECORDING = "off"
    old = fact_write(subject=maya, text="Maya lives in Lyon", fact_type="identity", confidence=0.9)
    new = fact_edit(subject=maya, memory_id=old["id"], text="Maya lives in Porto")
    assert (new["fact_type"], new["supersedes"], new["contradiction"]) == ("identity", [old["id"]], "natural")
    assert new["confidence"] == 0.9  # a correction of the statement keeps its certainty unless given
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=old["id"])] == [old["id"], new["id"]]
    assert memory_get(subject=maya, memory_id=old["id"])["retracted"] is False
    assert texts(memory_recall(subject=maya, query="where does Maya live", k=5)) == ["Maya lives in Porto"]
    harsh = fact_edit(subject=maya, memory_id=new["id"], text="Maya lives in Braga", contradiction="harsh")
    assert memory_get(subject=maya, memory_id=new["id"])["retracted"] is True and harsh["confidence"] == 0.8
    retyped = fact_edit(subject=maya, memory_id=harsh["id"], text="Maya prefers Braga", fact_type="preference")
    assert retyped["fact_type"] == "preference"


def test_fact_edit_refuses_a_stale_version_and_another_subjects_fact(maya, tom, settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"
    old = fact_write(subject=maya, text="Maya drinks tea")
    new = fact_edit(subject=maya, memory_id=old["id"], text="Maya drinks coffee")
    with pytest.raises(Conflict) as stale:
        fact_edit(subject=maya, memory_id=old["id"], text="Maya drinks water")
    assert stale.value.field == "memory_id" and new["id"] in stale.value.message
    with pytest.raises(NotFound) as foreign:
        fact_edit(subject=tom, memory_id=new["id"], text="Tom drinks Maya's coffee")
    assert foreign.value.field == "memory_id"
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=old["id"])] == [old["id"], new["id"]]
