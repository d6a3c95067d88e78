"""Import throughput (documents/s) with the default models, and where an import's time goes.

One run, one stack (embedded Elasticsearch, temporary SQLite): the evaluation sets' documents (both
sets, repeated under new ids until ``--documents`` lines), imported through ``memories_import`` — what
``manage.py atlas_import`` runs — once per ``--workers`` value (ATLAS_EMBEDDING_WORKERS: 1 is the
sequential path, one model after the other), each into a tenant of its own. Every model's
``embed_documents`` and the bulk requests are timed, so the table shows each stage's share.
The models load (and a few texts warm them) before the clock starts. Target (issue 19): ≥ 100
documents/s at 2,600 documents.
Usage: python benchmarks/import_throughput.py [--documents 2600] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import defaultdict
from contextlib import contextmanager

from _stack import ROOT, atlas_stack, progress


def documents(count: int) -> list[str]:
    """``count`` import lines from both evaluation sets; repeats get new ids (and new subjects)."""
    base = []
    for name in ("atlas_v1", "hard_v1"):
        with (ROOT / "eval" / name / "documents.jsonl").open() as lines:
            base.extend(json.loads(line) for line in lines if line.strip())
    out = []
    for n in range(count):
        record = dict(base[n % len(base)])
        copy = n // len(base)
        if copy:
            record["id"] = f"{record['id']}~{copy}"
            if "user_id" in record:
                record["user_id"] = f"{record['user_id']}~{copy}"
            for key in ("supersedes", "source_episodes"):
                if key in record:
                    record[key] = [f"{i}~{copy}" for i in record[key]]
        out.append(json.dumps(record))
    return out


@contextmanager
def stage_timers():
    """Wraps each model's embed_documents and the bulk request with a wall-clock timer."""
    from memory.elastic import store
    from memory.services.prepare import embedding_fields

    spent: dict[str, float] = defaultdict(float)
    patched = []

    def timed(owner, attribute, label):
        original = getattr(owner, attribute)

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - started

        setattr(owner, attribute, wrapper)
        patched.append((owner, attribute, original))

    for field in embedding_fields():
        timed(field.provider, "embed_documents", f"embed {field.provider.model_id}")
    timed(store, "memories_bulk_index", "bulk index (refresh=wait_for)")
    try:
        yield spent
    finally:
        for owner, attribute, original in reversed(patched):
            if owner is store:
                setattr(owner, attribute, original)
            else:
                delattr(owner, attribute)  # the instance attribute hid the class's method


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=2600)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()

    with atlas_stack():
        from django.conf import settings

        from memory.portable.lines import memories_import
        from memory.services.prepare import embedding_fields
        from tenants.services import tenant_create

        for field in embedding_fields():
            field.provider.load()
            field.provider.embed_documents(["warm-up", "a second, longer warm-up text for the session"])
        lines = documents(args.documents)
        rows = []
        for workers in args.workers:
            settings.ATLAS_EMBEDDING_WORKERS = workers
            tenant = tenant_create(slug=f"import-w{workers}", name=f"import w{workers}", actor="benchmark")
            load_before = os.getloadavg()[0]
            with stage_timers() as spent:
                cpu_started = _cpu_seconds()
                started = time.perf_counter()
                report = memories_import(
                    tenant=tenant,
                    lines=lines,
                    create_subjects=True,
                    actor="benchmark",
                    progress=lambda done, _r, w=workers: progress(f"  workers={w}: {done}/{len(lines)} lines"),
                )
                elapsed = time.perf_counter() - started
                cpu = _cpu_seconds() - cpu_started
            written = sum(report.written.values())
            if report.errors:
                progress(f"  {len(report.errors)} error(s), first: {report.errors[0]}")
            rows.append((workers, written, elapsed, dict(spent), load_before, os.getloadavg()[0], cpu))

    print(f"\nimport of {args.documents} documents, cpu_count={os.cpu_count()}")
    print(
        "| ATLAS_EMBEDDING_WORKERS | written | seconds | documents/s | CPU ms/document (this process) "
        "| cores used | load avg before → after |"
    )
    print("|---:|---:|---:|---:|---:|---:|---|")
    for workers, written, elapsed, _spent, before, after, cpu in rows:
        print(
            f"| {workers} | {written} | {elapsed:.1f} | {written / elapsed:.1f} | {cpu / written * 1000:.0f} "
            f"| {cpu / elapsed:.2f} | {before:.2f} → {after:.2f} |"
        )
    print("\nwall-clock per stage (s; with workers > 1 the models' stages overlap)")
    labels = sorted({label for row in rows for label in row[3]})
    print("| stage | " + " | ".join(f"workers={row[0]}" for row in rows) + " |")
    print("|---|" + "---:|" * len(rows))
    for label in labels:
        print(f"| {label} | " + " | ".join(f"{row[3].get(label, 0.0):.1f}" for row in rows) + " |")
    if len(rows) > 1:
        print(f"\nspeed-up workers={rows[-1][0]} over workers={rows[0][0]}: {rows[0][2] / rows[-1][2]:.2f}×")


if __name__ == "__main__":
    main()
