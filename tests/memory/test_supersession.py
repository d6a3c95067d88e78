"""Supersession: chains both ways, natural vs harsh, include_superseded, as_of, crash repair, concurrency."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from atlas_site.errors import Conflict, NotFound, PreconditionFailed
from memory.elastic import store
from memory.portable.lines import memories_import
from memory.recall import memory_recall
from memory.scope import SubjectScope
from memory.selectors import memory_chain_get, memory_get, memory_hit
from memory.services.archive import superseded_facts_archive
from memory.services.prepare import embed_into, fact_prepare
from memory.services.supersession import supersessions_reconcile
from memory.services.writes import fact_edit, fact_write, memory_etag


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


def _racers(n: int, work) -> tuple[list, list[BaseException]]:
    """Run ``work(i)`` on ``n`` threads released together (each on its own database connection)."""
    results: list = []
    errors: list[BaseException] = []
    gate = threading.Barrier(n)

    def run(i: int) -> None:
        try:
            gate.wait()
            results.append(work(i))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


def _facts_of(subject) -> dict[str, dict]:
    """Every stored fact of ``subject`` (hot index and archive, superseded or not), by id."""
    scope = SubjectScope.of(subject)
    query = {"bool": {"filter": [{"term": {"user_id": scope.user_id}}]}}
    return {
        h["_id"]: h["_source"]
        for h in store.memories_scan(scope.reader(), memory_types=("semantic", "archive"), query=query)
    }


@pytest.fixture
def racing_subject(atlas_es, transactional_db):
    from tenants import services

    services.shared_credential_ensure(kind="writer", actor="test")
    tenant = services.tenant_create(slug=f"race-{uuid.uuid4().hex[:8]}", name="Concurrent", actor="test")
    return services.subject_create(tenant=tenant, external_id="maya", actor="test")


def test_concurrent_supersessions_of_one_fact_have_one_winner(racing_subject) -> None:
    """Eight writers replace one fact at once (issue 25.6): exactly one succeeds; the other seven get a
    Conflict naming the winner and store nothing — no second successor, no orphan fact, one current head.

    The claim is one scripted update; Elasticsearch runs an update's script on the document it read and
    writes only if it is still that version, retrying on a version conflict (Update API,
    https://www.elastic.co/guide/en/elasticsearch/reference/8.15/docs-update.html: "retry_on_conflict",
    and ``ctx.op = 'none'`` answers "result": "noop"), so a racer's script sees the winner's claim."""
    maya = racing_subject
    for round_no in range(3):
        old = fact_write(subject=maya, text=f"Maya's phone number ends in {round_no}0")
        results, errors = _racers(
            8, lambda i, old=old: fact_write(subject=maya, text=f"Maya's phone ends in {i}", supersedes=[old["id"]])
        )
        assert len(results) == 1 and len(errors) == 7, errors
        winner = results[0]["id"]
        for error in errors:
            assert isinstance(error, Conflict) and error.field == "supersedes"
            assert f"newest version is {winner}" in error.message
        stored = _facts_of(maya)
        assert stored[old["id"]]["superseded_by"] == [winner]
        successors = [i for i, f in stored.items() if old["id"] in (f.get("supersedes") or [])]
        assert successors == [winner]  # nothing the losers wrote is left
        assert len(stored) == 3 * round_no + 2  # earlier rounds' three facts, this round's old fact and winner
        assert "superseded_by" not in stored[winner]
        fact_write(subject=maya, text="Maya moved on", supersedes=[winner])  # the winner is the head


def test_a_second_replacement_of_a_replaced_fact_is_refused_naming_the_newest(maya) -> None:
    """Issue 27.3: superseding f-home-3 again forked the chain. Sequentially too: refused, naming the chain's
    head (not only the direct successor), and nothing is stored."""
    abc = fact_write(subject=maya, text="Alice lives in Berlin")
    xyz = fact_write(subject=maya, text="Alice lives in Lisbon", supersedes=[abc["id"]])
    pqr = fact_write(subject=maya, text="Alice lives in Porto", supersedes=[xyz["id"]])
    before = _facts_of(maya)
    for target in (abc, xyz):
        with pytest.raises(Conflict) as refused:
            fact_write(subject=maya, text="Alice lives in Lisbon", supersedes=[target["id"]])
        assert refused.value.field == "supersedes"
        assert f"newest version is {pqr['id']}" in refused.value.message
    assert _facts_of(maya) == before


def test_a_refused_supersession_of_several_facts_releases_the_ones_it_claimed(maya) -> None:
    free = fact_write(subject=maya, text="Maya owns a bike")
    taken = fact_write(subject=maya, text="Maya owns a car")
    newer = fact_write(subject=maya, text="Maya owns a van", supersedes=[taken["id"]])
    before = _facts_of(maya)
    with pytest.raises(Conflict) as refused:
        fact_write(subject=maya, text="Maya owns a boat", supersedes=[free["id"], taken["id"]], contradiction="harsh")
    assert f"newest version is {newer['id']}" in refused.value.message
    after = _facts_of(maya)
    assert after == before  # the bike is current again, not retracted, and no boat was stored
    assert "superseded_by" not in after[free["id"]] and after[free["id"]]["retracted"] is False


def test_a_retried_supersession_with_a_derived_id_finishes_its_own_claim(maya) -> None:
    """A redelivered consolidation write (same derived id) is not refused by its own earlier claim."""
    old = fact_write(subject=maya, text="Maya plays chess")
    first = fact_write(subject=maya, text="Maya plays go", supersedes=[old["id"]], derived_key="run-1:go")
    again = fact_write(subject=maya, text="Maya plays go", supersedes=[old["id"]], derived_key="run-1:go")
    assert first["id"] == again["id"]
    assert memory_get(subject=maya, memory_id=old["id"])["superseded_by"] == [first["id"]]


def test_concurrent_edits_holding_one_valid_etag_one_200_the_rest_412(racing_subject) -> None:
    """Issue 25.7: PATCH racers with a valid If-Match get the documented 412, never 409 — the ETag check
    and the claim are one compare-and-set on the stored version (the update API's ``if_seq_no`` /
    ``if_primary_term``: https://www.elastic.co/guide/en/elasticsearch/reference/8.15/optimistic-concurrency-control.html)."""
    maya = racing_subject
    old = fact_write(subject=maya, text="Maya drinks tea")
    etag = memory_etag(memory_hit(subject=maya, memory_id=old["id"])["_source"])
    results, errors = _racers(
        8, lambda i: fact_edit(subject=maya, memory_id=old["id"], text=f"Maya drinks coffee {i}", if_match=etag)
    )
    assert len(results) == 1, errors
    assert [type(e) for e in errors] == [PreconditionFailed] * 7
    assert all(results[0]["id"] in e.message for e in errors)  # each names the newest version
    stored = _facts_of(maya)
    assert sorted(stored) == sorted([old["id"], results[0]["id"]])
    assert stored[old["id"]]["superseded_by"] == [results[0]["id"]]


def test_an_edit_with_a_valid_etag_survives_a_use_count_bump(maya) -> None:
    """The compare-and-set is on the content an editor saw: a recall bumping use_count changes the stored
    version (its seq_no) but not the ETag, so the edit reads again and goes through."""
    old = fact_write(subject=maya, text="Maya reads novels")
    etag = memory_etag(memory_hit(subject=maya, memory_id=old["id"])["_source"])
    hit = store.memories_fetch(
        SubjectScope.of(maya).reader(), ids=[old["id"]], memory_types=("semantic",), filters=[], versions=True
    )[old["id"]]
    store.memory_usage_bump(
        SubjectScope.of(maya).writer(), index=hit["_index"], memory_id=old["id"], at=old["created_at"]
    )
    new = fact_edit(subject=maya, memory_id=old["id"], text="Maya reads poetry", if_match=etag)
    assert memory_get(subject=maya, memory_id=old["id"])["superseded_by"] == [new["id"]]


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


def _store_fact(subject, text: str, *, at: str, supersedes: list[str] | None = None, superseded_by=None) -> str:
    """A fact written straight through the store, as an older version of the service may have left it."""
    scope = SubjectScope.of(subject)
    prepared = fact_prepare(
        tenant_id=scope.tenant_id, user_id=scope.user_id, text=text, supersedes=supersedes or None, at=at
    )
    if superseded_by:
        prepared.source.update(superseded_by=superseded_by, superseded_at=at)
    embed_into([prepared])
    store.memory_index(
        scope.writer(), memory_type="semantic", memory_id=prepared.memory_id, source=prepared.source, refresh=True
    )
    return prepared.memory_id


def _stored_update(subject, memory_id: str, **fields) -> None:
    scope = SubjectScope.of(subject)
    hit = store.memories_fetch(scope.reader(), ids=[memory_id], memory_types=("semantic",), filters=[])[memory_id]
    scope.writer().update(index=hit["_index"], id=memory_id, doc=fields, refresh="wait_for")


def test_reconciler_cuts_a_fork_older_versions_left_back_to_the_newest(maya) -> None:
    """Issue 25.6: forks older versions let through — one fact with three successors (two of them linked
    by the old append-only link, one never linked) — are repaired: the newest successor wins, the others
    are superseded by it, and the repair is audited. A second run changes nothing."""
    from tenants.models import AuditRecord

    old = _store_fact(maya, "Maya's phone number ends in 12", at="2026-01-01T10:00:00Z")
    b = _store_fact(maya, "Maya's phone number ends in 34", at="2026-01-02T10:00:00Z", supersedes=[old])
    c = _store_fact(maya, "Maya's phone number ends in 56", at="2026-01-03T10:00:00Z", supersedes=[old])
    d = _store_fact(maya, "Maya's phone number ends in 78", at="2026-01-04T10:00:00Z", supersedes=[old])
    _stored_update(maya, old, superseded_by=[b, c], superseded_at="2026-01-02T10:00:00Z")
    repaired = supersessions_reconcile(tenant=maya.tenant)
    assert sorted(repaired) == sorted([(old, d), (b, d), (c, d)])
    stored = _facts_of(maya)
    assert stored[old]["superseded_by"] == [d]
    assert stored[b]["superseded_by"] == [d] and stored[c]["superseded_by"] == [d]
    assert stored[b]["supersedes"] == [] and stored[c]["supersedes"] == []
    assert sorted(stored[d]["supersedes"]) == sorted([old, b, c])
    assert [i for i, f in stored.items() if not f.get("superseded_by")] == [d]
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=old)][-1] == d
    audit = AuditRecord.objects.get(action="memory.fork_repair", tenant=maya.tenant)
    assert (audit.actor, audit.target, audit.detail["kept"]) == ("reconciler", old, d)
    assert sorted(audit.detail["dropped"]) == sorted([b, c])
    assert "phone" not in str(audit.detail)
    assert supersessions_reconcile(tenant=maya.tenant) == []
    fact_write(subject=maya, text="Maya's phone number ends in 90", supersedes=[d])  # one head, replaceable


