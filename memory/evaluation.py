"""Recall evaluation: recall@1/3/5/10, MRR@10 and facts-first per memory type, and a cross-subject leak
count.

A query may have no gold (an agent turn of small talk: nothing to find). It counts in no recall metric;
its rows say what came first (``first_type``), so a report can show whether a distilled memory was
pushed at a turn that needed none."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from atlas_site.errors import ValidationFailed
from memory.elastic import store
from memory.recall import RecallOptions, memory_recall
from memory.validation import timestamp
from tenants.models import MemorySubject, Tenant
from tenants.selectors import subject_get, tenant_es_client

CUTOFFS = (1, 5, 10)  # the columns reports print
MEASURED_CUTOFFS = (1, 3, 5, 10)  # recall@3 too: about what fits into an agent's prompt
# The distilled memories: what "facts-first" asks to see at #1 when one of them is gold.
DISTILLED_TYPES = ("semantic", "procedural")


@dataclass
class EvalQuery:
    qid: str
    user_id: str
    query: str
    gold_ids: list[str]
    kind: str | None = None
    # The question's clock: when it is asked (a set about time replays questions asked in its past).
    now: datetime | None = None


@dataclass
class EvalReport:
    k: int
    per_query: list[dict[str, Any]] = field(default_factory=list)
    leaks: list[dict[str, Any]] = field(default_factory=list)

    def summary(self, group: Callable[[dict[str, Any]], Iterable[str]] | None = None) -> dict[str, dict[str, float]]:
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in self.per_query:
            groups["all"].append(row)
            for name in group(row) if group else row["gold_types"]:
                groups[name].append(row)
        out = {}
        for name, every in groups.items():
            rows = [r for r in every if r["gold"]]
            metrics: dict[str, float] = {f"recall@{n}": _mean(r[f"recall@{n}"] for r in rows) for n in MEASURED_CUTOFFS}
            metrics["mrr@10"] = _mean(r["rr"] for r in rows)
            metrics["queries"] = len(rows)
            # Facts-first: of the queries with a fact or playbook among the gold, the share whose first hit
            # is a fact or playbook (any one: the agent's prompt starts with distilled memory, not a raw turn).
            distilled = [r for r in rows if set(r["gold_types"]) & set(DISTILLED_TYPES)]
            metrics["facts_first"] = _mean(r["first_type"] in DISTILLED_TYPES for r in distilled)
            metrics["facts_first_queries"] = len(distilled)
            empty = [r for r in every if not r["gold"]]
            if empty:  # no gold: how often a distilled memory still came first
                metrics["no_gold_queries"] = len(empty)
                metrics["no_gold_distilled_first"] = _mean(r["first_type"] in DISTILLED_TYPES for r in empty)
                # Silence when nothing fits (memory.recall.floor): the share answered with no memory at all.
                metrics["no_gold_silent"] = _mean(r["first_type"] is None for r in empty)
            out[name] = metrics
        return out


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def eval_queries_parse(lines: Iterable[str]) -> list[EvalQuery]:
    queries = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            queries.append(
                EvalQuery(
                    str(raw["qid"]),
                    str(raw["user_id"]),
                    str(raw["query"]),
                    [str(g) for g in raw["gold_ids"]],
                    raw.get("kind"),
                    timestamp(raw["now"], field_name="now") if raw.get("now") else None,
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValidationFailed(f"queries line {n}: {exc}") from None
    if not queries:
        raise ValidationFailed("the queries file has no queries")
    return queries


def eval_row(
    q: EvalQuery,
    hits: list[dict[str, Any]],
    *,
    types: dict[str, str],
    k: int,
    evidence_of: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One query's scores from the hits recall returned (``types``: gold external id → memory type).

    ``evidence_of`` (memory id → external id, of the gold memories): a gold turn folded as evidence under a
    returned fact counts at that fact's rank — the agent reads it there, with its time."""
    found = [
        {h.get("external_id")} | {evidence_of[e["id"]] for e in h.get("evidence") or () if e["id"] in evidence_of}
        for h in hits
    ] if evidence_of is not None else [{h.get("external_id")} for h in hits]  # fmt: skip
    ranked = [h.get("external_id") for h in hits]
    gold = set(q.gold_ids)
    row: dict[str, Any] = {"qid": q.qid, "kind": q.kind, "gold_types": sorted({types.get(g, "missing") for g in gold})}
    row["gold"] = bool(gold)
    row["first_type"] = hits[0].get("type") if hits else None
    for cutoff in MEASURED_CUTOFFS:
        seen = set().union(*found[:cutoff])
        row[f"recall@{cutoff}"] = len(gold & seen) / len(gold) if gold else 0.0
    first = next((i for i, ids in enumerate(found[:10], start=1) if ids & gold), None)
    row["rr"] = 1 / first if first else 0.0
    row["top"] = ranked[:k]
    return row


