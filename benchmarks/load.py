"""A bounded load and fault harness: the whole `make run` stack on loopback, agents writing and recalling,
optionally a fault, then an integrity count of every write.

It starts ``python -m atlas_site.run`` (embedded engine, gateway, web server, Celery worker and beat) in a
temporary data directory on free ports, adds ``--agents`` memory subjects and one tenant token, and runs:

- ``--agents`` agent threads, each writing its share of ``--writes`` turns to its own subject with an
  ``Idempotency-Key`` (and a unique marker in the text), as a careful client does: a connection error, a
  timeout, a 503, a 409 "still running" or a 429 is retried with the same key and body, after the
  ``Retry-After`` the answer gave (else a short back-off), until it succeeds or ``--time-limit`` passes;
  after every ``--recall-every`` writes it recalls once (not retried: a read);
- one dashboard reader (alice, the demo end user, signed in) loading her memory pages;
- with ``--fault``, once ``--fault-at`` of the writes are acknowledged: SIGSTOP for ``--pause`` seconds then
  SIGCONT (``*-pause``), or SIGKILL (``*-kill``) of a real process — the engine (noida-db), the gateway
  (``embedded_es serve``), the web server (uvicorn) or the Celery worker — which the stack's own supervisor
  starts again (embedded_es restarts its engine, `make run` the others).

At the end it waits for the stack to answer, lists every subject's memories and counts, by marker:
acknowledged (a 2xx), stored, lost (acknowledged, not stored), duplicated (a marker stored more than once),
and unacknowledged writes that were stored anyway (the client gave up; not an error). It prints statuses and
p50/p95/p99 per route, and the integrity counts; ``--json`` prints one JSON object instead (for tests).
Progress lines go to stderr while it runs.

``--capacity`` measures instead what one machine sustains: on one stack, write-only then recall-only load
at 1, 2, 4 … ``--agents`` agents, a table of requests/s and p95 per step (capacity = the highest rate whose
p95 ≤ 1 s). ``--web-workers`` and ``--workers`` set the web server's processes and the Celery worker's
concurrency (ATLAS_WEB_WORKERS, ATLAS_WORKER_CONCURRENCY of `make run`).

Usage:
    python benchmarks/load.py [--agents 4] [--writes 200] [--fault none|engine-pause|engine-kill|gateway-pause|
        gateway-kill|web-kill|worker-kill] [--time-limit 180] [--json]
    python benchmarks/load.py --capacity --agents 8 --writes 160 [--web-workers 1] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._run_stack import Stack, atlas_run, say  # noqa: E402

FAULTS = ("none", "engine-pause", "engine-kill", "gateway-pause", "gateway-kill", "web-kill", "worker-kill")
#: What a client retries with the same key: the write's fate is unknown, or it is known not to have run yet.
RETRIED_STATUSES = {409, 429, 502, 503, 504}
#: The client's own timeout: ATLAS_WEB_REQUEST_TIMEOUT (docs/operations.md "Timeouts"), beyond the app's ceiling
#: for one Elasticsearch call, so an answer that is coming (a 503 at worst) is not abandoned.
CLIENT_TIMEOUT = 60.0
BACKOFF_START, BACKOFF_MAX = 0.25, 5.0
TURNS = (
    "I moved to Lisbon last month and I am still looking for a good bakery near Alfama",
    "Remind me that my sister's birthday is on the fourth of March",
    "I prefer window seats on long flights, and never the last row",
    "The printer on the third floor jams whenever I print double-sided",
    "My dentist appointment moved to Thursday at 10, can you keep that in mind?",
    "I am allergic to peanuts, so please check restaurant menus for me",
    "We decided to use PostgreSQL for the new billing service",
    "I run on Tuesdays and Saturdays, usually about eight kilometres",
)
QUERIES = ("where do I live?", "what am I allergic to?", "when is the dentist?", "which database for billing?")
MARKER = re.compile(r"\[(lw-[0-9a-f]{8}-\d+-\d+)\]")


SETUP = """
import json
from tenants import services, tokens
from tenants.models import MemorySubject, Tenant
tenant = Tenant.objects.get(slug="demo")
for n in range({agents}):
    external_id = f"load-{{n}}"
    if not MemorySubject.objects.filter(tenant=tenant, external_id=external_id).exists():
        services.subject_create(tenant=tenant, external_id=external_id, actor="load harness")