def test_reconciler_folds_a_forked_branch_that_went_on_into_the_newest(maya) -> None:
    """old → b → b2 and old → c (c newest): c wins; b's branch head b2 is superseded by c."""
    old = _store_fact(maya, "Maya works at Acme", at="2026-01-01T10:00:00Z")
    b = _store_fact(maya, "Maya works at Bolt", at="2026-01-02T10:00:00Z", supersedes=[old])
    b2 = _store_fact(maya, "Maya works at Bolt Labs", at="2026-01-03T10:00:00Z", supersedes=[b])
    c = _store_fact(maya, "Maya works at Cobalt", at="2026-01-04T10:00:00Z", supersedes=[old])
    _stored_update(maya, old, superseded_by=[b, c], superseded_at="2026-01-02T10:00:00Z")
    _stored_update(maya, b, superseded_by=[b2], superseded_at="2026-01-03T10:00:00Z")
    assert sorted(supersessions_reconcile(tenant=maya.tenant)) == sorted([(old, c), (b2, c)])
    stored = _facts_of(maya)
    assert (stored[old]["superseded_by"], stored[b]["superseded_by"], stored[b2]["superseded_by"]) == ([c], [b2], [c])
    assert [i for i, f in stored.items() if not f.get("superseded_by")] == [c]
    assert texts(memory_recall(subject=maya, query="where does Maya work", k=5)) == ["Maya works at Cobalt"]
    assert supersessions_reconcile(tenant=maya.tenant) == []


