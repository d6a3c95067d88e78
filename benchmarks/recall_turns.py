"""Ranking for turns: eval/turns_v1 per turn kind (R@3, R@5, MRR@10, facts-first, small talk), and the
other sets' totals, for the default and for swept or ablated ATLAS_TURN_* settings — how each constant of
memory.recall.turn_priors was measured (docs/recall-quality.md "Ranking for turns").

Each query is recalled once, as the product does it; the priors come after fusion, so the script keeps
each query's fused list and re-ranks it for every configuration with the product's own functions (turn
priors, near-duplicate spreading, evidence folding) — the same top 10 a recall with those settings
returns, without searching again.

Usage: python benchmarks/recall_turns.py [--sets turns_v1 atlas_v1 hard_v1] [--keep DIR]
           [--base SETTING=VALUE ...] [--sweep SETTING=V1,V2,...] [--grid SETTING=V1,V2,... ...] [--ablate]
Each --sweep value runs alone on top of the defaults and --base, --grid runs every combination; --ablate runs the defaults with each
lever off alone, then all off (the ranking before turn priors).
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

from _stack import ROOT, atlas_stack, eval_set_tenant, progress

KINDS = ("request", "question", "statement", "small-talk")
LEVERS = {  # each lever's setting and its value when off
    "question → facts": ("ATLAS_TURN_QUESTION_FACT_PRIOR", 1.0),
    "statement → facts": ("ATLAS_TURN_STATEMENT_FACT_PRIOR", 1.0),
    "request → playbooks": ("ATLAS_TURN_REQUEST_PLAYBOOK_PRIOR", 1.0),
    "request → constraint/preference facts": ("ATLAS_TURN_REQUEST_FACT_PRIOR", 1.0),
    "asked turns demoted": ("ATLAS_TURN_ASKED_PRIOR", 1.0),
    "a repeat of the turn never first": ("ATLAS_TURN_REPEAT_JACCARD", 0.0),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", nargs="*", default=["turns_v1", "atlas_v1", "hard_v1"])
    parser.add_argument("--keep", type=Path, help="keep the stack here and reuse what an earlier run imported")
    parser.add_argument("--base", nargs="*", default=[], help="SETTING=VALUE on top of the defaults")
    parser.add_argument("--sweep", nargs="*", default=[], help="SETTING=V1,V2,…: each value alone")
    parser.add_argument("--grid", nargs="*", default=[], help="SETTING=V1,V2,…: every combination of the values")
    parser.add_argument("--ablate", action="store_true", help="each lever off alone, then all off")
    args = parser.parse_args()
    with atlas_stack(keep=args.keep):
        from django.conf import settings

        import memory.recall.recall as recall_module
        from memory.evaluation import EvalReport, eval_queries_parse, eval_row, gold_types
        from memory.recall import RecallOptions, memory_recall
        from memory.recall.folding import Citations, evidence_lift
        from memory.recall.fusion import near_duplicates_spread
        from memory.recall.turn_kind import turn_classify
        from memory.recall.turn_priors import turn_priors_apply
        from tenants.selectors import subject_get

        captured: list[tuple] = []
        recall_ms: list[float] = []

        def recorder(fused, *, text, kind, window, priors=None):
            captured.append((list(fused), text, kind, window))
            return turn_priors_apply(fused, text=text, kind=kind, window=window, priors=priors)

        recall_module.turn_priors_apply = recorder
        sets = {}
        for name in args.sets:
            tenant = eval_set_tenant(name)
            queries = eval_queries_parse((ROOT / "eval" / name / "queries.jsonl").read_text().splitlines())
            progress(f"recalling {len(queries)} queries of {name} …")
            fused_lists = []
            for q in queries:
                captured.clear()
                result = memory_recall(
                    subject=subject_get(tenant=tenant, external_id=q.user_id),
                    query=q.query,
                    k=10,
                    options=RecallOptions(rerank=False),
                )
                fused_lists.append(captured[0])
                recall_ms.append(result.timings_ms["total"])
            sets[name] = (queries, fused_lists, gold_types(tenant, queries))

        def evaluate(name: str) -> EvalReport:
            queries, fused_lists, types = sets[name]
            report = EvalReport(k=10)
            for q, (fused, text, _kind, window) in zip(queries, fused_lists, strict=True):
                ranked = turn_priors_apply(fused, text=text, kind=turn_classify(text=text), window=window)
                ranked = near_duplicates_spread(ranked[:window], settings.ATLAS_DEDUP_JACCARD) + ranked[window:]
                top = evidence_lift(ranked, Citations()).ranked[:10]  # the candidates' own citations
                hits = [
                    {"external_id": h["_source"].get("external_id"), "type": h["_source"]["memory_type"]}
                    for _, _, h in top
                ]
                report.per_query.append(eval_row(q, hits, types=types, k=10))
            return report

        base = {k: float(v) for k, v in (item.split("=", 1) for item in args.base)}
        configs: list[tuple[str, dict[str, float]]] = [("default" + (f" {base}" if base else ""), base)]
        for item in args.sweep:
            setting, values = item.split("=", 1)
            configs += [(f"{setting}={v}", {**base, setting: float(v)}) for v in values.split(",")]
        if args.grid:
            axes = [(setting, values.split(",")) for setting, values in (item.split("=", 1) for item in args.grid)]
            for combination in itertools.product(*(values for _, values in axes)):
                changes = {setting: float(v) for (setting, _), v in zip(axes, combination, strict=True)}
                configs.append((" ".join(f"{k}={v}" for k, v in changes.items()), {**base, **changes}))
        if args.ablate:
            configs += [(f"without {lever}", {**base, s: off}) for lever, (s, off) in LEVERS.items()]
            configs.append(("no turn ranking (all levers off)", {**base, **dict(LEVERS.values())}))
        defaults = {s: getattr(settings, s) for _, changes in configs for s in changes}
        others = [n for n in sets if n != "turns_v1"]
        head = [f"{k} R@3 / R@5 / MRR@10 / facts-first" for k in KINDS[:3]] if "turns_v1" in sets else []
        head += ["small talk: distilled first", "**all** R@3 / R@5 / MRR@10 / facts-first"] if head else []
        head += [f"{n} R@5 / R@10 / MRR@10" for n in others]
        print("| configuration | " + " | ".join(head) + " |")
        print("|---|" + "---|" * len(head))
        started = time.perf_counter()
        for label, changes in configs:
            for setting, value in {**defaults, **changes}.items():
                setattr(settings, setting, value)
            cells = []
            if "turns_v1" in sets:
                kinds = evaluate("turns_v1").summary(lambda row: [row["kind"]])
                for kind in KINDS[:3]:
                    m = kinds[kind]
                    cells.append(
                        f"{m['recall@3']:.3f} / {m['recall@5']:.3f} / {m['mrr@10']:.3f} / {m['facts_first']:.3f}"
                    )
                cells.append(f"{kinds['small-talk']['no_gold_distilled_first']:.3f}")
                m = kinds["all"]
                cells.append(
                    f"**{m['recall@3']:.3f} / {m['recall@5']:.3f} / {m['mrr@10']:.3f} / {m['facts_first']:.3f}**"
                )
            for name in others:
                m = evaluate(name).summary()["all"]
                cells.append(f"{m['recall@5']:.3f} / {m['recall@10']:.3f} / {m['mrr@10']:.3f}")
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
        progress(f"re-ranked {len(configs)} configurations in {time.perf_counter() - started:.1f} s")
        # What ranking for turns costs a recall: classifying the turn and applying the priors to its fused
        # list, with the settings as configured, against the whole recall's time measured above.
        for setting, value in defaults.items():
            setattr(settings, setting, value)
        costs = []
        for _queries, fused_lists, _types in sets.values():
            for fused, text, _kind, window in fused_lists:
                t0 = time.perf_counter()
                for _ in range(20):
                    turn_priors_apply(fused, text=text, kind=turn_classify(text=text), window=window)
                costs.append((time.perf_counter() - t0) / 20 * 1000)
        costs.sort()
        recall_ms.sort()
        print(
            f"\nranking for turns: mean {sum(costs) / len(costs):.3f} ms, p95 {costs[int(0.95 * len(costs))]:.3f} ms "
            f"per recall; the recalls themselves: median {recall_ms[len(recall_ms) // 2]:.0f} ms "
            f"({len(costs)} queries; {100 * sum(costs) / sum(recall_ms):.2f} % of their total time)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
