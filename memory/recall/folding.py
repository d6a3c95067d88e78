"""Evidence folding: a current fact carries the episodes it was distilled from, and those episodes do
not take slots of their own.

An agent's prompt has room for a few memories. A raw turn that a returned fact already states ("I moved
to Lisbon last month" under "Alice lives in Lisbon") only repeats it and pushes out the next memory the
agent needs; under the fact it still says where the fact came from and when. Episodes nothing returned
cites keep their place. A superseded fact's episodes are not folded (nor do they bring that fact back):
what they said is no longer what the user holds.

Evidence also lifts its fact (issue 34): when a turn that a current fact cites ranks, the fact takes the
better of its own place and the turn's, and the turn folds under it — the agent gets the durable
statement, not the passing remark. A turn cited only by replaced versions of a fact is evidence of the
past: the chain's current version takes its place and the turn folds away (``past``), so an old turn
never stands above the correction that replaced what it said.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory.elastic.queries import FORGOTTEN_LINK

Ranked = list[tuple[str, float, dict[str, Any]]]  # (memory id, fused score, hit), best first

#: Evidence shown under a hit: the newest few, each cut to a short text (the hit says how many there are).
EVIDENCE_SHOWN = 5
EVIDENCE_CHARS = 200


def _citations(hit: dict[str, Any]) -> list[str]:
    """The episodes a current fact cites; nothing for a superseded or retracted one, or another type."""
    source = hit["_source"]
    if source.get("memory_type") != "semantic" or source.get("superseded_by") or source.get("retracted"):
        return []
    return [e for e in source.get("source_episodes") or [] if e != FORGOTTEN_LINK]


@dataclass
class Citations:
    """Which facts cite the ranked turns, beyond the facts among the candidates (recall.py looks them up
    with one search beside the legs)."""

    current: dict[str, str] = field(default_factory=dict)  # turn id → a current fact citing it
    past: dict[str, tuple[str, str]] = field(default_factory=dict)  # turn id → (replaced version, current one)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)  # fact id → hit, for the facts named above


@dataclass
class Lifted:
    """The ranking once evidence lifted its facts: ``ranked`` best first; ``folded`` turn → the fact it is
    evidence of; ``past`` turn → (replaced version, current version) for evidence of the past; ``lifted``
    fact → the turn whose place it took."""

    ranked: Ranked
    folded: dict[str, str] = field(default_factory=dict)
    past: dict[str, tuple[str, str]] = field(default_factory=dict)
    lifted: dict[str, str] = field(default_factory=dict)


def evidence_lift(ranked: Ranked, citations: Citations) -> Lifted:
    """Each current fact at the better of its own place and that of the best-ranked turn it cites, the
    turn folded under it; a turn cited only by replaced versions gives its place to the current version
    and folds away. A fact citing a turn among the candidates counts even if the lookup missed it."""
    citing = dict(citations.current)
    for memory_id, _, hit in ranked:  # the candidates' own citations: the better-ranked fact first
        for episode in _citations(hit):
            citing.setdefault(episode, memory_id)
    hits = {memory_id: hit for memory_id, _, hit in ranked} | citations.facts
    out = Lifted(ranked=[])
    placed: set[str] = set()
    for memory_id, score, hit in ranked:
        if memory_id in placed:
            continue
        fact = _fact_of(memory_id, hit, citing=citing, past=citations.past, hits=hits)
        if fact is None:
            out.ranked.append((memory_id, score, hit))
            placed.add(memory_id)
            continue
        if memory_id in citing:
            out.folded[memory_id] = fact
        else:
            out.past[memory_id] = citations.past[memory_id]
        if fact not in placed:
            out.ranked.append((fact, score, hits[fact]))
            out.lifted[fact] = memory_id
            placed.add(fact)
    return out


def _fact_of(
    memory_id: str,
    hit: dict[str, Any],
    *,
    citing: dict[str, str],
    past: dict[str, tuple[str, str]],
    hits: dict[str, dict[str, Any]],
) -> str | None:
    """The fact a turn gives its place to: a current fact citing it, else the current version of a replaced
    one citing it; None for any other memory (or a fact this recall cannot show)."""
    if hit["_source"].get("memory_type") != "episodic":
        return None
    fact = citing.get(memory_id) or (past[memory_id][1] if memory_id in past else None)
    return fact if fact in hits else None


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
