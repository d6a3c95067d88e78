"""Why recall ranked what it did: each hit's legs, fusion and multipliers, what was folded under it, and
for a memory the caller expected but did not get, what removed it.

Computed from what the recall already holds (the legs' hits, fusion's per-leg shares), so asking for it
costs no search, except one read of the expected memories that no leg returned (to name the filter
that kept them out). Without ``explain`` none of this is built and the answer stays as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory import recall_constants as rc
from memory.authority import is_pending

from .folding import Lifted
from .fusion import Leg
from .options import RecallOptions

Ranked = list[tuple[str, float, dict[str, Any]]]


@dataclass
class Trace:
    """What the recall records for its explanation while it runs (only when asked to)."""

    legs: list[tuple[str, Leg]] = field(default_factory=list)
    # memory id → {"judges": [leg index], "scale": float, "shares": {leg index: contribution}}
    fusion: dict[str, dict[str, Any]] = field(default_factory=dict)
    fused: dict[str, float] = field(default_factory=dict)  # the fused score before replies inherit
    moved: set[str] = field(default_factory=set)  # moved below a near-duplicate ranked above it
    reranked: bool = False
    turn_kind: str | None = None  # memory.recall.turn_kind
    turn_priors: dict[str, float] = field(default_factory=dict)  # memory id → its turn prior, where not 1


def _age_days(value: Any, origin: datetime) -> float | None:
    try:
        then = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return (origin - then).total_seconds() / 86400


def multipliers(source: dict[str, Any], *, origin: datetime, options: RecallOptions) -> dict[str, float]:
    """The ranking functions' factors for one memory — the ones ``queries.ranking_functions`` has the
    engine multiply into the BM25 (and main dense) leg's score — computed with the same constants."""
    memory_type = source.get("memory_type")
    out: dict[str, float] = {}
    if options.decay:
        when = source.get("timestamp") if memory_type == "episodic" else None
        if memory_type in ("semantic", "archive"):
            when = source.get("last_used_at")
        age = _age_days(when, origin) if when else None
        if age is not None:
            out["decay"] = round(rc.decay_multiplier(age), 6)
    if options.use_boost and memory_type in ("semantic", "archive", "procedural"):
        out["use"] = round(rc.use_boost(int(source.get("use_count") or 0)), 6)
    if options.catalog_prior and memory_type == "catalog":
        out["catalog_prior"] = rc.CATALOG_PRIOR
    if options.outcome and memory_type == "procedural":
        score = source.get("outcome_score", rc.OUTCOME_NEUTRAL)
        out["outcome"] = round(float(score) / rc.OUTCOME_NEUTRAL, 6)
    return out


def hit_explain(
    memory_id: str,
    hit: dict[str, Any],
    *,
    trace: Trace,
    origin: datetime,
    options: RecallOptions,
    lifted: Lifted,
    fused_rank: dict[str, int],
) -> dict[str, Any]:
    """One returned hit's explanation."""
    fusion = trace.fusion.get(memory_id, {})
    legs: dict[str, Any] = {}
    for index, (name, leg) in enumerate(trace.legs):
        position = next((n for n, h in enumerate(leg.hits, start=1) if h["_id"] == memory_id), None)
        judged = index in fusion.get("judges", ())
        legs[name] = {
            "rank": position,
            "score": round(leg.hits[position - 1]["_score"] or 0.0, 6) if position else None,
            "weight": leg.weight,
            "contribution": round(fusion["scale"] * fusion["shares"][index], 6) if judged else None,
        }
    fused = trace.fused.get(memory_id)
    out: dict[str, Any] = {
        "legs": legs,
        "fused_score": round(fused, 6) if fused is not None else None,
        "multipliers": multipliers(hit["_source"], origin=origin, options=options),
        "folded": [turn for turn, fact in lifted.folded.items() if fact == memory_id],
    }
    if memory_id in lifted.lifted:
        out["lifted_by"] = _lifted_by(lifted.lifted[memory_id], lifted=lifted, fused_rank=fused_rank)
    past = [turn for turn, (_old, fact) in lifted.past.items() if fact == memory_id]
    if past:
        out["past_evidence_folded"] = past
    if memory_id in trace.turn_priors:
        # The turn's kind's prior (memory.recall.turn_priors), on the fused score above the candidates' floor;
        # not among the multipliers, which the engine applies to each leg's score.
        out["turn_prior"] = round(trace.turn_priors[memory_id], 6)
    if fusion.get("scale", 1.0) != 1.0:
        out["language_scale"] = round(fusion["scale"], 6)  # judged by the legs that read any language alone
    if memory_id in trace.moved:
        out["moved_below_a_near_duplicate"] = True
    if trace.reranked:
        out["reranked"] = True
    return out


def _lifted_by(turn: str, *, lifted: Lifted, fused_rank: dict[str, int]) -> dict[str, Any]:
    """Which turn's place a fact took: its own evidence, or the evidence of a version it replaced."""
    if turn in lifted.past:
        old = lifted.past[turn][0]
        why = f"lifted by the evidence of the version it replaced ({old}): the turn said what no longer holds"
        return {"turn": turn, "turn_fused_rank": fused_rank.get(turn), "replaced_version": old, "why": why}
    return {"turn": turn, "turn_fused_rank": fused_rank.get(turn), "why": "lifted by its evidence"}


