"""Recall quality ablation on our evaluation sets, every configuration measured in one run.

Imports each set under eval/ into its own tenant on a fresh embedded stack, then evaluates each
lever combination. Usage: python benchmarks/recall_quality.py [--sets atlas_v1 ...]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from _stack import ROOT, atlas_stack, progress

OFF = {"decay": False, "use_boost": False, "catalog_prior": False, "outcome": False}
ONE_MODEL = {"multilingual": False}
CONFIGS = [
    # (label, RecallOptions overrides, dense RRF weight, multilingual RRF weight)
    ("BM25 only", {"dense": False, **ONE_MODEL, **OFF}, 1.0, 0.0),
    ("dense only (MiniLM)", {"bm25": False, **ONE_MODEL, **OFF}, 1.0, 0.0),
    ("dense only (multilingual-e5)", {"bm25": False, "dense": False, **OFF}, 1.0, 1.0),
    ("hybrid (RRF, equal weights)", {**ONE_MODEL, **OFF}, 1.0, 0.0),
    ("hybrid (RRF, dense ×2)", {**ONE_MODEL, **OFF}, 2.0, 0.0),
    ("hybrid (RRF, dense ×3)", {**ONE_MODEL, **OFF}, 3.0, 0.0),
    ("hybrid + decay, boosts, priors (equal weights)", ONE_MODEL, 1.0, 0.0),
    ("hybrid + decay, boosts, priors, dense ×2 (one model)", ONE_MODEL, 2.0, 0.0),
    ("hybrid + decay, boosts, priors, dense ×3 (one model)", ONE_MODEL, 3.0, 0.0),
    ("+ multilingual leg ×1", {}, 2.0, 1.0),
    ("**+ multilingual leg ×2 (default)**", {}, 2.0, 2.0),
    ("+ multilingual leg ×3", {}, 2.0, 3.0),
    ("+ multilingual leg ×2, dense ×3", {}, 3.0, 2.0),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", nargs="*", default=sorted(p.name for p in (ROOT / "eval").iterdir() if p.is_dir()))
    parser.add_argument("--configs", nargs="*", type=int, help="indexes into the configuration list (default: all)")
    parser.add_argument(
        "--contextual",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="import with contextual episode embeddings (the default; --no-contextual without)",
    )
    args = parser.parse_args()
    with atlas_stack():
        from django.conf import settings

        settings.ATLAS_CONTEXTUAL_EPISODES = args.contextual
        from memory.evaluation import eval_queries_parse, recall_evaluate
        from memory.selectors import RecallOptions
        from memory.services.importing import memories_import
        from tenants.services import tenant_create

        tenants = {}
        for name in args.sets:
            progress(f"importing {name} …")
            tenant = tenant_create(slug=name.replace("_", "-"), name=name, actor="benchmark")
            with (ROOT / "eval" / name / "documents.jsonl").open() as lines:
                report = memories_import(tenant=tenant, lines=lines, create_subjects=True, actor="benchmark")
            if report.errors:
                raise SystemExit(f"{name}: import errors {report.errors[:3]}")
            tenants[name] = (
                tenant,
                eval_queries_parse((ROOT / "eval" / name / "queries.jsonl").read_text().splitlines()),
            )
        rows = []
        chosen = [CONFIGS[i] for i in args.configs] if args.configs else CONFIGS
        for label, overrides, dense_weight, multilingual_weight in chosen:
            label = label if args.contextual else f"{label}, turns embedded without context"
            settings.ATLAS_RRF_WEIGHT_DENSE = dense_weight
            settings.ATLAS_RRF_WEIGHT_MULTILINGUAL = multilingual_weight
            cells = []
            for name, (tenant, queries) in tenants.items():
                progress(f"{label} on {name} …")
                result = recall_evaluate(
                    tenant=tenant,
                    queries=queries,
                    k=10,
                    options=replace(RecallOptions(rerank=False), **overrides),
                    check_leaks=False,
                )
                m = result.summary()["all"]
                cells.append(f"{m['recall@5']:.3f} | {m['recall@10']:.3f} | {m['mrr@10']:.3f}")
            rows.append((label, cells))
    header = " | ".join(f"{n} R@5 | {n} R@10 | {n} MRR@10" for n in tenants)
    print(f"| configuration | {header} |")
    print("|---|" + "---:|" * (3 * len(tenants)))
    for label, cells in rows:
        print(f"| {label} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