def test_reconciler_releases_a_claim_whose_new_fact_never_came(maya) -> None:
    """The writer claimed the old fact and died before storing the new one: after the grace period the
    claim is released (the old fact is current again); a fresh claim and a forgotten successor are not."""
    from memory.services.forget import memory_forget

    scope = SubjectScope.of(maya)
    abandoned = fact_write(subject=maya, text="Maya's car is red")
    fresh = fact_write(subject=maya, text="Maya's car is blue")
    kept = fact_write(subject=maya, text="Maya's car is green")
    forgotten = fact_write(subject=maya, text="Maya's car is black", supersedes=[kept["id"]], contradiction="harsh")
    memory_forget(subject=maya, memory_id=forgotten["id"], actor="test")
    long_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    for fact, claimed_at in ((abandoned, long_ago), (fresh, datetime.now(UTC).isoformat())):
        hit = store.memories_fetch(scope.reader(), ids=[fact["id"]], memory_types=("semantic",), filters=[])[fact["id"]]
        assert store.fact_successor_claim(
            scope.writer(),
            index=hit["_index"],
            old_id=fact["id"],
            new_id="never-stored",
            at=long_ago,
            harsh=True,
            claimed_at=claimed_at,
        )
    _stored_update(maya, kept["id"], supersession_claimed_at=long_ago)
    assert supersessions_reconcile(tenant=maya.tenant) == [(abandoned["id"], "")]
    stored = _facts_of(maya)
    assert "superseded_by" not in stored[abandoned["id"]] and stored[abandoned["id"]]["retracted"] is False
    assert stored[fresh["id"]]["superseded_by"] == ["never-stored"]
    assert stored[kept["id"]]["superseded_by"] == ["(forgotten)"]  # forgetting the new version keeps it so
    assert "Maya's car is red" in texts(memory_recall(subject=maya, query="Maya's car colour", k=5))