issued = tokens.token_create(tenant=tenant, name="load harness", scopes="read,write", actor="load harness")
print(json.dumps({{"token": issued.secret}}))
"""


def stack_prepare(stack: Stack, *, agents: int) -> str:
    """Subjects load-0 … load-(agents-1) in the demo tenant, and a tenant token with read and write."""
    out = stack.manage_shell(SETUP.format(agents=agents))
    return json.loads(out.strip().splitlines()[-1])["token"]


# ---------------------------------------------------------------------------------------------------- the load


@dataclass
class Tally:
    """Every request's route, status (or the error's name) and latency; thread-safe."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    samples: list[tuple[str, str, float]] = field(default_factory=list)
    no_retry_after: list[tuple[str, int]] = field(default_factory=list)  # a 5xx or 409 without Retry-After

    def add(self, route: str, status: str, seconds: float) -> None:
        with self.lock:
            self.samples.append((route, status, seconds))


@dataclass
class Writes:
    """The client's view of its writes: marker → acknowledged or not."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    attempted: set[str] = field(default_factory=set)
    acknowledged: set[str] = field(default_factory=set)
    retries: int = 0


def _retry_after(response: requests.Response | None, attempt: int) -> float:
    if response is not None and response.headers.get("Retry-After", "").isdigit():
        return float(response.headers["Retry-After"])
    return min(BACKOFF_MAX, BACKOFF_START * 2**attempt)


def keyed_write(
    session: requests.Session,
    url: str,
    body: dict,
    key: str,
    *,
    tally: Tally,
    route: str,
    deadline: float,
    stop: threading.Event,
) -> tuple[bool, int]:
    """POST ``body`` with ``Idempotency-Key: key`` until a final answer or the deadline; (acknowledged, retries)."""
    attempt = 0
    while True:
        started = time.perf_counter()
        response = None
        try:
            response = session.post(url, json=body, headers={"Idempotency-Key": key}, timeout=CLIENT_TIMEOUT)
            status = str(response.status_code)
        except requests.RequestException as exc:
            status = type(exc).__name__
        tally.add(route, status, time.perf_counter() - started)
        if response is not None:
            if (response.status_code >= 500 or response.status_code == 409) and "Retry-After" not in response.headers:
                with tally.lock:
                    tally.no_retry_after.append((route, response.status_code))
            if 200 <= response.status_code < 300:
                return True, attempt
            if response.status_code not in RETRIED_STATUSES:
                return False, attempt  # a final refusal (4xx): the write is not stored, a retry would not help
        wait = _retry_after(response, attempt)
        if time.monotonic() + wait > deadline or stop.is_set():
            return False, attempt
        time.sleep(wait)
        attempt += 1


def agent_run(
    n: int,
    *,
    base: str,
    token: str,
    run_id: str,
    writes: int,
    recall_every: int,
    tally: Tally,
    ledger: Writes,
    deadline: float,
    stop: threading.Event,
    recalls_only: bool = False,
) -> None:
    subject = f"load-{n}"
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    for i in range(writes):
        if time.monotonic() > deadline or stop.is_set():
            return
        if not recalls_only:
            marker = f"lw-{run_id}-{n}-{i}"
            text = f"{TURNS[(n + i) % len(TURNS)]} [{marker}]"
            with ledger.lock:
                ledger.attempted.add(marker)
            acknowledged, retries = keyed_write(
                session,
                f"{base}/api/v1/subjects/{subject}/episodes",
                {"text": text, "session_id": f"load-session-{n}"},
                marker,
                tally=tally,
                route="POST episodes",
                deadline=deadline,
                stop=stop,
            )
            with ledger.lock:
                ledger.retries += retries
                if acknowledged:
                    ledger.acknowledged.add(marker)
        if recalls_only or (recall_every and (i + 1) % recall_every == 0):
            started = time.perf_counter()
            try:
                response = session.post(
                    f"{base}/api/v1/subjects/{subject}/recall",
                    # Unique per request: a repeated query would be answered from the query-embedding cache.
                    json={"query": f"{QUERIES[i % len(QUERIES)]} (turn {i}, agent {n})", "k": 5},
                    timeout=CLIENT_TIMEOUT,
                )
                status = str(response.status_code)
                if response.status_code >= 500 and "Retry-After" not in response.headers:
                    with tally.lock:
                        tally.no_retry_after.append(("POST recall", response.status_code))
            except requests.RequestException as exc:
                status = type(exc).__name__
            tally.add("POST recall", status, time.perf_counter() - started)


def dashboard_reader(*, base: str, password: str, tally: Tally, stop: threading.Event, every: float = 1.0) -> None:
    """Alice, signed in, loading her memory pages until told to stop."""
    session = requests.Session()
    while not stop.is_set():
        try:
            session.get(f"{base}/accounts/login/", timeout=CLIENT_TIMEOUT)
            signed = session.post(
                f"{base}/accounts/login/",
                data={
                    "login": "alice@atlas.local",
                    "password": password,
                    "csrfmiddlewaretoken": session.cookies.get("csrftoken", ""),
                },
                headers={"Referer": f"{base}/accounts/login/"},
                timeout=CLIENT_TIMEOUT,
                allow_redirects=False,
            )
            if signed.status_code == 302:
                break
        except requests.RequestException:
            pass
        stop.wait(1.0)
    pages = ("/memories/", "/memories/episodes/", "/")
    n = 0
    while not stop.is_set():
        started = time.perf_counter()
        try:
            response = session.get(base + pages[n % len(pages)], timeout=CLIENT_TIMEOUT, allow_redirects=False)
            status = str(response.status_code)
        except requests.RequestException as exc:
            status = type(exc).__name__
        tally.add("GET dashboard", status, time.perf_counter() - started)
        n += 1
        stop.wait(every)


# ---------------------------------------------------------------------------------------------------- faults


def fault_inject(stack: Stack, fault: str, *, pause: float) -> dict:
    """Do ``fault`` to the stack's real process; what was done and how long the target took to come back."""
    target, _, action = fault.partition("-")
    pids = stack.pids(target)
    if not pids:
        raise RuntimeError(f"no {target} process under make run")
    victim = pids[-1]  # with several web workers, one worker (not uvicorn's supervisor)
    started = time.monotonic()
    if action == "pause":
        say(f"fault: SIGSTOP {target} (pid {victim}) for {pause:.0f} s")
        os.kill(victim, signal.SIGSTOP)
        time.sleep(pause)
        os.kill(victim, signal.SIGCONT)
        say(f"fault: SIGCONT {target} (pid {victim})")
        return {"fault": fault, "pid": victim, "paused_s": round(pause, 1)}
    say(f"fault: SIGKILL {target} (pid {victim})")
    os.kill(victim, signal.SIGKILL)
    deadline = started + 120
    while time.monotonic() < deadline:
        back = [pid for pid in stack.pids(target) if pid != victim]
        if len(back) >= len(pids):
            break
        time.sleep(0.1)
    else:
        return {"fault": fault, "pid": victim, "back_after_s": None}
    back_after = time.monotonic() - started
    say(f"fault: {target} is back after {back_after:.1f} s (pid {back[-1]})")
    return {"fault": fault, "pid": victim, "back_after_s": round(back_after, 1)}


