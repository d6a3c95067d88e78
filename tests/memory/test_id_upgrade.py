"""atlas_upgrade_ids on memories written the way the previous version wrote them: ids from (tenant, type,
external id) and (tenant, type, derived key), with chains across the hot index and the archive, source
episodes, previous turns, and consolidation runs and watermarks in the database naming those ids.
"""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from memory import selectors
from memory.elastic import store
from memory.elastic.mappings import VECTOR_FIELDS
from memory.models import ConsolidationRun, ConsolidationState
from memory.services.catalog import catalog_entry_write
from memory.services.id_upgrade import legacy_memory_id_derived, legacy_memory_id_for, memory_ids_upgrade
from memory.services.prepare import (
    PreparedMemory,
    embed_into,
    episode_prepare,
    fact_prepare,
    memory_id_derived,
    memory_id_for,
    playbook_prepare,
)
from memory.services.writes import fact_write
from tenants.selectors import writer_es_client

pytestmark = pytest.mark.django_db(transaction=True)
DERIVED_KEY = "wk1:fact:abc"


@pytest.fixture(autouse=True)
def quiet(settings):
    settings.ATLAS_USAGE_RECORDING = "off"


def _legacy_store(prepared: PreparedMemory, memory_id: str, *, index_type: str | None = None, **links: Any) -> str:
    """Store ``prepared`` as the previous version did: under ``memory_id`` (a legacy id), linking legacy ids."""
    prepared = PreparedMemory(prepared.memory_type, memory_id, {**prepared.source, **links})
    embed_into([prepared])
    if index_type == "archive":
        prepared.source["memory_type"] = "archive"
    store.memory_index(
        writer_es_client(),
        memory_type=index_type or prepared.memory_type,
        memory_id=memory_id,
        source=prepared.source,
        refresh=True,
    )
    return memory_id


def _snapshot(admin, tenant) -> dict[str, dict[str, Any]]:
    admin.indices.refresh(index="atlas-test-*")
    hits = admin.search(index="atlas-test-*", query={"term": {"tenant_id": str(tenant.es_id)}}, size=1000)
    return {f"{h['_index']}/{h['_id']}": h["_source"] for h in hits["hits"]["hits"]}


@pytest.fixture
def legacy(tenant, maya, tom) -> dict[str, Any]:
    t, m = str(tenant.es_id), str(maya.es_id)

    def old(memory_type: str, external_id: str) -> str:
        return legacy_memory_id_for(tenant_id=t, memory_type=memory_type, external_id=external_id)

    e1 = _legacy_store(
        episode_prepare(tenant_id=t, user_id=m, text="I gave up meat", session_id="s", external_id="e-1"),
        old("episodic", "e-1"),
    )
    e2 = _legacy_store(
        episode_prepare(tenant_id=t, user_id=m, text="and fish too", session_id="s", external_id="e-2"),
        old("episodic", "e-2"),
        previous_turn_id=e1,
    )
    f_older, f_old, f_new = old("semantic", "f-older"), old("semantic", "f-old"), old("semantic", "f-new")
    _legacy_store(
        fact_prepare(tenant_id=t, user_id=m, text="Maya eats meat", external_id="f-older"),
        f_older,
        index_type="archive",
        superseded_by=[f_old],
        superseded_at="2026-01-02T00:00:00+00:00",
    )
    _legacy_store(
        fact_prepare(tenant_id=t, user_id=m, text="Maya eats fish", external_id="f-old", supersedes=[f_older]),
        f_old,
        superseded_by=[f_new],
        superseded_at="2026-01-03T00:00:00+00:00",
    )
    _legacy_store(
        fact_prepare(tenant_id=t, user_id=m, text="Maya is vegetarian", external_id="f-new", supersedes=[f_old]),
        f_new,
        source_episodes=[e1, e2],
    )
    derived = _legacy_store(
        fact_prepare(tenant_id=t, user_id=m, text="Maya cooks lentils", derived_key=DERIVED_KEY),
        legacy_memory_id_derived(tenant_id=t, memory_type="semantic", key=DERIVED_KEY),
        source_episodes=[e1],
    )
    p1 = _legacy_store(
        playbook_prepare(tenant_id=t, user_id=m, name="r", trigger_text="down", steps=["unplug"], external_id="p-1"),
        old("procedural", "p-1"),
    )
    dup = _legacy_store(
        fact_prepare(tenant_id=t, user_id=m, text="old f-dup", external_id="f-dup"), old("semantic", "f-dup")
    )
    toms = _legacy_store(
        fact_prepare(tenant_id=t, user_id=str(tom.es_id), text="Tom likes tea", external_id="f-tom"),
        old("semantic", "f-tom"),
    )
    # Written by the new version before the upgrade ran: a fact citing a legacy episode (its own id is random
    # and stays), and f-dup written again (already under its new id: the newer one is kept).
    plain = fact_write(subject=maya, text="Maya avoids gelatine", source_episodes=[e1])
    fact_write(subject=maya, text="new f-dup", external_id="f-dup")
    catalog = catalog_entry_write(tenant=tenant, actor="test", title="Menu", text="Lentil soup", external_id="c-1")
    run = ConsolidationRun.objects.create(
        tenant=tenant,
        subject=maya,
        status=ConsolidationRun.Status.DONE,
        window_key="wk1",
        window_end_id=e2,
        plan={
            "window_key": "wk1",
            "facts": [{"key": DERIVED_KEY, "text": "Maya cooks lentils", "source_episodes": [e1]}],
            "confirmations": [{"fact_id": f_new, "source_episodes": [e2]}],
            "playbooks": [],
            "supersessions": [],
        },
        changes={"facts": [derived], "confirmations": [f_new]},
    )
    ConsolidationState.objects.create(subject=maya, watermark_at=timezone.now(), watermark_id=e2)
    legacy_ids = [e1, e2, f_older, f_old, f_new, derived, p1, dup, toms]
    return {"ids": legacy_ids, "plain": plain["id"], "catalog": catalog["id"], "run": run}


