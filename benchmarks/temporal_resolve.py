"""What resolving the dates of a text costs (memory.temporal): mentions_resolve per turn, question_range per
question, and the package's import (CPU time).

Pure Python, one process, no stack. The texts: 300-character turns made of eval/conversations_v1 turns (three
or four joined, cut at 300 characters, each resolved against its first turn's timestamp), one dense
300-character turn naming six dates, one without any, the 126 phrasings of tests/memory/temporal, and the
123 temporal questions of eval/conversations_v1. Each set is run in rotation, one call timed at a time
(wall clock, after a warm-up); "CPU µs" is process time per call over the whole set, which a shared
machine's load inflates less than the wall clock.
Target (issue 34): a 300-character turn in < 0.2 ms median.
Usage: python benchmarks/temporal_resolve.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory.temporal import mentions_resolve, question_range  # noqa: E402
from tests.memory.temporal.test_mentions import ANCHOR, PHRASINGS  # noqa: E402

CONVERSATIONS = ROOT / "eval" / "conversations_v1"
DENSE = (
    "Jonah: I bought an old Ford Transit last weekend, going to turn it into a camper, and we will drive it to "
    "the coast on Friday. Amara signed up for the Leeds Half a couple of weeks ago, it's in May so no backing "
    "out now; the race is on the 14th and then we fly home 3 June 2026."
)
PLAIN = (
    "I was thinking about the router and the firmware update, maybe we should reset the cable modem and try "
    "the other password again because the wifi keeps dropping when everyone is streaming video and the kids "
    "are gaming upstairs, which is annoying for everybody in the house really, so what should we try first?"
)


def _timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def turns_joined(rng: random.Random, count: int) -> list[tuple[str, datetime]]:
    turns = [json.loads(line) for line in (CONVERSATIONS / "documents.jsonl").open()]
    joined = []
    for _ in range(count):
        parts = [rng.choice(turns)]
        while sum(len(part["text"]) + 1 for part in parts) < 300:
            parts.append(rng.choice(turns))
        text = " ".join(part["text"] for part in parts)[:300]
        joined.append((text, _timestamp(parts[0]["timestamp"])))
    return joined


def questions_temporal() -> list[tuple[str, datetime]]:
    turns = {json.loads(line)["id"]: json.loads(line) for line in (CONVERSATIONS / "documents.jsonl").open()}
    asked = []
    for line in (CONVERSATIONS / "queries.jsonl").open():
        query = json.loads(line)
        if query["kind"] == "temporal":
            # Asked at the moment of the turn that answers it: the question's dates read as its own did.
            asked.append((query["query"], _timestamp(turns[query["gold_ids"][0]]["timestamp"])))
    return asked


def timed(call, items: list[tuple[str, datetime]], rounds: int) -> tuple[list[float], float]:
    for text, moment in items[:50]:  # warm-up
        call(text, moment)
    samples = []
    cpu_start = time.process_time()
    for _ in range(rounds):
        for text, moment in items:
            start = time.perf_counter_ns()
            call(text, moment)
            samples.append((time.perf_counter_ns() - start) / 1000)
    cpu_us = (time.process_time() - cpu_start) / len(samples) * 1e6
    return samples, cpu_us


def import_ms() -> float:
    """The CPU time of importing memory.temporal in a fresh interpreter: its modules, its regexes compiled,
    and the standard-library modules it is the first to load (median of 5)."""
    code = "import time; s = time.process_time(); import memory.temporal; print(time.process_time() - s)"
    runs = []
    for _ in range(5):
        done = subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True, text=True)
        runs.append(float(done.stdout) * 1000)
    return statistics.median(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(34)

    def resolve(text: str, moment: datetime) -> object:
        return mentions_resolve(text, anchor=moment)

    def ask(text: str, moment: datetime) -> object:
        return question_range(text, now=moment)

    joined = turns_joined(rng, 1000)
    dated = sum(bool(resolve(text, moment)) for text, moment in joined) / len(joined)
    sets = [
        (f"300-char turns of conversations_v1 ({dated:.0%} name a date)", resolve, joined),
        ("300-char turn naming 6 dates", resolve, [(DENSE, ANCHOR)] * 200),
        ("300-char turn without a date", resolve, [(PLAIN, ANCHOR)] * 200),
        (f"the {len(PHRASINGS)} test phrasings", resolve, [(row[0], ANCHOR) for row in PHRASINGS]),
        ("question_range, 123 temporal questions", ask, questions_temporal()),
    ]
    load = os.getloadavg()[0]
    print(f"load average {load:.2f}, Python {sys.version.split()[0]}, {args.rounds} rounds\n")
    print("| texts | calls/s | median µs | p99 µs | CPU µs per call |")
    print("|---|---:|---:|---:|---:|")
    for label, call, items in sets:
        samples, cpu_us = timed(call, items, args.rounds)
        ordered = sorted(samples)
        p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
        per_second = 1e6 / statistics.fmean(samples)
        print(f"| {label} | {per_second:,.0f} | {statistics.median(samples):.1f} | {p99:.1f} | {cpu_us:.1f} |")
    print(f"\nimport memory.temporal: {import_ms():.1f} ms CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