# ---------------------------------------------------------------------------------------------------- counting


def stored_markers(base: str, token: str, agents: int) -> Counter:
    """How many times each marker is stored, over every subject's episodes (all pages)."""
    counts: Counter = Counter()
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    for n in range(agents):
        cursor = None
        while True:
            params = {"types": "episodic", "page_size": "200", **({"cursor": cursor} if cursor else {})}
            for attempt in range(30):  # the stack may still be coming back from a fault
                try:
                    response = session.get(f"{base}/api/v1/subjects/load-{n}/memories", params=params, timeout=60)
                    if response.status_code == 200:
                        break
                except requests.RequestException:
                    pass
                time.sleep(min(5.0, 0.5 * 2**attempt))
            else:
                raise RuntimeError(f"could not list the memories of load-{n}")
            page = response.json()
            for memory in page["memories"]:
                counts.update(MARKER.findall(memory.get("text") or ""))
            cursor = page.get("next_cursor")
            if not cursor:
                break
    return counts


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def routes_summary(tally: Tally, elapsed: float) -> dict[str, dict]:
    by_route: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for route, status, seconds in tally.samples:
        by_route[route].append((status, seconds))
    summary = {}
    for route, rows in sorted(by_route.items()):
        latencies = [s for _, s in rows]
        ok = [s for status, s in rows if status.startswith("2") or status == "302"]
        summary[route] = {
            "requests": len(rows),
            "statuses": dict(sorted(Counter(status for status, _ in rows).items())),
            "p50_ms": round(1000 * percentile(latencies, 0.50)),
            "p95_ms": round(1000 * percentile(latencies, 0.95)),
            "p99_ms": round(1000 * percentile(latencies, 0.99)),
            "ok_per_s": round(len(ok) / elapsed, 2) if elapsed else 0.0,
        }
    return summary


