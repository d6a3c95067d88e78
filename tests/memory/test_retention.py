"""Episodic retention: per-tenant policy, evidence of facts kept, audited; the nightly task applies it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.models import ConsolidationState
from memory.selectors import memory_list
from memory.services import writes
from memory.services.archive import superseded_facts_archive
from memory.services.retention import episodes_retention_apply
from memory.tasks import episodes_retention_task
from tenants.models import AuditRecord

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def episodes_of(subject) -> list[str]:
    return sorted(m["text"] for m in memory_list(subject=subject, memory_types=["episodic"], page_size=200)["memories"])


def test_old_episodes_go_unless_a_fact_cites_them(maya, tom, other_tenant_subject, settings) -> None:
    settings.ATLAS_LLM_BASE_URL = ""
    tenant = maya.tenant
    tenant.episode_retention_days = 30
    tenant.save()
    old_cited = writes.episode_write(subject=maya, text="I moved to Lisbon", at=NOW - timedelta(days=90))["id"]
    archived_cited = writes.episode_write(subject=maya, text="I moved to Porto", at=NOW - timedelta(days=200))["id"]
    writes.episode_write(subject=maya, text="nice weather today", at=NOW - timedelta(days=31))
    writes.episode_write(subject=tom, text="old small talk", at=NOW - timedelta(days=45))
    writes.episode_write(subject=maya, text="what's for dinner", at=NOW - timedelta(days=2))
    writes.episode_write(subject=other_tenant_subject, text="another tenant, no policy", at=NOW - timedelta(days=400))
    porto = writes.fact_write(subject=maya, text="Maya lives in Porto", source_episodes=[archived_cited])
    writes.fact_write(subject=maya, text="Maya lives in Lisbon", source_episodes=[old_cited], supersedes=[porto["id"]])
    assert superseded_facts_archive(tenant=tenant) == 1  # an archived fact's evidence is kept too

    assert episodes_retention_apply(tenant=tenant, actor="test", now=NOW) == 2
    assert episodes_of(maya) == ["I moved to Lisbon", "I moved to Porto", "what's for dinner"]
    assert episodes_of(tom) == []
    assert episodes_of(other_tenant_subject) == ["another tenant, no policy"]
    audit = AuditRecord.objects.get(action="memory.episode_retention")
    assert audit.tenant == tenant and audit.actor == "test"
    assert audit.detail == {
        "days": 30,
        "before": (NOW - timedelta(days=30)).isoformat(),
        "deleted": 2,
        "kept_cited": 2,
        "kept_unconsolidated": 0,
        "contexts_rewritten": 0,
    }
    assert "nice weather" not in str(audit.detail)  # the audit never carries the deleted text
    assert episodes_retention_apply(tenant=tenant, actor="test", now=NOW) == 0


def test_without_a_policy_nothing_is_deleted_and_nothing_audited(maya) -> None:
    writes.episode_write(subject=maya, text="ancient history", at=NOW - timedelta(days=3000))
    assert episodes_retention_apply(tenant=maya.tenant, actor="test", now=NOW) == 0
    assert episodes_of(maya) == ["ancient history"]
    assert not AuditRecord.objects.filter(action="memory.episode_retention").exists()


def test_with_an_llm_episodes_not_consolidated_yet_are_kept(maya, tom, settings) -> None:
    settings.ATLAS_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.ATLAS_LLM_MODEL = "m"
    tenant = maya.tenant
    tenant.episode_retention_days = 10
    tenant.save()
    writes.episode_write(subject=maya, text="consolidated already", at=NOW - timedelta(days=40))
    writes.episode_write(subject=maya, text="after the watermark", at=NOW - timedelta(days=20))
    writes.episode_write(subject=tom, text="tom was never consolidated", at=NOW - timedelta(days=40))
    ConsolidationState.objects.create(subject=maya, watermark_at=NOW - timedelta(days=30))
    assert episodes_retention_task() == {tenant.slug: 1}
    assert episodes_of(maya) == ["after the watermark"]
    assert episodes_of(tom) == ["tom was never consolidated"]
    assert AuditRecord.objects.get(action="memory.episode_retention").detail["kept_unconsolidated"] == 2


def test_an_expired_turn_leaves_no_context_behind(maya, settings) -> None:
    """A turn that expires leaves the turn after it (still within the policy) neither its text as context
    nor its id — as forgetting it would."""
    from memory.elastic import store
    from memory.scope import SubjectScope

    settings.ATLAS_LLM_BASE_URL = ""
    settings.ATLAS_CONTEXTUAL_EPISODES = True
    tenant = maya.tenant
    tenant.episode_retention_days = 30
    tenant.save()
    old = writes.episode_write(subject=maya, text="my locker code is 4411", session_id="s", at=NOW - timedelta(days=40))
    later = writes.episode_write(
        subject=maya, text="and the gym opens at six", session_id="s", at=NOW - timedelta(days=3)
    )
    scope = SubjectScope.of(maya)

    def stored_later() -> dict:
        hit = store.memories_fetch(scope.reader(), ids=[later["id"]], memory_types=("episodic",), filters=[])
        return hit[later["id"]]["_source"]

    assert stored_later()["previous_turn_id"] == old["id"] and "4411" in stored_later()["embedding_context"]
    assert episodes_retention_apply(tenant=tenant, actor="test", now=NOW) == 1
    assert episodes_of(maya) == ["and the gym opens at six"]
    assert "previous_turn_id" not in stored_later() and "embedding_context" not in stored_later()
    audit = AuditRecord.objects.get(action="memory.episode_retention")
    assert (audit.detail["deleted"], audit.detail["contexts_rewritten"]) == (1, 1)
