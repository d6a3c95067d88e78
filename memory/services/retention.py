"""Episodic retention: an optional per-tenant policy (Tenant.episode_retention_days), run nightly, audited.

An episode older than the policy is deleted unless a fact — current, superseded or archived — cites it
(it is the fact's evidence, kept until that fact is forgotten), or, with an LLM configured, it is newer
than its subject's consolidation watermark (not distilled yet). The turns that followed a deleted
one keep neither its text (their ``embedding_context``) nor its id, as when a turn is forgotten.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from memory.elastic import queries, store
from memory.inference.llm import llm_configured
from memory.models import ConsolidationState
from tenants.models import Tenant
from tenants.selectors import tenant_es_client, writer_es_client
from tenants.services import audit_record

from .forget import turn_contexts_scrub


def episodes_retention_apply(*, tenant: Tenant, actor: str, now: datetime | None = None) -> int:
    """Apply ``tenant``'s retention policy; returns how many episodes were deleted (0 without a policy)."""
    days = tenant.episode_retention_days
    if not days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    tenant_id = str(tenant.es_id)
    reader = tenant_es_client(tenant=tenant)
    cited: set[str] = set()
    for hit in store.memories_scan(
        reader,
        memory_types=store.FACT_TYPES_INDICES,
        query=queries.facts_citing_query(tenant_id=tenant_id),
    ):
        cited.update(hit["_source"].get("source_episodes") or [])
    marks = (
        {
            str(es_id): at
            for es_id, at in ConsolidationState.objects.filter(subject__tenant=tenant).values_list(
                "subject__es_id", "watermark_at"
            )
        }
        if llm_configured()
        else None
    )
    doomed: list[tuple[str, str]] = []
    kept_cited = kept_unconsolidated = 0
    query = queries.episodes_before_query(tenant_id=tenant_id, before=cutoff.isoformat())
    for hit in store.memories_scan(reader, memory_types=("episodic",), query=query):
        if hit["_id"] in cited:
            kept_cited += 1
            continue
        if marks is not None:
            mark = marks.get(hit["_source"].get("user_id"))
            at = hit["_source"].get("timestamp")
            if mark is None or (at and datetime.fromisoformat(at.replace("Z", "+00:00")) > mark):
                kept_unconsolidated += 1
                continue
        doomed.append((hit["_index"], hit["_id"]))
    writer = writer_es_client()
    deleted = store.memories_delete(writer, doomed)
    gone = sorted({memory_id for _, memory_id in doomed})
    rewritten = (
        turn_contexts_scrub(
            reader,
            writer,
            query=queries.next_turns_query(tenant_id=tenant_id, user_id=None, episode_ids=gone),
            gone=gone,
        )
        if gone
        else []
    )
    audit_record(
        tenant=tenant,
        actor=actor,
        action="memory.episode_retention",
        target=tenant.slug,
        detail={
            "days": days,
            "before": cutoff.isoformat(),
            "deleted": deleted,
            "kept_cited": kept_cited,
            "kept_unconsolidated": kept_unconsolidated,
            "contexts_rewritten": len(rewritten),
        },
    )
    return deleted