def test_memories_move_to_their_owners_ids_with_every_link(tenant, maya, tom, legacy, admin) -> None:
    t, m = str(tenant.es_id), str(maya.es_id)

    def new(memory_type: str, external_id: str, user_id: str = m) -> str:
        return memory_id_for(tenant_id=t, user_id=user_id, memory_type=memory_type, external_id=external_id)

    before = _snapshot(admin, tenant)
    dry = memory_ids_upgrade(dry_run=True)
    assert dry.legacy == {"episodic": 2, "semantic": 5, "archive": 1, "procedural": 1}
    out = StringIO()
    call_command("atlas_upgrade_ids", "--dry-run", stdout=out, stderr=StringIO())
    assert out.getvalue() == "would move 1 archive, 2 episodic, 1 procedural, 5 semantic (dry run: nothing changed)\n"
    assert _snapshot(admin, tenant) == before

    steps: list[tuple[str, int, int]] = []
    report = memory_ids_upgrade(progress=lambda *step: steps.append(step))

    assert report.moved == {"episodic": 2, "semantic": 4, "archive": 1, "procedural": 1}
    assert (report.kept_newer, report.relinked, report.deleted) == (1, 1, 9)
    assert (report.runs_rewritten, report.watermarks_rewritten) == (1, 1)
    # The scan covers the whole cluster (other tests' memories too): its last report counts every one.
    scans = [step for step in steps if step[0] == "scanned"]
    assert scans[-1] == ("scanned", scans[-1][2], scans[-1][2]) and steps[-1] == ("moved", 9, 9)
    after = _snapshot(admin, tenant)
    by_id = {key.split("/")[1]: source for key, source in after.items()}
    assert not set(legacy["ids"]) & set(by_id)  # nothing left under a legacy id
    assert len(after) == len(before) - 9 + 8  # each moved once; f-dup's legacy copy gave way to the newer one
    e1, e2 = new("episodic", "e-1"), new("episodic", "e-2")
    f_older, f_old, f_new = new("semantic", "f-older"), new("semantic", "f-old"), new("semantic", "f-new")
    derived = memory_id_derived(tenant_id=t, user_id=m, memory_type="semantic", key=DERIVED_KEY)
    assert by_id[e2]["previous_turn_id"] == e1
    assert (by_id[f_older]["memory_type"], by_id[f_older]["superseded_by"]) == ("archive", [f_old])
    assert (by_id[f_old]["supersedes"], by_id[f_old]["superseded_by"]) == ([f_older], [f_new])
    assert (by_id[f_new]["supersedes"], by_id[f_new]["source_episodes"]) == ([f_old], [e1, e2])
    assert (by_id[derived]["text"], by_id[derived]["source_episodes"]) == ("Maya cooks lentils", [e1])
    assert by_id[legacy["plain"]]["source_episodes"] == [e1]
    assert by_id[new("semantic", "f-dup")]["text"] == "new f-dup"
    assert by_id[new("semantic", "f-tom", str(tom.es_id))]["user_id"] == str(tom.es_id)
    assert by_id[new("procedural", "p-1")]["name"] == "r"
    assert by_id[legacy["catalog"]]["title"] == "Menu"  # the catalog's ids are the tenant's: unchanged
    for memory_id, source in by_id.items():
        assert source["memory_id"] == memory_id
    # Content and vectors travel unchanged: each moved document is its legacy one with new ids.
    old_by_text = {s["text"]: s for k, s in before.items() if k.split("/")[1] in legacy["ids"]}
    for memory_id in (e1, e2, f_older, f_old, f_new, derived):
        moved, was = by_id[memory_id], old_by_text[by_id[memory_id]["text"]]
        assert {k: moved[k] for k in VECTOR_FIELDS if k in was} == {k: was[k] for k in VECTOR_FIELDS if k in was}
        assert {k for k in moved} == {k for k in was}
    # The database's ids follow.
    run = ConsolidationRun.objects.get(pk=legacy["run"].pk)
    assert run.changes == {"facts": [derived], "confirmations": [f_new]}
    assert run.plan["confirmations"] == [{"fact_id": f_new, "source_episodes": [e2]}]
    assert run.plan["facts"][0]["source_episodes"] == [e1] and run.window_end_id == e2
    assert ConsolidationState.objects.get(subject=maya).watermark_id == e2
    # Maya's own reads follow the chain and find her memories by the ids she gave them.
    chain = selectors.memory_chain_get(subject=maya, memory_id="f-new")
    assert [c["text"] for c in chain] == ["Maya eats meat", "Maya eats fish", "Maya is vegetarian"]
    assert selectors.memory_get(subject=maya, memory_id="e-2")["id"] == e2

    # Running it again changes nothing.
    out, err = StringIO(), StringIO()
    call_command("atlas_upgrade_ids", stdout=out, stderr=err)
    assert out.getvalue() == (
        "moved none; kept 0 newer document(s) already under the new id; relinked 0 document(s); "
        "rewrote 0 consolidation run(s) and 0 watermark(s); deleted 0 legacy document(s)\n"
    )
    assert "scanned" in err.getvalue()
    assert _snapshot(admin, tenant) == after


