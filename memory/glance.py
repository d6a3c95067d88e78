"""What a person's memory did lately, for the "at a glance" picture: their conversations (turns grouped
by session), the facts and playbooks stored since, and when something was forgotten — all read with the
subject's own Elasticsearch key (``selectors.memory_list``), the forgets from the audit trail, which keeps
the kind and the time of a forget, never its text. Bounded: one window of days, a page of each kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from memory import selectors
from tenants.models import AuditRecord, MemorySubject

GLANCE_DAYS = 90
MAX_SESSIONS = 30
#: One page of each kind (the list selector's largest): the picture says so when there was more.
MAX_PER_KIND = 200
FORGET_ACTIONS = ("memory.forget", "memory.forget_subject")


@dataclass
class Glance:
    since: datetime
    days: int
    sessions: list[dict[str, Any]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    playbooks: list[dict[str, Any]] = field(default_factory=list)
    forgets: list[dict[str, Any]] = field(default_factory=list)
    #: The kinds that had more than the picture shows (oldest left out): "turns", "sessions", "facts", …
    truncated: list[str] = field(default_factory=list)


def _sessions(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turns (newest first) grouped by conversation, newest conversation first; turns without a session
    form one group per day."""
    groups: dict[str, dict[str, Any]] = {}
    for turn in turns:
        stamp = turn.get("created_at") or ""  # the order the list reads them in
        key = turn.get("session_id") or f"(no conversation) {str(stamp)[:10]}"
        group = groups.setdefault(
            key,
            {"id": key, "named": bool(turn.get("session_id")), "last_at": stamp, "episodes": []},
        )
        group["episodes"].append(turn)
        group["started_at"] = stamp  # newest first: the last one seen is the first turn
    return list(groups.values())


def subject_forgets(*, subject: MemorySubject, since: datetime) -> list[dict[str, Any]]:
    """When the subject's memories were forgotten since ``since``, newest first: the kind of memory (or
    "everything") and the time — the audit trail keeps no text, and neither does this."""
    records = AuditRecord.objects.filter(tenant=subject.tenant, action__in=FORGET_ACTIONS, created_at__gte=since)
    out = []
    for record in records.order_by("-created_at", "-id")[:MAX_PER_KIND]:
        # The target is "<tenant>/<external id>:<memory id>"; an external id may hold ":" ("maya:evil"),
        # a memory id does not: the part before the last ":" is the subject, exactly (a prefix is not).
        if record.action == "memory.forget" and record.target.rpartition(":")[0] == str(subject):
            out.append({"at": record.created_at, "what": (record.detail or {}).get("memory_type") or "memory"})
        elif record.action == "memory.forget_subject" and record.target == str(subject):
            out.append({"at": record.created_at, "what": "everything"})
    return out


def subject_glance(*, subject: MemorySubject, days: int = GLANCE_DAYS, max_sessions: int = MAX_SESSIONS) -> Glance:
    """The last ``days`` of the subject's memory, read with their key; at most ``max_sessions``
    conversations and one page of each kind (``truncated`` names what had more)."""
    since = timezone.now() - timedelta(days=days)
    glance = Glance(since=since, days=days)
    kinds = {"turns": ["episodic"], "facts": ["semantic", "archive"], "playbooks": ["procedural"]}
    pages = {
        name: selectors.memory_list(
            subject=subject,
            memory_types=types,
            include_superseded=name == "facts",
            since=since,
            page_size=MAX_PER_KIND,
        )
        for name, types in kinds.items()
    }
    glance.truncated = [name for name, page in pages.items() if page["next_cursor"]]
    sessions = _sessions(pages["turns"]["memories"])
    if len(sessions) > max_sessions:
        glance.truncated.append("sessions")
    glance.sessions = sessions[:max_sessions]
    glance.facts = pages["facts"]["memories"]
    glance.playbooks = pages["playbooks"]["memories"]
    glance.forgets = subject_forgets(subject=subject, since=since)
    return glance
