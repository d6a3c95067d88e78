"""Forgets to apply again after restoring an older backup: read from the audit log, replayed in order.

A backup holds every memory forgotten after it was made. The audit log records each forget (one
memory, a subject's memories, a tenant's, a catalog entry) with its target and never the text, so
the forgets made since a backup can be exported from the database that saw them — before it is
replaced — and replayed on the restored one. Replaying is idempotent: what is already gone counts
as done.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from atlas_site.echo import echoed
from atlas_site.errors import AtlasError, NotFound, ValidationFailed
from tenants.models import AuditRecord
from tenants.selectors import subject_get, tenant_get

from .catalog import catalog_entry_delete
from .forget import memory_forget, subject_memories_forget, tenant_memories_forget

FORGET_ACTIONS = ("memory.forget", "memory.forget_subject", "memory.forget_tenant", "catalog.delete")


def _entry(record: AuditRecord) -> dict[str, Any]:
    """One forget as replayable data, parsed from its audit target (``slug/external_id[:memory id]``, a
    tenant slug, or a catalog entry id): slugs hold no ``/``, memory ids no ``:``."""
    entry: dict[str, Any] = {"at": record.created_at.isoformat(), "action": record.action}
    target = record.target
    if record.action == "memory.forget_tenant":
        return {**entry, "tenant": target}
    if record.action == "catalog.delete":
        return {**entry, "tenant": record.tenant.slug if record.tenant else None, "memory_id": target}
    slug, _, rest = target.partition("/")
    if record.action == "memory.forget":
        subject, _, memory_id = rest.rpartition(":")
        return {**entry, "tenant": slug, "subject": subject, "memory_id": memory_id}
    return {**entry, "tenant": slug, "subject": rest}


def forget_log_since(*, since: datetime) -> list[dict[str, Any]]:
    """Every forget recorded at or after ``since``, oldest first, as replayable entries."""
    records = AuditRecord.objects.filter(action__in=FORGET_ACTIONS, created_at__gte=since).select_related("tenant")
    return [_entry(r) for r in records.order_by("created_at", "id")]


@dataclass
class ReplayReport:
    outcomes: Counter = field(default_factory=Counter)  # forgotten | already gone | unknown owner
    failures: list[tuple[int, str]] = field(default_factory=list)  # (entry number, message)


def _replay_one(entry: dict[str, Any], *, actor: str) -> str:
    action = entry.get("action")
    if action not in FORGET_ACTIONS or not isinstance(entry.get("tenant"), str):
        raise ValidationFailed(f"not a forget entry: {echoed(action)}")
    try:
        tenant = tenant_get(slug=entry["tenant"])
        subject = subject_get(tenant=tenant, external_id=entry["subject"]) if entry.get("subject") else None
    except NotFound:
        return "unknown owner"  # made after the backup: none of its memories can be in it
    if action == "memory.forget_tenant":
        return _outcome(tenant_memories_forget(tenant=tenant, actor=actor))
    if action == "memory.forget_subject":
        return _outcome(subject_memories_forget(subject=subject, actor=actor))
    try:
        if action == "catalog.delete":
            catalog_entry_delete(tenant=tenant, entry_id=entry.get("memory_id"), actor=actor)
        else:
            memory_forget(subject=subject, memory_id=entry.get("memory_id"), actor=actor)
    except NotFound:
        return "already gone"
    return "forgotten"


def _outcome(result: dict[str, Any]) -> str:
    return "forgotten" if any(result["counts"].values()) else "already gone"


def forget_log_replay(*, entries: Iterable[dict[str, Any]], actor: str) -> ReplayReport:
    """Apply each forget again, in order; one that fails is reported and the rest still run."""
    report = ReplayReport()
    for number, entry in enumerate(entries, start=1):
        try:
            report.outcomes[_replay_one(entry, actor=actor)] += 1
        except AtlasError as err:
            report.failures.append((number, err.message))
    return report
