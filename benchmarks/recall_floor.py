"""Calibrates the relevance floor (memory.recall.floor, ATLAS_RECALL_FLOOR) on the evaluation sets: what
each floor costs in recall and buys in silence.

Each question of each set is recalled once with the floor off (k=10, no rerank), keeping what the floor
reads (the lifted ranking, the legs, the turn's kind); every floor of the grid is then applied to those
same rankings. The table gives, per floor and set, R@10 and MRR@10 over the questions with gold, the share
of questions without gold answered with nothing, and the mean number of memories returned. Choose the
highest floor that keeps every set's R@10 within 0.005 of the floor off.
Usage: python benchmarks/recall_floor.py [--sets turns_v1 atlas_v1 hard_v1] [--grid 0.5 0.55 …] [--keep DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _stack import ROOT, atlas_stack, eval_set_tenant, progress

GRID = (0.0, 0.55, 0.58, 0.6, 0.62, 0.64, 0.66, 0.68, 0.7)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=["turns_v1", "atlas_v1", "hard_v1"])
    parser.add_argument("--grid", nargs="*", type=float, default=list(GRID))
    parser.add_argument("--keep", type=Path, default=None, help="a stack directory kept between runs")
    args = parser.parse_args()
    with atlas_stack(keep=args.keep):
        from django.conf import settings

        import memory.recall.recall as recall_module
        from memory.evaluation import EvalReport, eval_queries_parse, eval_row, gold_types
        from memory.recall import RecallOptions, memory_recall
        from memory.recall.floor import floor_apply
        from tenants.selectors import subject_get

        settings.ATLAS_RECALL_FLOOR = 0.0
        captured: list[dict] = []

        def recorder(lifted, **inputs):
            captured.append({"lifted": lifted, **inputs})
            return floor_apply(lifted, **inputs)

        recall_module.floor_apply = recorder
        rows = []
        for name in args.sets:
            tenant = eval_set_tenant(name)
            queries = eval_queries_parse((ROOT / "eval" / name / "queries.jsonl").read_text().splitlines())
            types = gold_types(tenant, queries)
            progress(f"recalling {len(queries)} questions of {name} …")
            inputs = []
            for q in queries:
                captured.clear()
                memory_recall(
                    subject=subject_get(tenant=tenant, external_id=q.user_id),
                    query=q.query,
                    k=10,
                    options=RecallOptions(rerank=False),
                )
                inputs.append(captured[0])
            for floor in args.grid:
                report = EvalReport(k=10)
                returned = []
                for q, seen in zip(queries, inputs, strict=True):
                    top = floor_apply(**{**seen, "floor": floor}).ranked[:10]
                    hits = [
                        {"external_id": h["_source"].get("external_id"), "type": h["_source"]["memory_type"]}
                        for _, _, h in top
                    ]
                    returned.append(len(hits))
                    report.per_query.append(eval_row(q, hits, types=types, k=10))
                summary = report.summary()["all"]
                rows.append((floor, name, summary, sum(returned) / len(returned)))
    print("\n| floor | set | R@10 | MRR@10 | no-gold silent | mean returned |\n|---:|---|---:|---:|---:|---:|")
    for floor, name, summary, mean_returned in rows:
        silent = f"{summary['no_gold_silent']:.3f}" if "no_gold_silent" in summary else "–"
        print(
            f"| {floor:.2f} | {name} | {summary['recall@10']:.3f} | {summary['mrr@10']:.3f} | {silent} "
            f"| {mean_returned:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