def test_a_stopped_upgrade_is_finished_by_running_it_again(tenant, maya, legacy, admin, monkeypatch) -> None:
    """Stopped after the copies and relinks (before the legacy documents are deleted): the second run
    finds the copies in place, keeps them, and finishes — the same end state as one uninterrupted run."""
    from memory.services import id_upgrade

    def stop(es, places):
        raise KeyboardInterrupt

    monkeypatch.setattr(id_upgrade.store, "memories_delete", stop)
    with pytest.raises(KeyboardInterrupt):
        memory_ids_upgrade()
    monkeypatch.undo()

    report = memory_ids_upgrade()

    assert sum(report.moved.values()) == 0 and report.kept_newer == 9 and report.deleted == 9
    by_id = {key.split("/")[1]: source for key, source in _snapshot(admin, tenant).items()}
    assert not set(legacy["ids"]) & set(by_id)
    t, m = str(tenant.es_id), str(maya.es_id)
    f_new = memory_id_for(tenant_id=t, user_id=m, memory_type="semantic", external_id="f-new")
    f_old = memory_id_for(tenant_id=t, user_id=m, memory_type="semantic", external_id="f-old")
    assert by_id[f_new]["supersedes"] == [f_old] and by_id[f_old]["superseded_by"] == [f_new]
