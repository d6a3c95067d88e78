"""A newer statement next to the fact it may change (issue 34 point 2): "I moved to Lisbon last month",
said after "Alice lives in Berlin" was distilled and before the nightly run has read it, must reach the
agent beside that fact — not at fused rank 16, below the router fact and a playbook.

Recall cannot tell that the turn contradicts the fact (consolidation's model does that at night), but it
can tell that the turn is newer than the fact, that no fact states it yet, and that the question is about
it as much as about the fact: the main dense leg ranks it among its first few. Such a turn moves to just
below the fact, marked ``newer_than`` the fact, so the agent reads the durable statement and what may have
changed since, together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings

from memory.validation import timestamp

from .fusion import Leg
from .lexical import english_terms
from .turn_kind import turn_asks

Ranked = list[tuple[str, float, dict[str, Any]]]

#: A turn the main dense leg ranks this high among the statements no fact cites is about what the question asks
#: even if it shares no word with the fact ("I moved to Lisbon last month" under "Alice lives in Berlin");
#: lower, it must share one.
DENSE_RANK_UNSHARED = 1
#: The facts whose newer statements are looked for: the first in the top k, the one the question is most about.
FACTS_CHECKED = 1


@dataclass
class Placed:
    """The ranking with the newer statements moved; ``newer`` turn → the fact it was placed under."""

    ranked: Ranked
    newer: dict[str, str] = field(default_factory=dict)


def _is_current_fact(source: dict[str, Any]) -> bool:
    return source.get("memory_type") == "semantic" and not source.get("superseded_by") and not source.get("retracted")


def _when(value: Any) -> datetime | None:
    return timestamp(value, field_name="timestamp") if value else None


def _since(source: dict[str, Any]) -> datetime | None:
    """When the fact was last known to hold: stored, or confirmed by a later conversation."""
    known = [t for t in (_when(source.get("created_at")), _when(source.get("last_confirmed_at"))) if t]
    return max(known, default=None)


def newer_statements_place(ranked: Ranked, *, k: int, legs: list[tuple[str, Leg]], cited: set[str]) -> Placed:
    """The first FACTS_CHECKED current facts in the top ``k``, each with the best-ranked turn that is
    newer than it, cited by no fact (``cited``), among the main dense leg's first ATLAS_NEWER_DENSE_RANK
    hits (0 = off), stating something (not asking) and — unless the leg's first such turn —
    sharing a word with the fact (the english analyzer's terms: stop words dropped, stems), moved to just
    below it when it stood lower."""
    dense = dict(legs).get("dense")
    if dense is None or not settings.ATLAS_NEWER_DENSE_RANK:
        return Placed(ranked=ranked)
    # The statements (not questions or requests: those change no fact) no fact cites, as the dense leg ranks them.
    statements = [
        hit["_id"]
        for hit in dense.hits[: settings.ATLAS_NEWER_DENSE_RANK]
        if hit["_source"].get("memory_type") == "episodic"
        and hit["_id"] not in cited
        and not turn_asks(text=hit["_source"].get("text") or "")
    ]
    dense_rank = {memory_id: rank for rank, memory_id in enumerate(statements, start=1)}
    out = Placed(ranked=list(ranked))
    facts = [(i, item) for i, item in enumerate(ranked[:k]) if _is_current_fact(item[2]["_source"])][:FACTS_CHECKED]
    for _, (fact_id, _, fact) in facts:
        since, own = _since(fact["_source"]), set(fact["_source"].get("source_episodes") or ())
        words = set(english_terms(fact["_source"].get("text") or ""))
        position = next(i for i, item in enumerate(out.ranked) if item[0] == fact_id)
        for later, (memory_id, _, hit) in enumerate(out.ranked):
            source = hit["_source"]
            if (
                memory_id in dense_rank
                and memory_id not in cited | own | set(out.newer)
                and source.get("memory_type") == "episodic"
                and since is not None
                and (said := _when(source.get("timestamp"))) is not None
                and said > since
                and (
                    dense_rank[memory_id] <= DENSE_RANK_UNSHARED or words & set(english_terms(source.get("text") or ""))
                )
            ):
                if later > position + 1:
                    out.ranked.insert(position + 1, out.ranked.pop(later))
                out.newer[memory_id] = fact_id
                break
    return out
