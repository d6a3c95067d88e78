"""What issue 26's recall changes cost on the two older evaluation sets: the recall before them against
the default today, both plans of the BM25 leg, every row from one run under the same load.

"before" is today's code with the three changes switched off: evidence folding (``fold_evidence``),
ranking for turns (the ATLAS_TURN_* priors at 1, the repeat rule off) and, under ``make run``'s
``literal`` plan, the BM25 leg's trigger narrowed back to literal questions (LITERAL_QUERY_PATTERN, what
bm25_leg_searched read before questions about time were added) and no BM25 over the candidates for the
other questions (ATLAS_BM25_POOL off). "after" is the default. Each question
is asked in rotation by all four ways (its text made fresh per way, so no query-embedding cache hit
favours a later one); the table gives p50/p95 and each after's p50 as a ratio to its before.
Target (issue 26): the default plan ≤ 10 % slower than before.
Usage: python benchmarks/recall_turn_cost.py [--sets atlas_v1 hard_v1] [--every 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from _stack import ROOT, atlas_stack, eval_set_tenant, progress

TURN_PRIORS_OFF = {
    "ATLAS_TURN_QUESTION_FACT_PRIOR": 1.0,
    "ATLAS_TURN_OWN_QUESTION_FACT_PRIOR": 1.0,
    "ATLAS_TURN_STATEMENT_FACT_PRIOR": 1.0,
    "ATLAS_TURN_REQUEST_PLAYBOOK_PRIOR": 1.0,
    "ATLAS_TURN_REQUEST_FACT_PRIOR": 1.0,
    "ATLAS_TURN_ASKED_PRIOR": 1.0,
    "ATLAS_TURN_REPEAT_JACCARD": 0.0,
}

# One trailing word per way, so each way embeds its own text: lower-case, no digit and nothing about time,
# so neither BM25 trigger reads it.
FRESH_WORDS = ("indeed", "anyway", "actually", "really")


@contextmanager
def way(*, plan: str, before: bool):
    from django.test import override_settings

    from memory import recall_constants as rc

    trigger = rc.BM25_LEG_QUERY_PATTERN
    if before:
        rc.BM25_LEG_QUERY_PATTERN = rc.LITERAL_QUERY_PATTERN
    try:
        with override_settings(ATLAS_BM25_LEG=plan, **(TURN_PRIORS_OFF | {"ATLAS_BM25_POOL": False} if before else {})):
            yield
    finally:
        rc.BM25_LEG_QUERY_PATTERN = trigger


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["atlas_v1", "hard_v1"])
    parser.add_argument("--every", type=int, default=2, help="time every N-th question of each set")
    parser.add_argument("--keep", type=Path, help="a data directory kept between runs (imports once)")
    args = parser.parse_args()
    ways = [(plan, before) for plan in ("always", "literal") for before in (True, False)]
    rows: dict[tuple[str, str, bool], list[float]] = {}
    with atlas_stack(keep=args.keep):
        from memory.evaluation import eval_queries_parse
        from memory.recall import memory_recall
        from tenants.selectors import subject_get

        load_before = os.getloadavg()[0]
        for name in args.sets:
            tenant = eval_set_tenant(name)
            queries = eval_queries_parse((ROOT / "eval" / name / "queries.jsonl").read_text().splitlines())
            queries = queries[:: args.every]
            progress(f"{name}: {len(queries)} questions × {len(ways)} ways …")
            for n, query in enumerate(queries):
                subject = subject_get(tenant=tenant, external_id=query.user_id)
                for (plan, before), word in zip(ways, FRESH_WORDS, strict=True):
                    text = f"{query.query} {word}"  # fresh text per way: no query-embedding cache hits
                    with way(plan=plan, before=before):
                        result = memory_recall(subject=subject, query=text, k=10, fold_evidence=not before)
                    rows.setdefault((name, plan, before), []).append(result.timings_ms["total"])
                if n % 25 == 0:
                    progress(f"  {n}/{len(queries)}")
        load_after = os.getloadavg()[0]
    print(f"\n{datetime.now(UTC).date().isoformat()}: load average {load_before:.2f} → {load_after:.2f}")
    print("| set | BM25 plan | recall | p50 ms | p95 ms | after ÷ before (p50) |")
    print("|---|---|---|---:|---:|---:|")
    for name in args.sets:
        for plan in ("always", "literal"):
            base = statistics.median(rows[(name, plan, True)])
            for before in (True, False):
                values = sorted(rows[(name, plan, before)])
                p50, p95 = statistics.median(values), values[int(0.95 * (len(values) - 1))]
                ratio = "" if before else f"{p50 / base:.2f}×"
                label = "before issue 26" if before else "**default**"
                print(f"| {name} | {plan} | {label} | {p50:.1f} | {p95:.1f} | {ratio} |")
    print(json.dumps({f"{n}/{p}/{'before' if b else 'after'}": statistics.median(v) for (n, p, b), v in rows.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