def _line(external_id: str, text: str, **fields) -> str:
    return json.dumps({"id": external_id, "user_id": "maya", "memory_type": "semantic", "text": text, **fields})


def test_an_import_line_replacing_an_already_replaced_fact_is_a_line_error(maya) -> None:
    """The import goes through the same rule: a line replacing a fact that already has a successor (in the
    store or earlier in the same file) is an error naming the newest version, and stores nothing. A file
    may list a replacement before what it replaces, and a chain in any order; importing it again
    changes nothing (a re-imported replaced fact stays replaced)."""
    lines = [
        _line("f-home-3", "Maya lives in Lisbon", days_ago=10, supersedes=["f-home-2"]),
        _line("f-home-2", "Maya lives in Porto", days_ago=100, supersedes=["f-home-1"]),
        _line("f-home-1", "Maya lives in Berlin", days_ago=400),
        _line("f-fork", "Maya lives in Madrid", days_ago=5, supersedes=["f-home-1"]),
    ]
    for attempt in range(2):
        report = memories_import(tenant=maya.tenant, lines=lines, create_subjects=False, actor="test")
        stored = _facts_of(maya)
        by_ext = {f["external_id"]: i for i, f in stored.items()}
        # Replacements are stored in file order once what they replace is stored: Madrid's turn comes
        # after Porto's and before Lisbon's (which waits for Porto), so the first time Porto is the newest.
        # The facts have the file's ids as external ids: the error names them by those, and by their own.
        ext = "f-home-2" if attempt == 0 else "f-home-3"
        newest = f"{ext} (id {by_ext[ext]})"
        assert report.errors == [
            (4, f"fact f-home-1 (id {by_ext['f-home-1']}) was already replaced; its newest version is {newest}. "
                f"A replaced fact cannot be replaced again: edit the newest version ({newest})")
        ], attempt  # fmt: skip
        assert sorted(by_ext) == ["f-home-1", "f-home-2", "f-home-3"]  # no Madrid
        assert stored[by_ext["f-home-1"]]["superseded_by"] == [by_ext["f-home-2"]]
        assert stored[by_ext["f-home-2"]]["superseded_by"] == [by_ext["f-home-3"]]
        assert [i for i, f in stored.items() if not f.get("superseded_by")] == [by_ext["f-home-3"]]
    again = memories_import(
        tenant=maya.tenant,
        lines=[_line("f-home-4", "Maya lives in Faro", supersedes=["f-home-2"])],
        create_subjects=False,
        actor="test",
    )
    assert len(again.errors) == 1 and f"newest version is f-home-3 (id {by_ext['f-home-3']})" in again.errors[0][1]
    assert "f-home-4" not in {f["external_id"] for f in _facts_of(maya).values()}