# ---------------------------------------------------------------------------------------------------- runs


def load_phase(
    stack: Stack,
    token: str,
    *,
    agents: int,
    writes: int,
    recall_every: int,
    time_limit: float,
    fault: str = "none",
    fault_at: float = 0.3,
    pause: float = 15.0,
    recalls_only: bool = False,
    dashboard: bool = True,
) -> dict:
    """One bounded run of the load (and the fault); the report, integrity counts included."""
    run_id = uuid.uuid4().hex[:8]
    tally, ledger, stop = Tally(), Writes(), threading.Event()
    per_agent = [writes // agents + (1 if n < writes % agents else 0) for n in range(agents)]
    started = time.monotonic()
    deadline = started + time_limit
    threads = [
        threading.Thread(
            target=agent_run,
            args=(n,),
            kwargs=dict(
                base=stack.url,
                token=token,
                run_id=run_id,
                writes=per_agent[n],
                recall_every=recall_every,
                tally=tally,
                ledger=ledger,
                deadline=deadline,
                stop=stop,
                recalls_only=recalls_only,
            ),
            name=f"agent-{n}",
        )
        for n in range(agents)
    ]
    reader_stop = threading.Event()
    reader = threading.Thread(
        target=dashboard_reader,
        kwargs=dict(base=stack.url, password=stack.demo_password, tally=tally, stop=reader_stop),
        name="dashboard-reader",
        daemon=True,
    )
    if dashboard:
        reader.start()
    for thread in threads:
        thread.start()
    fault_report: dict = {"fault": "none"}
    fault_done = fault == "none"
    last_progress = started
    while any(thread.is_alive() for thread in threads):
        time.sleep(0.1)
        now = time.monotonic()
        with ledger.lock:
            acked = len(ledger.acknowledged)
        if not fault_done and acked >= fault_at * writes:
            fault_done = True
            fault_report = fault_inject(stack, fault, pause=pause)
        if now - last_progress >= 5:
            last_progress = now
            with tally.lock:
                statuses = Counter(status for _, status, _ in tally.samples)
            say(
                f"{now - started:5.0f} s  writes acknowledged {acked}/{writes}  retries {ledger.retries}  "
                f"statuses {dict(sorted(statuses.items()))}"
            )
    elapsed = time.monotonic() - started
    reader_stop.set()
    if dashboard:
        reader.join(timeout=CLIENT_TIMEOUT + 5)
    if not fault_done:
        fault_report = {"fault": fault, "skipped": "fewer writes were acknowledged than --fault-at asks"}
    report: dict = {
        "elapsed_s": round(elapsed, 1),
        "agents": agents,
        "fault": fault_report,
        "routes": routes_summary(tally, elapsed),
        "errors_without_retry_after": [f"{route} {status}" for route, status in tally.no_retry_after],
    }
    if recalls_only:
        return report
    if not stack.healthy(timeout=120):
        say("the stack did not answer /healthz within 120 s after the load; counting anyway")
    counts = stored_markers(stack.url, token, agents)
    mine = {marker: c for marker, c in counts.items() if marker.startswith(f"lw-{run_id}-")}
    acknowledged = ledger.acknowledged
    report["integrity"] = {
        "attempted": len(ledger.attempted),
        "acknowledged": len(acknowledged),
        "stored": len(mine),
        "lost": len(acknowledged - set(mine)),
        "duplicated": sum(1 for c in mine.values() if c > 1),
        "stored_unacknowledged": len(set(mine) - acknowledged),
        "retries": ledger.retries,
    }
    report["lost_markers"] = sorted(acknowledged - set(mine))[:20]
    report["duplicated_markers"] = sorted(m for m, c in mine.items() if c > 1)[:20]
    return report


def table_print(report: dict) -> None:
    print(f"\nfault: {json.dumps(report['fault'])}   elapsed {report['elapsed_s']} s, {report['agents']} agents")
    print(f"{'route':<16} {'requests':>8} {'ok/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7}  statuses")
    for route, row in report["routes"].items():
        statuses = ", ".join(f"{k}: {v}" for k, v in row["statuses"].items())
        print(
            f"{route:<16} {row['requests']:>8} {row['ok_per_s']:>7} {row['p50_ms']:>7} {row['p95_ms']:>7} "
            f"{row['p99_ms']:>7}  {statuses}"
        )
    if "integrity" in report:
        i = report["integrity"]
        print(
            "writes: attempted {attempted}, acknowledged {acknowledged}, stored {stored}, lost {lost}, duplicated "
            "{duplicated} (stored but unacknowledged {stored_unacknowledged}; retries {retries})".format(**i)
        )
    missing = len(report["errors_without_retry_after"])
    print(f"5xx or 409 answers without Retry-After: {missing}")


def capacity(stack: Stack, token: str, *, agents: int, writes: int, time_limit: float) -> list[dict]:
    """Write-only, then recall-only load at 1, 2, 4 … agents: requests/s and p95 per step."""
    steps, n = [], 1
    while n <= agents:
        steps.append(n)
        n *= 2
    rows = []
    for mode in ("writes", "recalls"):
        for n in steps:
            say(f"capacity: {mode} with {n} agents")
            report = load_phase(
                stack,
                token,
                agents=n,
                writes=max(n, writes * n // agents),
                recall_every=0,
                time_limit=time_limit,
                recalls_only=mode == "recalls",
                dashboard=False,
            )
            route = report["routes"]["POST episodes" if mode == "writes" else "POST recall"]
            rows.append({"mode": mode, "agents": n, **route, **({"integrity": report.get("integrity")})})
    return rows


def capacity_print(rows: list[dict]) -> None:
    print(f"\n{'load':<8} {'agents':>6} {'ok/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7}  statuses")
    for row in rows:
        statuses = ", ".join(f"{k}: {v}" for k, v in row["statuses"].items())
        print(
            f"{row['mode']:<8} {row['agents']:>6} {row['ok_per_s']:>7} {row['p50_ms']:>7} {row['p95_ms']:>7} "
            f"{row['p99_ms']:>7}  {statuses}"
        )
    for mode in ("writes", "recalls"):
        within = [r["ok_per_s"] for r in rows if r["mode"] == mode and r["p95_ms"] <= 1000]
        print(f"capacity ({mode}/s at p95 ≤ 1 s): {max(within) if within else 'none within 1 s'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--writes", type=int, default=200, help="writes in all (split among the agents)")
    parser.add_argument("--recall-every", type=int, default=5, help="each agent recalls after this many writes")
    parser.add_argument("--time-limit", type=float, default=180.0, help="seconds; writes not done by then give up")
    parser.add_argument("--fault", choices=FAULTS, default="none")
    parser.add_argument("--fault-at", type=float, default=0.3, help="fraction of the writes acknowledged first")
    parser.add_argument("--pause", type=float, default=15.0, help="seconds a *-pause fault holds the process")
    parser.add_argument("--capacity", action="store_true", help="measure requests/s at 1, 2, 4 … agents instead")
    parser.add_argument("--web-workers", type=int, default=1, help="web server processes (ATLAS_WEB_WORKERS)")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker concurrency (ATLAS_WORKER_CONCURRENCY)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.agents < 1 or args.writes < 1 or not 0 <= args.fault_at < 1:
        parser.error("--agents and --writes must be positive, --fault-at in [0, 1)")

    say(f"starting make run ({args.web_workers} web worker(s), Celery concurrency {args.workers})")
    with atlas_run(web_workers=args.web_workers, workers=args.workers) as stack:
        token = stack_prepare(stack, agents=args.agents)
        say(f"stack up at {stack.url}; {args.agents} subjects and a tenant token ready")
        config = {k: getattr(args, k) for k in ("agents", "writes", "recall_every", "time_limit", "fault", "pause")}
        config |= {"web_workers": args.web_workers, "workers": args.workers, "load_average": os.getloadavg()}
        if args.capacity:
            rows = capacity(stack, token, agents=args.agents, writes=args.writes, time_limit=args.time_limit)
            if args.json:
                print(json.dumps({"config": config, "capacity": rows}))
            else:
                capacity_print(rows)
            return 0
        report = load_phase(
            stack,
            token,
            agents=args.agents,
            writes=args.writes,
            recall_every=args.recall_every,
            time_limit=args.time_limit,
            fault=args.fault,
            fault_at=args.fault_at,
            pause=args.pause,
        )
        report["config"] = config
        report["restarts"] = [line.rstrip() for line in stack.output if "restart" in line or "is back" in line]
    if args.json:
        print(json.dumps(report))
    else:
        table_print(report)
        for line in report["restarts"]:
            print(f"  {line}")
    integrity = report["integrity"]
    return 1 if integrity["lost"] or integrity["duplicated"] or report["errors_without_retry_after"] else 0


if __name__ == "__main__":
    sys.exit(main())
