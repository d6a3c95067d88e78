"""Fuzz the embedded gateway as a read-only DLS attacker; report 5xx answers, leaks and changes.

Starts its own embedded Elasticsearch, plants the adversarial suite's fixture (tests/embedded_es/
adversarial.py: adv-a behind adv-a-alias, adv-b, zz-private; hidden documents carry secret tokens), then
sends generated requests (tests/embedded_es/attack_requests.py, seeded) and mutations of them (flipped
bytes, truncation, duplicate keys, swapped methods, re-encoded paths, gzip) as the attacker keys.

    .venv/bin/python benchmarks/gateway_fuzz.py --requests 20000 --seconds 600 --seed 1

Prints a table (requests, answers by status class, 5xx, error-shape violations, leaks, changes) and exits
non-zero on any 5xx, leak or change. Changes are found by a superuser snapshot every ``--snapshot-every``
requests and at the end; the world is put back after each one so later requests start clean.
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
import time
from collections import Counter, deque
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.embedded_es.adversarial import AdvWorld, RawRequest, error_shape_problem, leaked  # noqa: E402
from tests.embedded_es.attack_requests import FAMILIES, RandomChooser, attack_request  # noqa: E402

METHODS = ["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"]


def mutate(rng: random.Random, request: RawRequest) -> RawRequest:
    """One random mutation of a generated request."""
    body = request.body or b""
    kind = rng.choice(["flip", "truncate", "duplicate", "method", "path", "gzip", "headers", "splice"])
    if kind == "flip" and body:
        data = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return replace(request, body=bytes(data))
    if kind == "truncate" and body:
        return replace(request, body=body[: rng.randrange(len(body))])
    if kind == "duplicate" and body.startswith(b"{"):
        return replace(request, body=b'{"query":{"match_all":{}},"size":1000,' + body[1:])
    if kind == "method":
        return replace(request, method=rng.choice(METHODS))
    if kind == "path":
        path, _, qs = request.path.partition("?")
        choice = rng.randrange(5)
        if choice == 0 and len(path) > 1:
            i = rng.randrange(1, len(path))
            path = path[:i] + f"%{ord(path[i]):02X}" + path[i + 1 :]
        elif choice == 1:
            path = path.upper()
        elif choice == 2:
            path = path.replace("/", "//", 1)
        elif choice == 3:
            path = path + "/"
        else:
            path = "/.." + path
        return replace(request, path=path + (f"?{qs}" if qs else ""))
    if kind == "gzip" and body:
        headers = tuple(h for h in request.headers if h[0].lower() != "content-encoding")
        return replace(request, headers=(*headers, ("Content-Encoding", "gzip")), body=gzip.compress(body))
    if kind == "headers":
        return replace(request, headers=tuple(h for h in request.headers if rng.random() < 0.5))
    if kind == "splice" and body:
        cut = rng.randrange(len(body))
        return replace(request, body=body[:cut] + body)
    return request


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--snapshot-every", type=int, default=500)
    parser.add_argument("--show", type=int, default=3, help="examples of each problem to print")
    args = parser.parse_args(argv)

    from embedded_es import EmbeddedElasticsearch

    rng = random.Random(args.seed)
    chooser = RandomChooser(rng)
    statuses: Counter[str] = Counter()
    families: Counter[str] = Counter()
    problems: dict[str, list[str]] = {"5xx": [], "shape": [], "leak": [], "change": [], "transport": [], "fatal": []}
    recent: deque[str] = deque(maxlen=5)
    with EmbeddedElasticsearch() as es:
        world = AdvWorld.start(es.url, "elastic", es.password)
        suspects: list[str] = []
        started = time.monotonic()
        sent = 0
        try:
            while sent < args.requests and time.monotonic() - started < args.seconds:
                principal = rng.choice(["attacker", "attacker", "narrow", "meta"])
                chooser.plain = rng.random() < 0.3
                request = attack_request(chooser, world.fixture.hidden_ids, list(FAMILIES))
                if not chooser.plain and rng.random() < 0.5:
                    request = mutate(rng, request)
                try:
                    response = world.client(principal).send(request)
                except OSError as exc:
                    problems["transport"].append(f"{request.describe()}: {exc}")
                    continue
                sent += 1
                recent.append(f"{request.describe()} -> {response.status}")
                families[request.family] += 1
                statuses[f"{response.status // 100}xx"] += 1
                if response.status >= 500:
                    problems["5xx"].append(f"{request.describe()} -> {response.body[:200]!r}")
                    if b"engine_unavailable_exception" in response.body:
                        # The engine behind the gateway is gone: the requests before this one killed it.
                        problems["fatal"].append("engine died; the last requests: " + " || ".join(recent))
                        break
                shape = error_shape_problem(request, response)
                if shape:
                    problems["shape"].append(f"{request.describe()} -> {response.status} {shape}")
                tokens = leaked(world.fixture, response)
                if tokens:
                    problems["leak"].append(f"{request.describe()} -> {response.status} {response.body[:200]!r}")
                if response.status < 300 and request.method not in ("GET", "HEAD"):
                    suspects.append(f"{request.describe()} -> {response.status}")
                if sent % args.snapshot_every == 0:
                    _check_changes(world, problems, suspects)
                    elapsed = time.monotonic() - started
                    print(
                        f"  {sent:>6} requests  {sent / elapsed:6.0f}/s  5xx={len(problems['5xx'])} "
                        f"leaks={len(problems['leak'])} changes={len(problems['change'])}",
                        file=sys.stderr,
                        flush=True,
                    )
            if not problems["fatal"]:
                _check_changes(world, problems, suspects)
        finally:
            if not problems["fatal"]:
                world.stop()
        elapsed = time.monotonic() - started

    print(f"\ngateway fuzz: seed {args.seed}, {sent} requests in {elapsed:.0f} s ({sent / max(elapsed, 1e-9):.0f}/s)")
    print(f"{'what':<28}{'count':>8}")
    for klass in sorted(statuses):
        print(f"{'answers ' + klass:<28}{statuses[klass]:>8}")
    for name, label in (
        ("5xx", "5xx answers"),
        ("shape", "error-shape violations"),
        ("leak", "leaks (hidden token)"),
        ("change", "changes (snapshot diff)"),
        ("transport", "transport errors"),
        ("fatal", "engine died"),
    ):
        print(f"{label:<28}{len(problems[name]):>8}")
    print("requests by family: " + ", ".join(f"{k} {v}" for k, v in sorted(families.items())))
    for name, found in problems.items():
        for example in found[: args.show]:
            print(f"[{name}] {example[:600]}")
    return 1 if problems["5xx"] or problems["leak"] or problems["change"] or problems["fatal"] else 0


def _check_changes(world: AdvWorld, problems: dict[str, list[str]], suspects: list[str]) -> None:
    changes = world.changes()
    if changes:
        problems["change"].append("; ".join(changes)[:400] + f" | accepted writes since last check: {suspects[:3]}")
        world.restore()
    suspects.clear()


if __name__ == "__main__":
    sys.exit(main())