def test_a_rest_style_resend_of_a_replaced_fact_keeps_it_replaced(maya) -> None:
    """Re-sending a fact's external id stores it again under its id; it keeps its successor (it does not
    become a second current version beside it)."""
    old = fact_write(subject=maya, text="Maya's gym is FitOne", external_id="gym")
    new = fact_write(subject=maya, text="Maya's gym is PowerHouse", supersedes=["gym"])
    fact_write(subject=maya, text="Maya's gym is FitOne", external_id="gym")
    stored = _facts_of(maya)
    assert stored[old["id"]]["superseded_by"] == [new["id"]]
    assert texts(memory_recall(subject=maya, query="Maya's gym", k=5)) == ["Maya's gym is PowerHouse"]


def test_consolidation_skips_and_records_a_supersession_of_a_fact_replaced_meanwhile(maya) -> None:
    """A run planned to replace a fact that a person edited before the plan was applied: the run's
    supersession is skipped and listed under ``replaced`` (naming the newest version); the rest applies."""
    from memory.consolidation.apply import plan_apply

    porto = fact_write(subject=maya, text="Maya lives in Porto", fact_type="identity")
    edited = fact_edit(subject=maya, memory_id=porto["id"], text="Maya lives in Faro")
    item = {"text": "Maya lives in Lisbon", "fact_type": "identity", "confidence": 0.9, "source_episodes": []}
    plan = {
        "window_key": "w1",
        "planned_at": datetime.now(UTC).isoformat(),
        "facts": [{**item, "key": "w1:fact:seats", "text": "Maya prefers window seats", "fact_type": "preference"}],
        "supersessions": [{**item, "key": "w1:supersede:lisbon", "targets": [porto["id"]], "contradiction": "natural"}],
        "confirmations": [],
        "playbooks": [],
        "refinements": [],
        "outcomes": [],
    }
    changes = plan_apply(subject=maya, plan=plan)
    assert "supersessions" not in changes and "superseded" not in changes and len(changes["facts"]) == 1
    assert changes["replaced"] == [
        f"w1:supersede:lisbon: fact {porto['id']} was already replaced; its newest version is {edited['id']}. "
        f"A replaced fact cannot be replaced again: edit the newest version ({edited['id']})"
    ]
    assert "Maya lives in Lisbon" not in {f["text"] for f in _facts_of(maya).values()}


def test_a_released_claim_the_archive_had_moved_comes_back_to_the_hot_index(maya) -> None:
    """The nightly archive moves what looks replaced — an abandoned claim too; releasing it brings the fact
    back where current facts live, so recall finds it again."""
    scope = SubjectScope.of(maya)
    fact = fact_write(subject=maya, text="Maya's bike is a Brompton")
    long_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    hit = store.memories_fetch(scope.reader(), ids=[fact["id"]], memory_types=("semantic",), filters=[])[fact["id"]]
    store.fact_successor_claim(
        scope.writer(),
        index=hit["_index"],
        old_id=fact["id"],
        new_id="lost",
        at=long_ago,
        harsh=False,
        claimed_at=long_ago,
    )
    assert superseded_facts_archive(tenant=maya.tenant) == 1
    assert supersessions_reconcile(tenant=maya.tenant) == [(fact["id"], "")]
    back = memory_get(subject=maya, memory_id=fact["id"])
    assert back["type"] == "semantic" and "superseded_by" not in back
    assert texts(memory_recall(subject=maya, query="Maya's bike", k=3)) == ["Maya's bike is a Brompton"]
    assert superseded_facts_archive(tenant=maya.tenant) == 0


