"""Recall on eval/conversations_v1 as any checkout's own code computes it (issue 26 point 6).

Run it from the checkout to measure, with any venv that has the dependencies:
    cd /work/wt/regress-old && /work/wt/regress/.venv/bin/python /work/wt/regress/benchmarks/conversations_regression.py
The current directory's benchmarks/_stack.py, memory.* and atlas_site settings are used (it goes first on
sys.path), the data set is read from this script's own checkout (--set names another eval/ directory).
Prints any@10 (at least one gold turn in the top 10), R@5, R@10 (all gold turns) and MRR@10 per kind,
for the defaults and for each ``--config NAME=SETTING=VALUE[,SETTING=VALUE]`` (settings changed after
the import: recall-time levers only). ``--import-setting SETTING=VALUE`` changes a setting for the import.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

DATA_ROOT = Path(__file__).resolve().parent.parent / "eval"


def _value(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _settings(spec: str) -> dict[str, object]:
    return {k: _value(v) for k, v in (item.split("=", 1) for item in spec.split(",") if item)}


def scores(per_query: list[dict], gold: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in per_query:
        groups["all"].append(row)
        groups[row["kind"]].append(row)
    out = {}
    for name, rows in groups.items():
        any10 = sum(r["recall@10"] > 0 for r in rows) / len(rows)  # at least one gold memory in the top 10
        out[name] = {
            "n": len(rows),
            "any@10": any10,
            "R@5": sum(r["recall@5"] for r in rows) / len(rows),
            "R@10": sum(r["recall@10"] for r in rows) / len(rows),
            "MRR@10": sum(r["rr"] for r in rows) / len(rows),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="conversations_v1")
    parser.add_argument("--config", action="append", default=[], help="NAME=SETTING=VALUE[,SETTING=VALUE]")
    parser.add_argument("--import-setting", action="append", default=[], help="SETTING=VALUE for the import")
    parser.add_argument("--no-default", action="store_true", help="only the --config rows")
    parser.add_argument("--leaks", action="store_true", help="also run every query as another subject (as the gate)")
    parser.add_argument(
        "--evidence-counts", action="store_true", help="a gold turn folded under a returned fact counts (temporal_v1)"
    )
    parser.add_argument("--json", help="write every configuration's per-query rows here")
    parser.add_argument("--label", default=os.path.basename(os.getcwd()))
    args = parser.parse_args()
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))
    sys.path.insert(0, str(Path.cwd()))
    # The venv's editable install maps memory.* to its own checkout for any module the current one lacks
    # (an older checkout has no memory/migrations): only the current directory's code may load.
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
    sys.path[:] = [p for p in sys.path if not p.startswith("__editable__")]
    from _stack import atlas_stack

    with atlas_stack():
        from django.conf import settings

        import memory
        from memory.evaluation import eval_queries_parse, recall_evaluate
        from memory.portable.lines import memories_import
        from tenants.services import tenant_create

        print(f"# code: {memory.__file__}  data: {DATA_ROOT / args.set}", file=sys.stderr, flush=True)
        for item in args.import_setting:
            key, value = item.split("=", 1)
            setattr(settings, key, _value(value))
        started = time.monotonic()
        cpu0 = time.process_time()
        tenant = tenant_create(slug="conv-eval", name="conversations", actor="benchmark")
        with (DATA_ROOT / args.set / "documents.jsonl").open() as lines:
            report = memories_import(tenant=tenant, lines=lines, create_subjects=True, actor="benchmark")
        if report.errors:
            raise SystemExit(f"import errors {report.errors[:3]}")
        imported = time.monotonic() - started
        print(
            f"# import: {imported:.0f} s wall, {time.process_time() - cpu0:.0f} s CPU, load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
            flush=True,
        )
        lines_ = (DATA_ROOT / args.set / "queries.jsonl").read_text().splitlines()
        queries = eval_queries_parse(lines_)
        gold = {q.qid: q.gold_ids for q in queries}
        configs = ([] if args.no_default else [("default", {})]) + [
            (c.split("=", 1)[0], _settings(c.split("=", 1)[1])) for c in args.config
        ]
        defaults = {k: getattr(settings, k) for _, changes in configs for k in changes}
        dump = {}
        for label, changes in configs:
            for key, value in {**defaults, **changes}.items():
                setattr(settings, key, value)
            t0 = time.monotonic()
            result = recall_evaluate(
                tenant=tenant, queries=queries, k=10, check_leaks=args.leaks, evidence_counts=args.evidence_counts
            )
            elapsed = time.monotonic() - t0
            dump[label] = result.per_query
            s = scores(result.per_query, gold)
            print(
                f"## {args.label} [{label}] ({elapsed:.0f} s, load {os.getloadavg()[0]:.1f}, leaks {len(result.leaks)})",
                flush=True,
            )
            for kind in ["all"] + sorted(k for k in s if k != "all"):
                m = s[kind]
                print(
                    f"| {args.label} | {label} | {kind} | {m['n']} | {m['any@10']:.3f} | {m['R@5']:.3f} "
                    f"| {m['R@10']:.3f} | {m['MRR@10']:.3f} |",
                    flush=True,
                )
        if args.json:
            Path(args.json).write_text(json.dumps(dump))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
