"""Evidence folding: a current fact carries the episodes it was distilled from, and those episodes do
not take slots of their own.

An agent's prompt has room for a few memories. A raw turn that a returned fact already states ("I moved
to Lisbon last month" under "Alice lives in Lisbon") only repeats it and pushes out the next memory the
agent needs; under the fact it still says where the fact came from and when. Episodes nothing returned
cites keep their place. A superseded fact's episodes are not folded (nor do they bring that fact back):
what they said is no longer what the user holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Ranked = list[tuple[str, float, dict[str, Any]]]  # (memory id, fused score, hit), best first

#: Evidence shown under a hit: the newest few, each cut to a short text (the hit says how many there are).
EVIDENCE_SHOWN = 5
EVIDENCE_CHARS = 200


def _citations(hit: dict[str, Any]) -> list[str]:
    """The episodes a current fact cites; nothing for a superseded or retracted one, or another type."""
    source = hit["_source"]
    if source.get("memory_type") != "semantic" or source.get("superseded_by") or source.get("retracted"):
        return []
    return list(source.get("source_episodes") or [])


def evidence_fold(ranked: Ranked, k: int) -> tuple[Ranked, dict[str, str]]:
    """The top ``k`` once every episode cited by a fact among them is folded: (top, {episode: fact}).

    Folding frees a slot, the next memory moves up, and if it is a fact its episodes fold too, so this
    repeats until the top k stop changing. It ends: a fact in the top k stays there (removing memories
    above it only moves it up), so the folded set only grows."""
    is_episode = {memory_id for memory_id, _, hit in ranked if hit["_source"].get("memory_type") == "episodic"}
    folded: dict[str, str] = {}
    while True:
        top = [item for item in ranked if item[0] not in folded][:k]
        grown = dict(folded)
        for memory_id, _, hit in top:
            for episode in _citations(hit):
                if episode in is_episode and episode not in grown:
                    grown[episode] = memory_id
        if grown == folded:
            return top, folded
        folded = grown


def evidence_attach(
    hits: list[dict[str, Any]], ranked: Ranked, fetch: Callable[[list[str]], dict[str, dict[str, Any]]]
) -> None:
    """Give each shaped hit that is a current fact citing episodes its ``evidence`` (newest first, at most
    EVIDENCE_SHOWN, and ``evidence_count``). Episodes among the ranked candidates are read from there;
    the rest with one ``fetch`` (the subject's own read: an episode since forgotten is simply absent)."""
    cited = {hit["id"]: _citations({"_source": {**hit, "memory_type": hit["type"]}}) for hit in hits}
    wanted = {episode for episodes in cited.values() for episode in episodes}
    if not wanted:
        return
    known = {memory_id: hit for memory_id, _, hit in ranked if memory_id in wanted}
    missing = [episode for episode in wanted if episode not in known]
    if missing:
        known.update({hit["_id"]: hit for hit in fetch(missing).values()})
    for hit in hits:
        found = [known[e]["_source"] | {"id": known[e]["_id"]} for e in cited[hit["id"]] if e in known]
        if not found:
            continue
        found.sort(key=lambda source: source.get("timestamp") or "", reverse=True)
        hit["evidence"] = [
            {"id": source["id"], "timestamp": source.get("timestamp"), "text": _short(source.get("text") or "")}
            for source in found[:EVIDENCE_SHOWN]
        ]
        hit["evidence_count"] = len(found)


def _short(text: str) -> str:
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 1].rstrip() + "…"