def test_forgetting_a_fact_frees_its_id_from_the_facts_that_replaced_it(maya) -> None:
    """Found by the invariant machine: the fact that replaced a forgotten one still named it among its
    predecessors, so the same external id written again — the same derived id, an unrelated fact — read
    as that fact's predecessor: two current versions in one chain, which the reconciler would then "repair"
    by marking the new fact replaced."""
    from memory.selectors import memory_list
    from memory.services.forget import memory_forget, scoped_memories_forget

    first = fact_write(subject=maya, text="Maya likes tea", external_id="drink")
    later = fact_write(subject=maya, text="Maya now prefers coffee", supersedes=[first["id"]])
    memory_forget(subject=maya, memory_id=first["id"], actor="test")
    again = fact_write(subject=maya, text="Maya lives in Lisbon", external_id="drink")
    assert again["id"] == first["id"]  # the external id derives the same id
    listed = {m["id"]: m for m in memory_list(subject=maya, include_superseded=True)["memories"]}
    assert listed[later["id"]]["supersedes"] == ["(forgotten)"]
    assert (listed[again["id"]]["status"], listed[later["id"]]["status"]) == ("current", "current")
    assert supersessions_reconcile(tenant=maya.tenant) == []
    assert memory_get(subject=maya, memory_id=again["id"])["status"] == "current"
    # Forgetting by a filter frees the ids it takes too.
    scoped = fact_write(subject=maya, text="Maya walks the dog", agent_id="planner", external_id="walk")
    successor = fact_write(subject=maya, text="Maya walks the dog at dawn", supersedes=[scoped["id"]])
    scoped_memories_forget(subject=maya, filters={"agent_id": "planner"}, actor="test")
    assert memory_get(subject=maya, memory_id=successor["id"])["supersedes"] == ["(forgotten)"]


def test_forgetting_a_fact_frees_its_id_from_the_proposals_to_replace_it(maya) -> None:
    """The same class on proposals: an agent's pending correction of a person's fact named the fact in
    ``proposal_for``; once the fact was forgotten and its external id written again (the same derived
    id, an unrelated fact), accepting the old proposal replaced the new fact. A forgotten fact is no longer
    anybody's target: the proposal stays, proposing a new fact."""
    from memory.services.forget import memory_forget, scoped_memories_forget

    from .reviewing import accept

    mine = fact_write(subject=maya, text="Maya likes tea", external_id="drink", authority="person", written_by="p:1")
    proposed = fact_write(subject=maya, text="Maya now prefers coffee", supersedes=[mine["id"]], written_by="t:svc")
    assert memory_get(subject=maya, memory_id=proposed["id"])["proposal_for"] == [mine["id"]]
    memory_forget(subject=maya, memory_id=mine["id"], actor="test")
    assert memory_get(subject=maya, memory_id=proposed["id"]).get("proposal_for") in (None, [])
    again = fact_write(subject=maya, text="Maya lives in Lisbon", external_id="drink", authority="person")
    assert again["id"] == mine["id"]
    accept(maya, proposed["id"])
    assert memory_get(subject=maya, memory_id=again["id"])["status"] == "current"
    accepted = memory_get(subject=maya, memory_id=proposed["id"])
    assert (accepted["status"], accepted.get("supersedes") or []) == ("current", [])
    # Forgetting by a filter frees the ids it takes too.
    scoped = fact_write(subject=maya, text="Maya walks the dog", agent_id="planner", authority="person")
    waiting = fact_write(subject=maya, text="Maya walks the dog at dawn", supersedes=[scoped["id"]])
    scoped_memories_forget(subject=maya, filters={"agent_id": "planner"}, actor="test")
    assert memory_get(subject=maya, memory_id=waiting["id"]).get("proposal_for") in (None, [])