def gold_types(tenant: Tenant, queries: list[EvalQuery]) -> dict[str, str]:
    """Gold external id → memory type, for every query's gold memories."""
    return _gold_types(tenant, {g for q in queries for g in q.gold_ids})


def _gold_types(tenant: Tenant, gold: set[str]) -> dict[str, str]:
    return {external_id: memory_type for _, external_id, memory_type in _gold_memories(tenant, gold)}


def _gold_memories(tenant: Tenant, gold: set[str]) -> list[tuple[str, str, str]]:
    """(memory id, external id, memory type) of each gold memory."""
    reader = tenant_es_client(tenant=tenant)
    query = {"terms": {"external_id": sorted(gold)}}
    return [
        (hit["_id"], hit["_source"]["external_id"], hit["_source"]["memory_type"])
        for hit in store.memories_scan(
            reader, memory_types=("episodic", "semantic", "procedural", "catalog", "archive"), query=query
        )
    ]


def recall_evaluate(
    *,
    tenant: Tenant,
    queries: list[EvalQuery],
    k: int = 10,
    options: RecallOptions | None = None,
    check_leaks: bool = True,
    progress: Callable[[int, int], None] | None = None,
    evidence_counts: bool = False,
) -> EvalReport:
    """Run every query as its subject; with ``check_leaks`` also as another subject of the tenant,
    counting any hit owned by the first subject as a leak. ``evidence_counts``: a gold turn folded under a
    returned fact counts at the fact's rank (eval_row)."""
    subjects: dict[str, MemorySubject] = {}

    def subject(external_id: str) -> MemorySubject:
        if external_id not in subjects:
            subjects[external_id] = subject_get(tenant=tenant, external_id=external_id)
        return subjects[external_id]

    others = sorted(s.external_id for s in tenant.subjects.filter(is_active=True))
    gold = _gold_memories(tenant, {g for q in queries for g in q.gold_ids})
    types = {external_id: memory_type for _, external_id, memory_type in gold}
    evidence_of = {memory_id: external_id for memory_id, external_id, _ in gold} if evidence_counts else None
    report = EvalReport(k=k)
    depth = max(k, max(CUTOFFS))
    for n, q in enumerate(queries, start=1):
        owner = subject(q.user_id)
        result = memory_recall(subject=owner, query=q.query, k=depth, options=options, now=q.now)
        report.per_query.append(eval_row(q, result.hits, types=types, k=k, evidence_of=evidence_of))
        if check_leaks:
            other_id = next((o for o in others if o != q.user_id), None)
            if other_id is not None:
                other = memory_recall(subject=subject(other_id), query=q.query, k=depth, options=options, now=q.now)
                owner_user_id = str(owner.es_id)
                leaked = [h["id"] for h in other.hits if h.get("user_id") == owner_user_id]
                if leaked:
                    report.leaks.append({"qid": q.qid, "asked_as": other_id, "leaked_ids": leaked})
        if progress:
            progress(n, len(queries))
    return report
