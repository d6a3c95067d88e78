"""What evidence folding and explain cost a recall, on memories whose facts cite the turns they came from.

One run, one stack (embedded Elasticsearch, temporary SQLite), the default models. Each of 5 subjects
gets D conversation turns and D/3 facts, each fact citing 2-4 of the subject's turns (as consolidation
writes them), plus a 50-entry catalog. The same questions (fresh text each, so no embedding cache hits)
are then asked in rotation five ways: without the relevance floor and without folding (the strictest
"before": issue 34 added the floor and lifting to a recall that already folded), folding off, folding on
(the default), folding on with explain, and with explain and expect (3 ids); the table shows each way's
p50/p95 and its p50 as a ratio to the first, all under the same load.
Target (issues 26 and 34): the default plan ≤ 10 % slower than before; explain is opt-in.
Usage: python benchmarks/recall_folding.py [--per-subject 300] [--queries 60]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
from datetime import UTC, datetime

from _stack import atlas_stack, progress

SUBJECTS = 5
WORDS = (
    "flight hotel visa train seat dinner vegetarian allergy coffee dog garden rent plumber knee running "
    "physio doctor invoice meeting budget router firmware wifi cable deadline bakery recipe spicy luggage"
).split()


def turn(rng: random.Random, n: int) -> str:
    a, b, c = rng.sample(WORDS, 3)
    return f"I was thinking about the {a} and the {b}, maybe with the {c} ({n})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-subject", type=int, default=300)
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    rng = random.Random(26)
    with atlas_stack():
        from memory.portable.lines import memories_import
        from memory.recall import memory_recall
        from memory.recall.options import RecallOptions
        from tenants.models import MemorySubject
        from tenants.services import tenant_create

        tenant = tenant_create(slug="folding", name="Folding", actor="benchmark")
        lines = []
        for s in range(SUBJECTS):
            turns = [f"s{s}-e{n}" for n in range(args.per_subject)]
            for n, turn_id in enumerate(turns):
                lines.append(
                    json.dumps(
                        {
                            "id": turn_id,
                            "user_id": f"subject-{s}",
                            "memory_type": "episodic",
                            "text": turn(rng, n),
                            "session_id": f"s{n // 20}",
                            "days_ago": rng.randint(0, 400),
                        }
                    )
                )
            for n in range(args.per_subject // 3):
                cited = rng.sample(turns, rng.randint(2, 4))
                lines.append(
                    json.dumps(
                        {
                            "id": f"s{s}-f{n}",
                            "user_id": f"subject-{s}",
                            "memory_type": "semantic",
                            "text": f"The user cares about the {' and the '.join(rng.sample(WORDS, 2))} ({n})",
                            "fact_type": "preference",
                            "source_episodes": cited,
                        }
                    )
                )
        for n in range(50):
            lines.append(
                json.dumps({"id": f"cat-{n}", "memory_type": "catalog", "title": f"Guide {n}", "text": turn(rng, n)})
            )
        progress(f"importing {len(lines)} documents …")
        report = memories_import(tenant=tenant, lines=lines, create_subjects=True, actor="benchmark")
        if report.errors:
            raise SystemExit(f"import errors: {report.errors[:3]}")
        subjects = list(MemorySubject.objects.filter(tenant=tenant))
        ways = {
            "no floor, no folding (before)": dict(fold_evidence=False, options=RecallOptions(floor=False)),
            "folding off": dict(fold_evidence=False),
            "folding on (default)": dict(fold_evidence=True),
            "folding + explain": dict(fold_evidence=True, explain=True),
            "folding + explain + expect": dict(fold_evidence=True, explain=True, expect=["s0-e1", "s0-f1", "nope"]),
        }
        took: dict[str, list[float]] = {name: [] for name in ways}
        stages: dict[str, list[float]] = {}  # the default way's stages (RecallResult.timings_ms)
        folded = 0
        load_before = os.getloadavg()[0]
        for n in range(args.queries + 5):
            subject = rng.choice(subjects)
            for name, extra in ways.items():
                query = f"{' '.join(rng.sample(WORDS, 3))} {n} {name[:3]}"  # fresh text: no cache hits
                result = memory_recall(subject=subject, query=query, k=10, **extra)
                if n >= 5:  # warm-up
                    took[name].append(result.timings_ms["total"])
                    if name == "folding on (default)":
                        for stage_name, ms in result.timings_ms.items():
                            stages.setdefault(stage_name, []).append(ms)
                    folded += sum(1 for hit in result.hits if hit.get("evidence"))
            if n % 20 == 0:
                progress(f"  {n}/{args.queries + 5} rounds")
        load_after = os.getloadavg()[0]

    base = statistics.median(took["no floor, no folding (before)"])
    today = datetime.now(UTC).date().isoformat()
    print(f"\n{today}: recall, k=10, {SUBJECTS} subjects × {args.per_subject} turns and {args.per_subject // 3} facts")
    print(f"citing 2-4 turns each; {args.queries} questions per row; load avg {load_before:.2f} → {load_after:.2f};")
    print(f"{folded} hits carried evidence")
    print("| recall | p50 ms | p95 ms | p50 vs before |")
    print("|---|---:|---:|---:|")
    for name, values in took.items():
        p50 = statistics.median(values)
        p95 = sorted(values)[int(0.95 * (len(values) - 1))]
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {p50 / base:.2f}× |")
    print("\nThe default's stages (p50 ms): " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in stages.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