def _crash_deleted(subject, memory_id: str) -> None:
    """The fact's document deleted and nothing else: forgetting died before it dropped the links to it."""
    scope = SubjectScope.of(subject)
    hit = store.memories_fetch(scope.reader(), ids=[memory_id], memory_types=("semantic",), filters=[])[memory_id]
    store.memories_delete(scope.writer(), [(hit["_index"], memory_id)])


def test_reconciler_drops_links_to_a_predecessor_forgetting_left_behind(maya) -> None:
    """Forgetting a fact drops the links naming it right after the delete; a crash in between left them.
    The reconciler drops a link to a missing predecessor once it is older than the claim grace (a
    supersession claims before it stores, so a missing predecessor was forgotten), from a successor's
    ``supersedes`` and from a pending proposal's ``proposal_for`` — and never links a fact stored after
    the memory naming it: that is the forgotten id written again for an unrelated fact."""
    mine = fact_write(subject=maya, text="Maya likes tea", authority="person", written_by="person:1")
    proposed = fact_write(subject=maya, text="Maya likes green tea", supersedes=[mine["id"]], written_by="token:svc")
    corrected = fact_write(
        subject=maya, text="Maya prefers coffee", supersedes=[mine["id"]], authority="person", written_by="person:1"
    )
    _crash_deleted(maya, mine["id"])
    assert supersessions_reconcile(tenant=maya.tenant) == []  # within the grace: a write may be under way
    long_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    for memory_id in (proposed["id"], corrected["id"]):
        _stored_update(maya, memory_id, created_at=long_ago)
    assert supersessions_reconcile(tenant=maya.tenant) == [(mine["id"], ""), (mine["id"], "")]
    stored = _facts_of(maya)
    assert (stored[corrected["id"]]["supersedes"], stored[proposed["id"]]["proposal_for"]) == (["(forgotten)"], [])
    assert supersessions_reconcile(tenant=maya.tenant) == []

    # The same external id written again after the crash: a new fact under the forgotten id.
    first = fact_write(subject=maya, text="Maya drives a van", external_id="car")
    later = fact_write(subject=maya, text="Maya drives a bike", supersedes=[first["id"]])
    _crash_deleted(maya, first["id"])
    again = fact_write(subject=maya, text="Maya's car is in Porto", external_id="car")
    assert again["id"] == first["id"]
    assert supersessions_reconcile(tenant=maya.tenant) == [(first["id"], "")]
    stored = _facts_of(maya)
    assert stored[later["id"]]["supersedes"] == ["(forgotten)"] and "superseded_by" not in stored[again["id"]]
    assert memory_get(subject=maya, memory_id=again["id"])["status"] == "current"