def filters_described(
    *,
    types: tuple[str, ...],
    include_superseded: bool,
    as_of: datetime | None,
    fact_type: str | None,
    known_at: datetime | None = None,
    since: Any,
    until: Any,
    scoped_by: list[str] | None = None,
) -> list[str]:
    """The filters every leg applied, in words."""
    out = ["the subject's own memories and the tenant's catalog (its Elasticsearch key, document level security)"]
    out.append(f"types: {', '.join(types)}")
    if as_of is not None:
        out.append(f"as of {as_of.isoformat()}: what held then (valid time), as known now")
    if known_at is not None:
        out.append(f"known at {known_at.isoformat()}: what had been recorded by then")
    if as_of is None and known_at is None:
        out.append(
            "replaced versions included" if include_superseded else "current facts only: replaced versions hidden"
        )
    if fact_type:
        out.append(f"fact_type: {fact_type}")
    if since:
        out.append(f"stored at or after {since}")
    if until:
        out.append(f"stored before {until}")
    if scoped_by:
        out.append(f"scope filters on {', '.join(scoped_by)}: the subject's own memories only (no catalog)")
    return out


def expected_explain(
    expect: list[str],
    *,
    top: Ranked,
    ranked: Ranked,
    lifted: Lifted,
    dropped: dict[str, str],
    trace: Trace,
    k: int,
    fetch: Callable[[list[str]], dict[str, dict[str, Any]]],
    why_filtered: Callable[[dict[str, Any]], str | None],
) -> list[dict[str, Any]]:
    """For each expected memory (its id or external id): where it stood in each leg and in the fused
    list, and what removed it from the answer — a filter, a fold under a returned fact, or rank."""
    seen = {memory_id: hit for memory_id, _, hit in ranked}
    by_external = {hit["_source"].get("external_id"): memory_id for memory_id, hit in seen.items()}
    shown = {memory_id: rank for rank, (memory_id, _, _) in enumerate(top, start=1)}
    fused_rank = {memory_id: rank for rank, (memory_id, _, _) in enumerate(ranked, start=1)}
    unseen = [e for e in expect if e not in seen and e not in by_external]
    stored = fetch(unseen) if unseen else {}
    out = []
    for requested in expect:
        memory_id = requested if requested in seen else by_external.get(requested)
        entry: dict[str, Any] = {"id": requested}
        if memory_id is None:
            hit = stored.get(requested)
            if hit is None:
                entry["removed_by"] = "not found"
                entry["detail"] = "no memory with this id that this subject may read"
            elif is_pending(hit["_source"]):
                entry["memory_id"] = hit["_id"]
                entry["removed_by"] = "pending review"
                entry["detail"] = "a proposal waiting for the person's review: never recalled until it is accepted"
            else:
                entry["memory_id"] = hit["_id"]
                reason = why_filtered(hit["_source"])
                entry["removed_by"] = "filter" if reason else "rank"
                entry["detail"] = reason or "no leg ranked it within its window"
            out.append(entry)
            continue
        entry["memory_id"] = memory_id
        entry["legs"] = {
            name: next((n for n, h in enumerate(leg.hits, start=1) if h["_id"] == memory_id), None)
            for name, leg in trace.legs
        }
        entry["fused_rank"] = fused_rank[memory_id]
        if memory_id in shown:
            entry["rank"] = shown[memory_id]
        elif memory_id in lifted.folded:
            entry["removed_by"] = "fold"
            entry["detail"] = f"folded under the fact {lifted.folded[memory_id]} as its evidence"
        elif memory_id in dropped:
            entry["removed_by"] = "floor"
            entry["detail"] = dropped[memory_id]
        elif memory_id in lifted.past:
            old, current = lifted.past[memory_id]
            entry["removed_by"] = "fold"
            entry["detail"] = (
                f"evidence of the replaced version {old} only: folded away, its current version {current} "
                "took its place"
            )
        else:
            entry["removed_by"] = "rank"
            entry["detail"] = f"fused rank {fused_rank[memory_id]}, below the {k} returned"
        out.append(entry)
    return out


def explain_line(why: dict[str, Any]) -> str:
    """A hit's explanation in one line of words (the CLI, the dashboard's "why this result")."""
    parts = []
    for name, leg in why["legs"].items():
        if leg["rank"] is None:
            parts.append(f"{name} did not find it")
        else:
            share = f", {leg['contribution']:+.3f}" if leg["contribution"] is not None else ", not counted"
            parts.append(f"{name} #{leg['rank']} ({leg['score']:.3f}{share})")
    if why.get("fused_score") is not None:
        parts.append(f"fused {why['fused_score']:.3f}")
    parts += [f"{name} ×{factor:.3f}" for name, factor in why["multipliers"].items()]
    if why.get("turn_prior") is not None:
        parts.append(f"turn prior ×{why['turn_prior']:.3f}")
    if why.get("lifted_by"):
        lift = why["lifted_by"]
        parts.append(f"{lift['why']} (turn {lift['turn']} at fused #{lift['turn_fused_rank']})")
    if why["folded"]:
        parts.append(f"{len(why['folded'])} turn(s) folded under it")
    if why.get("past_evidence_folded"):
        parts.append(f"{len(why['past_evidence_folded'])} turn(s) of a replaced version folded away")
    if why.get("moved_below_a_near_duplicate"):
        parts.append("moved below a near-duplicate")
    return "; ".join(parts)


def expected_line(entry: dict[str, Any]) -> str:
    """An expected memory's fate in one line."""
    if "rank" in entry:
        return f"returned at #{entry['rank']}"
    stood = ", ".join(f"{name} #{rank}" for name, rank in entry.get("legs", {}).items() if rank is not None)
    where = f" (stood: {stood})" if stood else ""
    return f"removed by {entry['removed_by']}: {entry['detail']}{where}"
