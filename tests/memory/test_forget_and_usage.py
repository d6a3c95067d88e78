"""Forgetting leaves nothing in any index; use counts never lose an increment."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from atlas_site.elastic.client import bootstrap_client
from atlas_site.errors import NotFound, ValidationFailed
from memory.elastic import store
from memory.elastic.indices import MEMORY_TYPES
from memory.inference.embeddings import embedding_provider
from memory.recall import memory_recall
from memory.selectors import memory_get
from memory.services.archive import superseded_facts_archive
from memory.services.forget import memory_forget, subject_memories_forget, tenant_memories_forget
from memory.services.usage import memories_usage_record
from memory.services.writes import episode_write, fact_write, playbook_write
from tenants.models import AuditRecord


def documents_of(**term) -> list[str]:
    """Every document matching the term in every memory index, seen with the superuser (no DLS)."""
    ((field, value),) = term.items()
    response = bootstrap_client().search(
        index=store.indices_of(MEMORY_TYPES), query={"term": {field: value}}, size=1000
    )
    return [h["_id"] for h in response["hits"]["hits"]]


def fill(subject) -> None:
    episode_write(subject=subject, text=f"{subject.external_id} said hello")
    old = fact_write(subject=subject, text=f"{subject.external_id} likes tea")
    fact_write(subject=subject, text=f"{subject.external_id} likes coffee", supersedes=[old["id"]])
    playbook_write(subject=subject, name="greet", trigger_text="hello", steps=["wave"])


def test_forget_one_memory(maya, tom) -> None:
    mine = episode_write(subject=maya, text="my passport number is X1234")
    memory_recall(subject=maya, query="what about the passport?", k=1)  # a cached query
    forgotten = memory_forget(subject=maya, memory_id=mine["id"], actor="test")
    assert forgotten["receipt"].pop("query_embedding_cache")["count"] >= 1
    assert forgotten == {
        "id": mine["id"],
        "type": "episodic",
        "forgotten": True,
        "receipt": {
            "indices": {"episodic": {"count": 1, "ids": [mine["id"]], "truncated": False}},
            "run_records": {"count": 0, "ids": [], "truncated": False},
            "idempotency_records": {"count": 0, "ids": [], "truncated": False},
            "turn_contexts": {"count": 0, "ids": [], "truncated": False},
        },
        "orphaned": [],
    }
    assert embedding_provider().query_cache.info().size == 0
    assert mine["id"] not in documents_of(user_id=str(maya.es_id))
    assert memory_recall(subject=maya, query="passport X1234", k=5).hits == []
    record = AuditRecord.objects.get(action="memory.forget")
    assert record.detail == {"memory_type": "episodic"} and "X1234" not in str(record.__dict__)
    with pytest.raises(NotFound):
        memory_forget(subject=maya, memory_id=mine["id"], actor="test")
    theirs = episode_write(subject=tom, text="tom's secret")
    with pytest.raises(NotFound):
        memory_forget(subject=maya, memory_id=theirs["id"], actor="test")
    assert memory_get(subject=tom, memory_id=theirs["id"])["text"] == "tom's secret"
    with pytest.raises(ValidationFailed):
        memory_forget(subject=maya, memory_id="", actor="test")


def test_forget_all_of_a_subject_reaches_every_index_including_the_archive(maya, tom) -> None:
    fill(maya)
    fill(tom)
    assert superseded_facts_archive(tenant=maya.tenant) == 2
    counts = subject_memories_forget(subject=maya, actor="test")["counts"]
    assert counts == {"episodic": 1, "semantic": 1, "procedural": 1, "archive": 1}
    assert documents_of(user_id=str(maya.es_id)) == []
    assert len(documents_of(user_id=str(tom.es_id))) == 4
    assert AuditRecord.objects.get(action="memory.forget_subject").detail == {
        "deleted": counts,
        "run_records": 0,
        "idempotency_records": 0,
        "rejected_proposals": 0,
    }


def test_forget_a_whole_tenant(maya, tom, other_tenant_subject) -> None:
    fill(maya)
    fill(other_tenant_subject)
    counts = tenant_memories_forget(tenant=maya.tenant, actor="test")["counts"]
    assert sum(counts.values()) == 4
    assert documents_of(tenant_id=str(maya.tenant.es_id)) == []
    assert len(documents_of(tenant_id=str(other_tenant_subject.tenant.es_id))) == 4


@pytest.mark.django_db(transaction=True)
def test_concurrent_use_bumps_lose_no_increment(atlas_es) -> None:
    from tenants import services

    services.shared_credential_ensure(kind="writer", actor="test")
    tenant = services.tenant_create(slug="bumps", name="Bumps", actor="test")
    maya = services.subject_create(tenant=tenant, external_id="maya", actor="test")
    fact = fact_write(subject=maya, text="Maya takes the 8:15 ferry")
    target = [(store.indices_of(("semantic",)), fact["id"])]
    errors: list[BaseException] = []

    def bump() -> None:
        try:
            for _ in range(5):
                memories_usage_record(targets=target)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    bootstrap_client().indices.refresh(
        index=store.indices_of(("semantic",))
    )  # bumps skip refresh: off the request path
    after = memory_get(subject=maya, memory_id=fact["id"])
    assert after["use_count"] == 20
    assert after["last_used_at"] >= fact["created_at"]


def test_recall_is_a_read_and_only_the_usage_service_schedules_the_bump(maya, settings, monkeypatch) -> None:
    from memory import tasks
    from memory.tasks import recall_usage_schedule

    scheduled: list = []
    monkeypatch.setattr(tasks.memories_usage_record_task, "delay", lambda targets: scheduled.append(targets))
    settings.ATLAS_USAGE_RECORDING = "celery"
    fact = fact_write(subject=maya, text="Maya's locker code is 4417")
    result = memory_recall(subject=maya, query="locker code", k=3)
    assert scheduled == []  # a selector never writes, not even later
    assert [memory_id for _, memory_id in result.targets] == [fact["id"]]
    recall_usage_schedule(subject=maya, targets=result.targets, agent_use=True)
    assert scheduled == [[list(target) for target in result.targets]]
    recall_usage_schedule(subject=maya, targets=result.targets, agent_use=False)  # a person's look
    assert len(scheduled) == 1
    settings.ATLAS_USAGE_RECORDING = "off"
    recall_usage_schedule(subject=maya, targets=result.targets, agent_use=True)
    assert len(scheduled) == 1


def test_forgetting_a_turn_takes_its_text_out_of_the_next_turns_context(maya, settings, admin) -> None:
    """A turn's vector is made with the turn before it (ATLAS_CONTEXTUAL_EPISODES): that turn's text sits
    in the next turn's ``embedding_context``. Forgetting it rewrites the next turn without it, re-embedded
    from the turn alone (found by the invariant machine, tests/memory/test_invariants.py)."""
    settings.ATLAS_CONTEXTUAL_EPISODES = True
    first = episode_write(subject=maya, text="my locker is zqforgetme", session_id="s")
    second = episode_write(subject=maya, text="yes, that one", session_id="s")
    stored = admin.get(index=f"{settings.ATLAS_ES_INDEX_PREFIX}-episodic", id=second["id"])["_source"]
    assert "zqforgetme" in stored["embedding_context"] and stored["previous_turn_id"] == first["id"]
    forgotten = memory_forget(subject=maya, memory_id=first["id"], actor="test")
    assert forgotten["receipt"]["turn_contexts"] == {"count": 1, "ids": [second["id"]], "truncated": False}
    rewritten = admin.get(index=f"{settings.ATLAS_ES_INDEX_PREFIX}-episodic", id=second["id"])["_source"]
    assert "embedding_context" not in rewritten and "previous_turn_id" not in rewritten
    assert rewritten["text"] == "yes, that one" and "zqforgetme" not in str(rewritten)
    alone = episode_write(subject=maya, text="yes, that one", session_id="other")  # a turn with no context
    stored_alone = admin.get(index=f"{settings.ATLAS_ES_INDEX_PREFIX}-episodic", id=alone["id"])["_source"]
    assert rewritten["embedding"] == stored_alone["embedding"]