def test_a_fact_whose_newer_version_was_forgotten_stays_replaced_naming_no_id(maya) -> None:
    """Forgetting a correction keeps what it corrected replaced — by FORGOTTEN_LINK, not by the
    forgotten id: the same external id written again derives that id for an unrelated fact, which the
    chain, the edit's refusal and recall would otherwise show as the old fact's newer version. By a filter
    too; and the reconciler marks a fact whose forgetting died before it marked the fact."""
    from memory.services.forget import memory_forget, scoped_memories_forget

    kept = fact_write(subject=maya, text="Maya's car is green", external_id="colour")
    newer = fact_write(subject=maya, text="Maya's car is black", supersedes=[kept["id"]], external_id="car")
    memory_forget(subject=maya, memory_id=newer["id"], actor="test")
    again = fact_write(subject=maya, text="Maya plays chess", external_id="car")
    assert again["id"] == newer["id"]
    old = memory_get(subject=maya, memory_id=kept["id"])
    assert (old["status"], old["superseded_by"]) == ("superseded", ["(forgotten)"])
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=kept["id"])] == [kept["id"]]
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=again["id"])] == [again["id"]]
    # The mark is never looked up: not even a memory whose external id is that very text passes for it.
    fact_write(subject=maya, text="Maya collects stamps", external_id="(forgotten)")
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=kept["id"])] == [kept["id"]]
    with pytest.raises(Conflict) as refused:
        fact_edit(subject=maya, memory_id=kept["id"], text="Maya's car is blue")
    assert refused.value.message == (
        f"fact colour (id {kept['id']}) was replaced by a version that was since forgotten. A replaced fact "
        "cannot be replaced again: write the fact anew"
    )
    assert refused.value.extensions == {"newest": None}
    assert supersessions_reconcile(tenant=maya.tenant) == []
    assert memory_get(subject=maya, memory_id=again["id"])["status"] == "current"
    # By a filter.
    walked = fact_write(subject=maya, text="Maya walks at six")
    fact_write(subject=maya, text="Maya walks at seven", supersedes=[walked["id"]], agent_id="planner")
    scoped_memories_forget(subject=maya, filters={"agent_id": "planner"}, actor="test")
    assert memory_get(subject=maya, memory_id=walked["id"])["superseded_by"] == ["(forgotten)"]
    # A forget by filter audits no ids: the reconciler used to take its successor for a claim that never
    # came and, after the grace, bring the replaced fact back.
    _stored_update(maya, walked["id"], supersession_claimed_at=(datetime.now(UTC) - timedelta(hours=1)).isoformat())
    assert supersessions_reconcile(tenant=maya.tenant) == []
    assert memory_get(subject=maya, memory_id=walked["id"])["status"] == "superseded"
    # A forget that died between the delete and the mark: the reconciler marks it (the forget is audited).
    ran = fact_write(subject=maya, text="Maya runs on Mondays")
    later = fact_write(subject=maya, text="Maya runs on Fridays", supersedes=[ran["id"]])
    _crash_deleted(maya, later["id"])
    from tenants.services import audit_record

    audit_record(tenant=maya.tenant, actor="test", action="memory.forget", target=f"{maya}:{later['id']}", detail={})
    assert supersessions_reconcile(tenant=maya.tenant) == []  # a fresh claim: a new fact may be on its way
    _stored_update(maya, ran["id"], supersession_claimed_at=(datetime.now(UTC) - timedelta(hours=1)).isoformat())
    assert supersessions_reconcile(tenant=maya.tenant) == [(ran["id"], "(forgotten)")]
    assert memory_get(subject=maya, memory_id=ran["id"])["superseded_by"] == ["(forgotten)"]
    assert supersessions_reconcile(tenant=maya.tenant) == []


def test_forgetting_an_archived_fact_unlinks_it_too(maya, settings) -> None:
    """A replaced fact the nightly archive moved is forgotten like any other: the fact that replaced it
    stops naming it, the one it replaced stays replaced by "(forgotten)" — in the archive too."""
    from memory.services.forget import memory_forget

    settings.ATLAS_ARCHIVE_SUPERSEDED_AFTER_DAYS = 0
    bolt = fact_write(subject=maya, text="Maya's dog is called Bolt")
    pixel = fact_write(subject=maya, text="Maya's dog is called Pixel", supersedes=[bolt["id"]], external_id="dog")
    luna = fact_write(subject=maya, text="Maya's dog is called Luna", supersedes=[pixel["id"]])
    assert superseded_facts_archive(tenant=maya.tenant) == 2
    assert memory_get(subject=maya, memory_id=pixel["id"])["type"] == "archive"
    memory_forget(subject=maya, memory_id=pixel["id"], actor="test")
    stored = _facts_of(maya)
    assert stored[luna["id"]]["supersedes"] == ["(forgotten)"] and stored[bolt["id"]]["superseded_by"] == [
        "(forgotten)"
    ]
    again = fact_write(subject=maya, text="Maya walks the dog at seven", external_id="dog")
    assert again["id"] == pixel["id"]
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=bolt["id"])] == [bolt["id"]]
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=luna["id"])] == [luna["id"]]
