"""The keys consolidation derives (a leaf: nothing of the package): a run's window key, an item's digest,
and a proposal's key — what makes two proposals "the same" for remembering a rejection."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tenants.models import MemorySubject


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text.lower())).strip()


def digest(text: str) -> str:
    return hashlib.sha256(normalised(text).encode()).hexdigest()[:16]


def window_key_for(*, subject: MemorySubject, episode_ids: list[str]) -> str:
    """The run's key: its subject and the episodes it covers, so any run over the same episodes (a
    redelivery, a resumed run, ``--since`` over the same window) derives the same ids and events."""
    raw = f"{subject.es_id}|{','.join(episode_ids)}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def proposal_key(memory_type: str, source: dict[str, Any]) -> str:
    """What makes two proposals "the same" for remembering a rejection: the type and normalised text
    (a playbook's name and trigger) — hashed, so the record keeps no text."""
    if memory_type == "procedural":
        text = f"{source.get('name') or ''}\n{source.get('trigger_text') or ''}"
    else:
        text = source.get("text") or ""
    return hashlib.sha256(f"{memory_type}:{normalised(text)}".encode()).hexdigest()
