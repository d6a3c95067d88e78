"""What a run reads: the subject's episodes after its watermark, in conversation order, each with its
previous turn, and the current facts and playbooks hybrid recall finds for them (secrets redacted)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from memory import recall_constants as rc
from memory.elastic import queries, store
from memory.scope import SubjectScope
from memory.scoping import scope_of
from memory.services.guards import secrets_redacted
from tenants.models import MemorySubject

from .schema import ConsolidationInput


def _millis(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def _from_millis(value: Any) -> datetime:
    return datetime.fromtimestamp(int(value) / 1000, tz=UTC)


def consolidation_input_gather(
    *, subject: MemorySubject, after: tuple[datetime, str] | None, limit: int | None = None
) -> ConsolidationInput:
    """The subject's episodes after ``after`` (sort values: time, id) in conversation order, at most
    ``limit``, with their previous turns, and the current facts and playbooks recall finds for them."""
    scope = SubjectScope.of(subject)
    reader = scope.reader()
    limit = limit or settings.ATLAS_CONSOLIDATION_MAX_EPISODES
    search_after = [_millis(after[0]), after[1]] if after else None
    body = queries.episodes_after_body(
        filters=scope.read_filters(), user_id=scope.user_id, after=search_after, size=limit
    )
    hits = store.memories_search(reader, memory_types=("episodic",), body=body)["hits"]["hits"]
    if not hits:
        return ConsolidationInput([], {}, {}, {})
    ids = {hit["_id"] for hit in hits}
    previous_ids = [h["_source"]["previous_turn_id"] for h in hits if h["_source"].get("previous_turn_id")]
    outside = [i for i in dict.fromkeys(previous_ids) if i not in ids]
    previous = store.memories_fetch(reader, ids=outside, memory_types=("episodic",), filters=scope.read_filters())
    texts = {hit["_id"]: hit["_source"].get("text") or "" for hit in hits}
    texts_with_previous = {**texts, **{i: h["_source"].get("text") or "" for i, h in previous.items()}}
    episodes, scopes = [], {}
    for hit in hits:
        source = hit["_source"]
        prev_id = source.get("previous_turn_id")
        scopes[hit["_id"]] = scope_of(source)
        episodes.append(
            {
                "id": hit["_id"],
                # Shown to the model only when there is one: it keeps what different agents heard apart.
                **({"scope": scopes[hit["_id"]]} if scopes[hit["_id"]] else {}),
                "session_id": source.get("session_id"),
                "at": source.get("timestamp"),
                "text": secrets_redacted(source.get("text") or ""),
                "previous_turn": (
                    {"id": prev_id, "text": secrets_redacted(texts_with_previous[prev_id])[:1000]}
                    if prev_id in texts_with_previous
                    else None
                ),
            }
        )
    facts, playbooks = _related(subject=subject, user_id=scope.user_id, texts=list(texts.values()))
    end = hits[-1]["sort"]
    return ConsolidationInput(
        episodes, facts, playbooks, texts, window_end=(_from_millis(end[0]), str(end[1])), episode_scopes=scopes
    )


def _related(
    *, subject: MemorySubject, user_id: str, texts: list[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The subject's current facts and playbooks that hybrid recall finds for the new turns: one recall
    per group of turns (at most ATLAS_CONSOLIDATION_RECALL_QUERIES), with the subject's own key."""
    from memory.recall import RecallOptions, memory_recall

    groups = max(1, min(settings.ATLAS_CONSOLIDATION_RECALL_QUERIES, len(texts)))
    size = -(-len(texts) // groups)
    facts: dict[str, dict[str, Any]] = {}
    playbooks: dict[str, dict[str, Any]] = {}
    for start in range(0, len(texts), size):
        query = " ".join(texts[start : start + size])[: rc.MAX_QUERY_CHARS].strip()
        if not query:
            continue
        result = memory_recall(
            subject=subject,
            query=query,
            k=min(settings.ATLAS_CONSOLIDATION_RELATED_K, rc.MAX_K),
            memory_types=("semantic", "procedural"),
            # Every related fact the run may confirm or replace, however weakly a group of turns matches it:
            # the floor keeps an agent's prompt clean, not the judge's view of what exists (small talk too).
            options=RecallOptions(floor=False),
        )
        for hit in result.hits:
            if hit.get("user_id") != user_id or len(facts) + len(playbooks) >= settings.ATLAS_CONSOLIDATION_MAX_RELATED:
                continue
            if hit["type"] == "semantic":
                facts.setdefault(
                    hit["id"],
                    {
                        "id": hit["id"],
                        "text": secrets_redacted(hit["text"] or ""),
                        "fact_type": hit.get("fact_type"),
                        "confidence": hit.get("confidence"),
                        **({"scope": scope_of(hit)} if scope_of(hit) else {}),
                    },
                )
            elif hit["type"] == "procedural":
                playbooks.setdefault(
                    hit["id"],
                    {
                        "id": hit["id"],
                        "name": secrets_redacted(hit.get("name") or ""),
                        "trigger_text": secrets_redacted(hit.get("trigger_text") or ""),
                        "steps": [
                            {"instruction": secrets_redacted(s["instruction"]), "tool": s.get("tool")}
                            for s in hit.get("steps") or []
                        ],
                        "version": hit.get("version"),
                        "success_count": hit.get("success_count"),
                        "failure_count": hit.get("failure_count"),
                    },
                )
    return facts, playbooks
