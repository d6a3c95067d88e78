"""Recall quality ablation on our evaluation sets, every configuration measured in one run.

Imports each set under eval/ into its own tenant on a fresh embedded stack, then evaluates each
lever combination (every set under eval/: atlas_v1, hard_v1, turns_v1, conversations_v1, …; turns_v1's
small-talk turns have no gold and count in no column). Usage: python benchmarks/recall_quality.py [--sets atlas_v1 ...]
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

from _stack import ROOT, atlas_stack, progress
from recall_turns import LEVERS

OFF = {"decay": False, "use_boost": False, "catalog_prior": False, "outcome": False}
TURN_RANKING_OFF = dict(LEVERS.values())  # every lever of ranking for turns off
CONFIGS = [
    # (label, RecallOptions overrides, settings overrides); unnamed settings keep their defaults.
    # "{model}" is the dense leg's model (ATLAS_EMBEDDING_MODEL or the default).
    ("BM25 only", {"dense": False, "multilingual": False, "crosslingual": False, **OFF}, {}),
    ("dense only ({model})", {"bm25": False, "multilingual": False, "crosslingual": False, **OFF}, {}),
    ("dense only (multilingual-e5)", {"bm25": False, "dense": False, "crosslingual": False, **OFF}, {}),
    (
        "dense only (USE-multilingual, judging every memory)",
        {"bm25": False, "dense": False, "multilingual": False, **OFF},
        {},
    ),
    ("**default** ({model})", {}, {}),
    ("default without the cross-lingual leg", {"crosslingual": False}, {}),
    ("default, cross-lingual leg ×1", {}, {"ATLAS_ZSCORE_WEIGHT_CROSSLINGUAL": 1.0}),
    ("default, cross-lingual leg ×4", {}, {"ATLAS_ZSCORE_WEIGHT_CROSSLINGUAL": 4.0}),
    ("default without the multilingual leg", {"multilingual": False}, {}),
    ("default without the dense leg", {"dense": False}, {}),
    ("default without the BM25 leg", {"bm25": False}, {}),
    (
        "default with the previous weights (dense 2, multilingual 2)",
        {},
        {"ATLAS_ZSCORE_WEIGHT_DENSE": 2.0, "ATLAS_ZSCORE_WEIGHT_MULTILINGUAL": 2.0},
    ),
    (
        "default with rank fusion instead (RRF; BM25 1, dense 3, multilingual 1, cross-lingual 2)",
        {},
        {"ATLAS_FUSION": "rrf", "ATLAS_RRF_WEIGHT_DENSE": 3.0, "ATLAS_RRF_WEIGHT_MULTILINGUAL": 1.0},
    ),
    ("default without language-aware fusion", {}, {"ATLAS_LANGUAGE_AWARE_FUSION": False}),
    ("default without reply inheritance", {}, {"ATLAS_REPLY_INHERITANCE": 0.0}),
    ("default, reply inheritance 0.75", {}, {"ATLAS_REPLY_INHERITANCE": 0.75}),
    ("default with decay and priors in the dense leg", {}, {"ATLAS_DENSE_PLAIN_SIMILARITY": False}),
    ("default without decay, boosts and priors", OFF, {}),
    ("default + near-duplicate spreading (Jaccard 0.6)", {}, {"ATLAS_DEDUP_JACCARD": 0.6}),
    # Ranking for turns (memory.recall.turn_priors; per lever: benchmarks/recall_turns.py --ablate).
    ("default without ranking for turns", {}, TURN_RANKING_OFF),
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
        from memory.inference.local_models import LOCAL_MODELS

        os.environ["ATLAS_EMBEDDING_MODEL"] = args.embedding_model
        os.environ["ATLAS_EMBEDDING_DIMS"] = str(LOCAL_MODELS[args.embedding_model].dims)
    with atlas_stack():
        from django.conf import settings

        settings.ATLAS_CONTEXTUAL_EPISODES = args.contextual
        from memory.evaluation import eval_queries_parse, recall_evaluate
        from memory.inference.local_models import DEFAULT_LOCAL_MODEL
        from memory.portable.lines import memories_import
        from memory.recall import RecallOptions
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
            label = label.format(model=settings.ATLAS_EMBEDDING_MODEL or DEFAULT_LOCAL_MODEL)
            label = label if args.contextual else f"{label}, turns embedded without context"
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
