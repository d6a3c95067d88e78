"""What the REST API adds to a recall and an episode write: HTTP + authentication + serialisation.

One run, one stack (embedded Elasticsearch, temporary SQLite): the same recall and the same write,
first as the service call in-process, then through uvicorn in its own process (as in production)
with a bearer token and a keep-alive connection, as an agent's HTTP client holds one. The difference of the two p50s is the interface's
share. Target (issue 16): ≤ 10 ms p50.
Usage: python benchmarks/api_overhead.py [--memories 200] [--rounds 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from _stack import ROOT, atlas_stack, progress

QUESTIONS = ["where does the user live?", "what does the user eat?", "how do I reset the router?", "favourite music?"]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _ms(fn, i: int) -> float:
    t0 = time.perf_counter()
    fn(i)
    return (time.perf_counter() - t0) * 1000


def timed_pairs(direct, through, rounds: int) -> tuple[list[float], list[float]]:
    """Both paths alternately, round by round: a load change on the (shared, 2-core) machine hits both
    alike instead of whichever ran second."""
    for i in range(5):  # warm-up: connections, caches, model sessions
        direct(i)
        through(i)
    d, h = [], []
    for i in range(rounds):
        first, second = (direct, through) if i % 2 == 0 else (through, direct)
        a, b = _ms(first, i), _ms(second, i)
        d.append(a if first is direct else b)
        h.append(b if first is direct else a)
    return d, h


def serve() -> tuple[str, subprocess.Popen]:
    """uvicorn in its own process, as in production: the client's work does not share the server's GIL."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "atlas_site.asgi:application",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=os.environ.copy())
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return url, proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("uvicorn did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=200, help="facts stored for the subject before timing")
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    with atlas_stack():
        import requests

        from memory.recall import memory_recall
        from memory.services.writes import episode_write, fact_write
        from tenants import services, tokens

        tenant = services.tenant_create(slug="bench", name="Bench", actor="benchmark")
        subject = services.subject_create(tenant=tenant, external_id="alice", actor="benchmark")
        token = tokens.token_create(tenant=tenant, name="bench", scopes="read,write", actor="benchmark").secret
        progress(f"storing {args.memories} facts …")
        for n in range(args.memories):
            fact_write(
                subject=subject,
                text=f"The user mentioned topic {n % 37} and detail {n}",
                refresh=n == args.memories - 1,
            )
        url, server = serve()
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {token}"
        base = f"{url}/api/v1/subjects/alice"

        def recall_direct(i: int) -> None:
            memory_recall(subject=subject, query=QUESTIONS[i % len(QUESTIONS)], k=10)

        def recall_http(i: int) -> None:
            response = http.post(base + "/recall", json={"query": QUESTIONS[i % len(QUESTIONS)], "k": 10}, timeout=60)
            assert response.status_code == 200, response.text

        def write_direct(i: int) -> None:
            episode_write(subject=subject, text=f"direct turn {i} about the weather")

        def write_http(i: int) -> None:
            response = http.post(base + "/episodes", json={"text": f"http turn {i} about the weather"}, timeout=60)
            assert response.status_code == 201, response.text

        rows = []
        for name, direct, through in (
            ("recall (k=10)", recall_direct, recall_http),
            ("episode write", write_direct, write_http),
        ):
            progress(f"timing {name} …")
            d, h = timed_pairs(direct, through, args.rounds)
            rows.append((name, d, h))
        server.terminate()
        server.wait(timeout=30)
        print(
            f"\n{args.memories} facts, {args.rounds} rounds each (the two paths alternating), one run; load {os.getloadavg()[0]:.1f}"
        )
        print("| operation | in-process p50 ms | REST p50 ms | share p50 ms | in-process p95 ms | REST p95 ms |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, d, h in rows:
            share = statistics.median(h) - statistics.median(d)
            print(
                f"| {name} | {statistics.median(d):.1f} | {statistics.median(h):.1f} | {share:.1f} | "
                f"{percentile(d, 0.95):.1f} | {percentile(h, 0.95):.1f} |"
            )


if __name__ == "__main__":
    main()
