"""Episode write latency (``episode_write`` with ``refresh=wait_for``) on the embedded stack, and its parts.

One run, one stack (embedded Elasticsearch, temporary SQLite), the default models: a subject's
conversation, each turn in a session (so its vector is a blend of the turn with and without the
turn before it, the costliest write), written once per ``--workers`` value (ATLAS_EMBEDDING_WORKERS;
1 = the models one after the other) in alternating rounds, so both see the same machine load.
Each write's parts: the previous-turn search, the embeddings, the index request (wait_for) — and the
engine requests the gateway makes for it. Target (issue 19): ≤ 40 ms p50.
Usage: python benchmarks/episode_write.py [--rounds 60] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from collections import defaultdict

from _stack import atlas_stack, progress

TURNS = [
    "My printer keeps jamming on the second page.",
    "Yes, the second one did it!",
    "Could you remind me what time the dentist appointment is on Thursday?",
    "We are thinking of moving to Lisbon next spring, the kids would start school there.",
    "No, I prefer the window seat.",
    "Mi hermana llega el viernes con su perro.",
]


def stack_cpu_seconds(root_pid: int) -> float:
    """CPU seconds of the embedded stack's processes (the gateway and its engine), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == root_pid or int(fields[1]) == root_pid:  # fields[1]: the parent pid
            total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def app_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()

    with atlas_stack() as es:
        from django.conf import settings

        from memory.elastic import store
        from memory.services import prepare, writes
        from memory.services.writes import episode_write
        from tenants import services

        tenant = services.tenant_create(slug="bench", name="Bench", actor="benchmark")
        subject = services.subject_create(tenant=tenant, external_id="alice", actor="benchmark")
        parts: dict[tuple[int, str], list[float]] = defaultdict(list)
        current = {"workers": 0}

        def timed(owner, attribute, label):
            original = getattr(owner, attribute)

            def wrapper(*a, **k):
                started = time.perf_counter()
                try:
                    return original(*a, **k)
                finally:
                    parts[(current["workers"], label)].append((time.perf_counter() - started) * 1000)

            setattr(owner, attribute, wrapper)

        timed(writes, "_previous_turn", "previous-turn search")
        timed(writes, "embed_into", "embeddings (3 models)")
        timed(store, "memory_index", "index request (wait_for)")
        assert prepare.embed_into  # the write path calls writes.embed_into, patched above

        for n in range(8):  # warm-up: models, sessions, connections
            settings.ATLAS_EMBEDDING_WORKERS = args.workers[n % len(args.workers)]
            episode_write(subject=subject, text=TURNS[n % len(TURNS)], session_id="warm-up")
        parts.clear()
        totals: dict[int, list[float]] = defaultdict(list)
        cpu: dict[tuple[int, str], float] = defaultdict(float)
        load_before = os.getloadavg()[0]
        for n in range(args.rounds):
            for workers in args.workers:
                settings.ATLAS_EMBEDDING_WORKERS = current["workers"] = workers
                app_before, stack_before = app_cpu_seconds(), stack_cpu_seconds(es._proc.pid)
                started = time.perf_counter()
                episode_write(subject=subject, text=TURNS[n % len(TURNS)], session_id=f"s{n // 6}-w{workers}")
                totals[workers].append((time.perf_counter() - started) * 1000)
                cpu[(workers, "app")] += app_cpu_seconds() - app_before
                cpu[(workers, "stack")] += stack_cpu_seconds(es._proc.pid) - stack_before
            if (n + 1) % 10 == 0:
                progress(f"  {n + 1}/{args.rounds} rounds")
        load_after = os.getloadavg()[0]

    print(
        f"\nepisode_write, refresh=wait_for, {args.rounds} writes per row, load avg {load_before:.2f} → {load_after:.2f}"
    )
    print(
        "| ATLAS_EMBEDDING_WORKERS | p50 ms | p95 ms | mean ms | CPU ms/write, this process "
        "| CPU ms/write, gateway + engine |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for workers in args.workers:
        samples = totals[workers]
        print(
            f"| {workers} | {statistics.median(samples):.1f} | {percentile(samples, 0.95):.1f} "
            f"| {statistics.fmean(samples):.1f} | {cpu[(workers, 'app')] / len(samples) * 1000:.1f} "
            f"| {cpu[(workers, 'stack')] / len(samples) * 1000:.1f} |"
        )
    print("\nparts, p50 ms")
    labels = sorted({label for _w, label in parts})
    print("| part | " + " | ".join(f"workers={w}" for w in args.workers) + " |")
    print("|---|" + "---:|" * len(args.workers))
    for label in labels:
        cells = [statistics.median(parts[(w, label)]) if parts[(w, label)] else 0.0 for w in args.workers]
        print(f"| {label} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
