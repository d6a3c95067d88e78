"""Forgets made after a backup come back with it; the audit log's export, replayed, forgets them again."""

from __future__ import annotations

import pytest
from django.utils import timezone

from atlas_site.elastic.client import bootstrap_client
from atlas_site.errors import NotFound
from memory.selectors import catalog_list, memory_counts, memory_get
from memory.services.catalog import catalog_entry_delete, catalog_entry_write
from memory.services.forget import memory_forget, subject_memories_forget
from memory.services.forget_replay import forget_log_replay, forget_log_since
from memory.services.writes import episode_write, fact_write


def _stored(ids: list[str]) -> list[dict]:
    es = bootstrap_client()
    found = es.search(index="*", query={"ids": {"values": ids}}, size=len(ids))
    return [{"index": h["_index"], "id": h["_id"], "source": h["_source"]} for h in found["hits"]["hits"]]


def _put_back(docs: list[dict]) -> None:
    """What restoring a backup made before the forgets does to these documents."""
    es = bootstrap_client()
    for doc in docs:
        es.index(index=doc["index"], id=doc["id"], document=doc["source"], refresh=True)


def test_forgets_since_a_backup_are_exported_and_replayed(tenant, maya, tom) -> None:
    gone = fact_write(subject=maya, text="Maya's bank PIN hint is her cat")
    kept = fact_write(subject=maya, text="Maya likes green tea")
    toms = [episode_write(subject=tom, text="Tom's diary entry one"), fact_write(subject=tom, text="Tom is tall")]
    entry = catalog_entry_write(tenant=tenant, title="Old price list", text="Tea costs 2 euros", actor="test")
    backed_up = _stored([gone["id"], kept["id"], entry["id"], *(m["id"] for m in toms)])
    assert len(backed_up) == 5
    since = timezone.now()

    memory_forget(subject=maya, memory_id=gone["id"], actor="test")
    subject_memories_forget(subject=tom, actor="test")
    catalog_entry_delete(tenant=tenant, entry_id=entry["id"], actor="test")
    log = forget_log_since(since=since)
    assert [(e["action"], e["tenant"], e.get("subject"), e.get("memory_id")) for e in log] == [
        ("memory.forget", tenant.slug, "maya", gone["id"]),
        ("memory.forget_subject", tenant.slug, "tom", None),
        ("catalog.delete", tenant.slug, None, entry["id"]),
    ]
    assert all("PIN" not in str(e) for e in log)  # the log names memories, never their text

    _put_back(backed_up)  # the older backup is restored: the forgotten memories are back
    assert memory_get(subject=maya, memory_id=gone["id"])["id"] == gone["id"]
    assert memory_counts(subject=tom)["episodic"] == 1

    ghost = {"at": since.isoformat(), "action": "memory.forget_subject", "tenant": tenant.slug, "subject": "nobody"}
    report = forget_log_replay(entries=[*log, ghost], actor="test")
    assert report.failures == []
    assert dict(report.outcomes) == {"forgotten": 3, "unknown owner": 1}
    assert memory_get(subject=maya, memory_id=kept["id"])["id"] == kept["id"]
    with pytest.raises(NotFound, match="no memory"):
        memory_get(subject=maya, memory_id=gone["id"])
    assert set(memory_counts(subject=tom).values()) == {0}
    assert entry["id"] not in [m["id"] for m in catalog_list(tenant=tenant)["memories"]]

    again = forget_log_replay(entries=log, actor="test")
    assert dict(again.outcomes) == {"already gone": 3}


def test_a_bad_entry_is_reported_and_the_rest_still_run(tenant, maya) -> None:
    fact = fact_write(subject=maya, text="Maya owns a kayak")
    entries = [
        {"action": "memory.delete_everything", "tenant": tenant.slug},
        {"action": "memory.forget", "tenant": tenant.slug, "subject": "maya", "memory_id": fact["id"]},
    ]
    report = forget_log_replay(entries=entries, actor="test")
    assert report.failures == [(1, "not a forget entry: 'memory.delete_everything'")]
    assert dict(report.outcomes) == {"forgotten": 1}
