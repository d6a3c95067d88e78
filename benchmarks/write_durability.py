"""What the write journal costs: the same writes through two embedded_es servers, before and after it.

"Before" is the gateway at ``--baseline`` (a git revision, default ``main``; its tree is exported to a
temporary directory with ``git archive``), "after" is this checkout. Both run side by side on the same
machine with the same Python; each round sends the same requests to one and then the other, the order
alternating every round, so a shared, loaded machine weighs on both alike. Requests, each with a writer
API key (as the service writes): a single document with a 384-dimension vector (``refresh=false``,
what ``episode_write`` does minus the wait), a 20-document bulk, and a scripted update of one counter.

With ``--concurrent-rounds N``, then N rounds of 4 writers at once per server (bulk-heavy), timed by wall
clock: what serialising writes through the journal costs under concurrency.

Target (issue 25): p50 at most 10 % slower. Usage:
    python benchmarks/write_durability.py [--rounds 100] [--baseline main] [--concurrent-rounds 0]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from functools import partial
from io import BytesIO
from pathlib import Path

from elasticsearch import Elasticsearch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from embedded_es.server import READY_LINE  # noqa: E402

DIMS = 384
PASSWORD = "bench-write-durability"  # noqa: S105 (a throwaway server)
WRITER = {"writer": {"indices": [{"names": ["bench-*"], "privileges": ["write", "create_index"]}]}}
INCREMENT = {"source": "ctx._source.n += params.by", "lang": "painless", "params": {"by": 1}}


class Server:
    """``python -m embedded_es serve`` from the tree ``root`` on a free port, in a temporary data dir."""

    def __init__(self, root: Path, **env: str) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="bench-durability-")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "embedded_es", "serve", "--port", "0", "--data-dir", self.tmp.name + "/es"],
            cwd=root,
            env={**os.environ, "ATLAS_ES_PASSWORD": PASSWORD, "PYTHONPATH": str(root), **env},
            stdout=subprocess.PIPE,
            text=True,
        )
        match = READY_LINE.match(self.proc.stdout.readline().strip())
        if not match:
            raise RuntimeError(f"embedded_es from {root} did not start")
        self.url = match.group(1)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.proc.stdout.close()
        self.tmp.cleanup()


def baseline_tree(revision: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", revision, "embedded_es"], cwd=ROOT, check=True, capture_output=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


OPS = ("index (1 doc, 384-d vector)", "bulk (20 docs)", "update (script)")


def timings_sides(timings: dict[tuple[str, str], list[float]]) -> list[str]:
    return list(dict.fromkeys(side for side, _op in timings))


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


WRITERS = 4
BURST = 40


def concurrent_rounds(sides: dict, writers: dict, rounds: int) -> dict[str, list[float]]:
    """Wall time of WRITERS threads writing at once to one server, the servers taking turns (rotating)."""
    walls: dict[str, list[float]] = {side: [] for side in sides} if rounds else {}

    def burst(client: Elasticsearch, tag: str) -> None:
        for r in range(BURST):
            doc = {"text": f"{tag} {r} about the printer", "embedding": [0.01 * (r % 97 + 1)] * DIMS}
            client.bulk(
                operations=[
                    line
                    for i in range(20)
                    for line in ({"index": {"_index": "bench-c", "_id": f"{tag}-{r}-{i}"}}, {**doc, "i": i})
                ]
            )
            client.index(index="bench-c", id=f"{tag}-{r}", document=doc)

    for rnd in range(rounds):
        names = list(sides)
        for side in names[rnd % len(names) :] + names[: rnd % len(names)]:
            threads = [threading.Thread(target=burst, args=(writers[side], f"c{rnd}-w{k}")) for k in range(WRITERS)]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            walls[side].append(time.perf_counter() - start)
        print(f"concurrent round {rnd + 1}/{rounds}", file=sys.stderr, flush=True)
    return walls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--baseline", default="main", help="git revision of the gateway without the journal")
    parser.add_argument(
        "--concurrent-rounds", type=int, default=0, help="then rounds of WRITERS threads writing at once (wall time)"
    )
    args = parser.parse_args()
    rng = random.Random(25)
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tree:
        sides = {
            "before": Server(baseline_tree(args.baseline, Path(tree))),
            "after": Server(ROOT, EMBEDDED_ES_JOURNAL_SYNC="interval"),
            "after, fsync per request": Server(ROOT, EMBEDDED_ES_JOURNAL_SYNC="request"),
        }
        try:
            writers = {}
            for name, server in sides.items():
                admin = Elasticsearch(server.url, basic_auth=("elastic", PASSWORD))
                key = admin.security.create_api_key(name="writer", role_descriptors=WRITER)["encoded"]
                writers[name] = Elasticsearch(server.url, api_key=key)
                writers[name].index(index="bench-w", id="counter", document={"n": 0})
            timings: dict[tuple[str, str], list[float]] = {}

            def timed(side: str, op: str, call) -> None:
                start = time.perf_counter()
                call()
                timings.setdefault((side, op), []).append((time.perf_counter() - start) * 1000)

            for r in range(args.rounds):
                vector = [rng.uniform(-1, 1) for _ in range(DIMS)]
                doc = {"text": f"turn {r} about the printer and the dentist", "embedding": vector}
                bulk = [
                    line
                    for i in range(20)
                    for line in ({"index": {"_index": "bench-w", "_id": f"b{r}-{i}"}}, {**doc, "i": i})
                ]
                order = list(sides)[r % len(sides) :] + list(sides)[: r % len(sides)]  # each side leads in turn
                for side in order:
                    w = writers[side]
                    timed(side, OPS[0], partial(w.index, index="bench-w", id=f"d{r}", document=doc))
                    timed(side, OPS[1], partial(w.bulk, operations=bulk))
                    timed(side, OPS[2], partial(w.update, index="bench-w", id="counter", script=INCREMENT))
                if r % 20 == 0:
                    print(f"round {r}/{args.rounds}", file=sys.stderr, flush=True)
            walls = concurrent_rounds(sides, writers, args.concurrent_rounds)
        finally:
            for server in sides.values():
                server.stop()
    others = [s for s in timings_sides(timings) if s != "before"]
    head = " | ".join(f"{s} p50 ms | ratio" for s in others)
    print(f"| request | before p50 ms | {head} | before p95 ms | " + " | ".join(f"{s} p95 ms" for s in others) + " |")
    print("|---|---:|" + "---:|---:|" * len(others) + "---:|" + "---:|" * len(others))
    for op in OPS:
        b = timings[("before", op)]
        cells = [f"{statistics.median(b):.2f}"]
        for side in others:
            a = timings[(side, op)]
            cells += [f"{statistics.median(a):.2f}", f"{statistics.median(a) / statistics.median(b):.2f}"]
        cells.append(f"{percentile(b, 0.95):.2f}")
        cells += [f"{percentile(timings[(side, op)], 0.95):.2f}" for side in others]
        print(f"| {op} | " + " | ".join(cells) + " |")
    if walls:
        print(
            f"\n{WRITERS} writers at once, each {BURST} × (20-document bulk + one document), {len(walls['before'])} rounds:"
        )
        print("| server | median wall s | median of the per-round ratio to before |")
        print("|---|---:|---:|")
        for side, wall in walls.items():
            ratios = [w / b for w, b in zip(wall, walls["before"], strict=True)]
            print(f"| {side} | {statistics.median(wall):.2f} | {statistics.median(ratios):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
