"""Recall quality ablation on our evaluation sets, every configuration measured in one run.

Imports each set under eval/ into its own tenant on a fresh embedded stack, then evaluates each
lever combination. Usage: python benchmarks/recall_quality.py [--sets atlas_v1 ...]
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

from _stack import ROOT, atlas_stack, progress

OFF = {"decay": False, "use_boost": False, "catalog_prior": False, "outcome": False}
ONE_MODEL = {"multilingual": False}
# The levers this table adds one by one, all off: rank fusion, no language awareness, no inheritance.
RRF = {
    "ATLAS_FUSION": "rrf",
    "ATLAS_LANGUAGE_AWARE_FUSION": False,
    "ATLAS_REPLY_INHERITANCE": 0.0,
    "ATLAS_RRF_WEIGHT_DENSE": 2.0,
}
ZSCORE = {**RRF, "ATLAS_FUSION": "zscore"}
LANGUAGE_AWARE = {**ZSCORE, "ATLAS_LANGUAGE_AWARE_FUSION": True}
CONFIGS = [
    # (label, RecallOptions overrides, settings overrides); unnamed settings keep their defaults
    ("BM25 only", {"dense": False, **ONE_MODEL, **OFF}, RRF),
    ("dense only (MiniLM)", {"bm25": False, **ONE_MODEL, **OFF}, RRF),
    ("dense only (multilingual-e5)", {"bm25": False, "dense": False, **OFF}, RRF),
    ("hybrid (RRF, equal weights)", {**ONE_MODEL, **OFF}, {**RRF, "ATLAS_RRF_WEIGHT_DENSE": 1.0}),
    ("hybrid (RRF, dense ×2)", {**ONE_MODEL, **OFF}, RRF),
    ("hybrid + decay, boosts, priors (RRF, dense ×2)", ONE_MODEL, RRF),
    ("+ multilingual leg ×2 (RRF; the previous default)", {}, {**RRF, "ATLAS_RRF_WEIGHT_MULTILINGUAL": 2.0}),
    ("+ multilingual leg ×3 (RRF)", {}, {**RRF, "ATLAS_RRF_WEIGHT_MULTILINGUAL": 3.0}),
    ("score fusion instead of RRF (z; BM25 0.5, dense 2, multilingual 2)", {}, ZSCORE),
    ("score fusion, BM25 1", {}, {**ZSCORE, "ATLAS_ZSCORE_WEIGHT_BM25": 1.0}),
    ("score fusion, multilingual 3", {}, {**ZSCORE, "ATLAS_ZSCORE_WEIGHT_MULTILINGUAL": 3.0}),
    ("+ language-aware fusion", {}, LANGUAGE_AWARE),
    ("**+ reply inheritance 0.5 (default)**", {}, {}),
    ("+ reply inheritance 1.0", {}, {"ATLAS_REPLY_INHERITANCE": 1.0}),
    ("default + near-duplicate spreading (Jaccard 0.6)", {}, {"ATLAS_DEDUP_JACCARD": 0.6}),
    ("default, dense leg by plain similarity (no decay or priors in it)", {}, {"ATLAS_DENSE_PLAIN_SIMILARITY": True}),
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
    parser.add_argument(
        "--by-kind", action="store_true", help="also print each configuration's scores per query kind (failure class)"
    )
    parser.add_argument(
        "--embedding-model",
        default="",
        help="the local model of the dense leg (ATLAS_EMBEDDING_MODEL; default: the settings' default)",
    )
    args = parser.parse_args()
    if args.embedding_model:
        from memory.embeddings import LOCAL_MODELS

        os.environ["ATLAS_EMBEDDING_MODEL"] = args.embedding_model
        os.environ["ATLAS_EMBEDDING_DIMS"] = str(LOCAL_MODELS[args.embedding_model].dims)
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
        rows, by_kind = [], []
        chosen = [CONFIGS[i] for i in args.configs] if args.configs else CONFIGS
        defaults = {setting: getattr(settings, setting) for _, _, changes in CONFIGS for setting in changes}
        for label, overrides, changes in chosen:
            label = label if args.contextual else f"{label}, turns embedded without context"
            if args.embedding_model:
                label = label.replace("(MiniLM)", f"({args.embedding_model})")
                label = label if args.embedding_model in label else f"{label}, dense leg {args.embedding_model}"
            for setting, value in {**defaults, **changes}.items():
                setattr(settings, setting, value)
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
                kinds = result.summary(lambda row: [row["kind"]] if row["kind"] else [])
                by_kind += [(label, name, kind, kinds[kind]) for kind in sorted(kinds) if kind != "all"]
            rows.append((label, cells))
    header = " | ".join(f"{n} R@5 | {n} R@10 | {n} MRR@10" for n in tenants)
    print(f"| configuration | {header} |")
    print("|---|" + "---:|" * (3 * len(tenants)))
    for label, cells in rows:
        print(f"| {label} | {' | '.join(cells)} |")
    if args.by_kind:
        print("\n| configuration | set | kind | queries | R@5 | R@10 | MRR@10 |\n|---|---|---|---:|---:|---:|---:|")
        for label, name, kind, m in by_kind:
            print(
                f"| {label} | {name} | {kind} | {m['queries']} | {m['recall@5']:.3f} | {m['recall@10']:.3f} "
                f"| {m['mrr@10']:.3f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
