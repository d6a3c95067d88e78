"""The quality/latency frontier of recall's leg combinations on the evaluation sets, in one run.

Imports each set under eval/ once (or reuses a kept stack, --keep), then goes through the set's
queries; for each query every configuration recalls it in turn (the order rotating query by query)
right after one plain BM25 search over the same indices with the same key, the query embeddings
cleared before each recall (a new question pays for them). So every configuration's latency is
measured under the same load as its yardstick, and the ratio recall p50 ÷ plain BM25 p50 holds on a
shared machine. Quality is the gate's metrics (tests/memory/test_eval_gate.py) from the same recalls.
Usage: python benchmarks/recall_frontier.py [--sets atlas_v1 hard_v1] [--configs 0 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from _stack import ROOT, atlas_stack, eval_set_tenant, progress
from recall_latency import pct
from recall_profile import plain_bm25_body, query_embeddings_forget

NO_ML = {"multilingual": False}
NO_BM25 = {"bm25": False}
ONE_PER_LEG = {"ATLAS_KNN_SEARCH_PER_INDEX": False}
LITERAL = {"ATLAS_BM25_LEG": "literal"}
# (label, RecallOptions overrides, settings overrides, recall_constants overrides). The cross-lingual
# leg is searched wherever it may judge (the language flags kept at write time), as in the product.
CONFIGS: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    ("all legs, kNN per index, 2 _msearch (the default before)", {}, {}, {}),
    ("all legs, kNN per index, 1 _msearch", {}, {"ATLAS_RECALL_ONE_MSEARCH": True}, {}),
    ("all legs, one kNN search per leg", {}, ONE_PER_LEG, {}),
    ("all legs, one kNN search per leg, num_candidates = k", {}, ONE_PER_LEG, {"KNN_CANDIDATES_PER_RESULT": 1}),
    ("BM25 leg for literal questions only, one kNN search per leg", {}, {**ONE_PER_LEG, **LITERAL}, {}),
    ("no BM25 leg, one kNN search per leg", NO_BM25, ONE_PER_LEG, {}),
    ("no multilingual leg, one kNN search per leg", NO_ML, ONE_PER_LEG, {}),
    ("BM25 only", {"dense": False, "multilingual": False, "crosslingual": False}, {}, {}),
]
# Configurations that find the same hits with the same scores as another (tests/memory/test_recall.py;
# num_candidates changes nothing on an exact kNN): their quality is that one's, only their latency is measured.
SAME_HITS = {1: 0, 2: 0, 3: 0}
# The literal-only BM25 configuration searches exactly what the no-BM25 one does for a question that
# BM25_LEG_QUERY_PATTERN does not match: its quality is recalled for the matched ones only, the rest copied.
LITERAL_ELSE = {4: 5}
# Timed only (--latency-only, the default): their quality is in docs/recall-quality.md's ablation.
LATENCY_ONLY = (6, 7)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="*", default=["atlas_v1", "hard_v1"])
    parser.add_argument("--configs", nargs="*", type=int, help="indexes into the configuration list (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries of each set (0: all)")
    parser.add_argument(
        "--latency-every",
        type=int,
        default=4,
        help="time every configuration (embeddings cleared, next to a plain BM25 search) on every Nth query;"
        " the others only score quality, their embeddings cached across configurations",
    )
    parser.add_argument(
        "--latency-only",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="score the configurations in LATENCY_ONLY too (--no-latency-only) or only time them",
    )
    parser.add_argument("--keep", type=Path, help="keep the stack's data here and reuse what it holds")
    args = parser.parse_args()
    picked = args.configs or list(range(len(CONFIGS)))
    chosen = [CONFIGS[i] for i in picked]
    # Within the chosen ones: position → the position whose hits it shares (if that one is chosen too).
    same_hits = {picked.index(i): picked.index(SAME_HITS[i]) for i in picked if SAME_HITS.get(i) in picked}
    literal_else = {picked.index(i): picked.index(LITERAL_ELSE[i]) for i in picked if LITERAL_ELSE.get(i) in picked}
    unscored = {picked.index(i) for i in picked if i in LATENCY_ONLY} if args.latency_only else set()
    tables = []
    with atlas_stack(args.keep):
        from django.conf import settings

        from memory import recall_constants as rc
        from memory.elastic import store
        from memory.evaluation import EvalReport, eval_queries_parse, eval_row, gold_types
        from memory.recall import RecallOptions, memory_recall
        from memory.scope import SubjectScope
        from memory.selectors import RECALL_TYPES
        from tenants.selectors import subject_get

        setting_defaults = {name: getattr(settings, name) for _, _, changes, _ in CONFIGS for name in changes}
        constant_defaults = {name: getattr(rc, name) for _, _, _, changes in CONFIGS for name in changes}
        for name in args.sets:
            tenant = eval_set_tenant(name)
            queries = eval_queries_parse((ROOT / "eval" / name / "queries.jsonl").read_text().splitlines())
            queries = queries[: args.limit] if args.limit else queries
            types = gold_types(tenant, queries)
            reports = [EvalReport(k=10) for _ in chosen]
            walls: list[list[float]] = [[] for _ in chosen]
            plains: list[list[float]] = [[] for _ in chosen]
            searches: list[list[float]] = [[] for _ in chosen]
            subjects: dict[str, Any] = {}
            started = time.perf_counter()
            for n, q in enumerate(queries):
                if q.user_id not in subjects:
                    subjects[q.user_id] = subject_get(tenant=tenant, external_id=q.user_id)
                subject = subjects[q.user_id]
                reader = SubjectScope.of(subject).reader()
                timed = n % args.latency_every == 0
                rows: dict[int, dict[str, Any]] = {}
                order = list(range(len(chosen)))
                order = order[n % len(order) :] + order[: n % len(order)]
                for i in order:
                    label, overrides, changes, constants = chosen[i]
                    literal = re.search(rc.BM25_LEG_QUERY_PATTERN, q.query) is not None
                    if not timed and (i in same_hits or i in unscored or (i in literal_else and not literal)):
                        continue
                    for setting, value in {**setting_defaults, **changes}.items():
                        setattr(settings, setting, value)
                    for constant, value in {**constant_defaults, **constants}.items():
                        setattr(rc, constant, value)
                    if timed:
                        query_embeddings_forget()
                        t0 = time.perf_counter()
                        store.memories_search(reader, memory_types=RECALL_TYPES, body=plain_bm25_body(q.query))
                        plains[i].append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    result = memory_recall(
                        subject=subject,
                        query=q.query,
                        k=10,
                        options=replace(RecallOptions(rerank=False), **overrides),
                    )
                    if timed:
                        walls[i].append((time.perf_counter() - t0) * 1000)
                        searches[i].append(result.timings_ms["search"])
                    if i not in same_hits and i not in unscored:
                        rows[i] = eval_row(q, result.hits, types=types, k=10)
                for i, j in literal_else.items():
                    rows.setdefault(i, rows[j])
                for i, row in rows.items():
                    reports[i].per_query.append(row)
                if n % 10 == 0:
                    rate = (n + 1) / (time.perf_counter() - started)
                    progress(f"{name}: query {n + 1}/{len(queries)} ({rate:.2f} queries/s)")
            for setting, value in setting_defaults.items():
                setattr(settings, setting, value)
            for constant, value in constant_defaults.items():
                setattr(rc, constant, value)
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            for i, j in same_hits.items():
                reports[i] = reports[j]
            tables.append((name, len(queries), load, reports, walls, plains, searches))
    every = args.latency_every
    for name, count, load, reports, walls, plains, searches in tables:
        print(f"\n### {name} ({count} queries, latency from every {every}th; load average at its end {load})\n")
        print(
            "| configuration | R@5 | R@10 | MRR@10 | recall p50 ms | recall p95 ms | search p50 ms "
            "| plain BM25 p50 ms | recall p50 ÷ plain BM25 p50 |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for (label, *_), report, wall, plain, search in zip(chosen, reports, walls, plains, searches, strict=True):
            if report.per_query:
                m = report.summary()["all"]
                quality = f"{m['recall@5']:.3f} | {m['recall@10']:.3f} | {m['mrr@10']:.3f}"
            else:
                quality = "(timed only) | | "
            print(
                f"| {label} | {quality} "
                f"| {statistics.median(wall):.1f} | {pct(wall, 0.95):.1f} | {statistics.median(search):.1f} "
                f"| {statistics.median(plain):.1f} | {statistics.median(wall) / statistics.median(plain):.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
