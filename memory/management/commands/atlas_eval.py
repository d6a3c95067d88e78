"""atlas_eval --tenant SLUG --queries FILE.jsonl — recall@1/5/10, MRR@10 per memory type, and leaks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import CommandError

from memory.evaluation import CUTOFFS, eval_queries_parse, recall_evaluate
from memory.recall import RecallOptions
from tenants.management.base import AtlasCommand
from tenants.selectors import tenant_get


class Command(AtlasCommand):
    help = "Evaluate recall on a queries file; every query is also run as another subject to count leaks."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--queries", required=True, type=Path)
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument("--json", type=Path, help="write the full report (per query) to this file")
        parser.add_argument("--no-bm25", action="store_true")
        parser.add_argument("--no-dense", action="store_true", help="switch off the main embedding's kNN leg")
        parser.add_argument(
            "--no-multilingual", action="store_true", help="switch off the multilingual embedding's kNN leg"
        )
        parser.add_argument(
            "--no-crosslingual", action="store_true", help="switch off the cross-lingual embedding's kNN leg"
        )
        parser.add_argument("--no-rerank", action="store_true")
        parser.add_argument(
            "--no-decay", action="store_true", help="also switches off use boost, catalog prior, outcome"
        )
        parser.add_argument(
            "--by-kind", action="store_true", help="group by the queries' `kind` instead of memory type"
        )
        parser.add_argument("--quiet", action="store_true")

    def handle(self, *args, tenant: str, queries: Path, k: int, **options) -> None:
        if not queries.is_file():
            raise CommandError(f"no such file: {queries}")
        owner = tenant_get(slug=tenant)
        parsed = eval_queries_parse(queries.read_text(encoding="utf-8").splitlines())
        no_ranking = options["no_decay"]
        recall_options = RecallOptions(
            bm25=not options["no_bm25"],
            dense=not options["no_dense"],
            multilingual=not options["no_multilingual"],
            crosslingual=not options["no_crosslingual"],
            rerank=False if options["no_rerank"] else None,
            decay=not no_ranking,
            use_boost=not no_ranking,
            catalog_prior=not no_ranking,
            outcome=not no_ranking,
        )

        def progress(done: int, total: int) -> None:
            if not options["quiet"]:
                print(f"\revaluated {done}/{total} queries", end="", file=sys.stderr, flush=True)

        report = recall_evaluate(tenant=owner, queries=parsed, k=k, options=recall_options, progress=progress)
        if not options["quiet"]:
            print(file=sys.stderr)
        group = (lambda row: [row["kind"] or "unlabelled"]) if options["by_kind"] else None
        summary = report.summary(group)
        header = "| group | queries | " + " | ".join(f"R@{n}" for n in CUTOFFS) + " | MRR@10 |"
        self.stdout.write(header)
        self.stdout.write("|---|---:|" + "---:|" * (len(CUTOFFS) + 1))
        for name in ["all", *sorted(n for n in summary if n != "all")]:
            m = summary[name]
            cells = " | ".join(f"{m[f'recall@{n}']:.3f}" for n in CUTOFFS)
            self.stdout.write(f"| {name} | {m['queries']} | {cells} | {m['mrr@10']:.3f} |")
        self.stdout.write(f"leaks: {len(report.leaks)}")
        if options["json"]:
            options["json"].write_text(
                json.dumps({"summary": summary, "leaks": report.leaks, "queries": report.per_query}, indent=2)
            )
