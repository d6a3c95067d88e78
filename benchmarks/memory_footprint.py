"""Resident memory (RSS, and PSS: shared pages divided among the processes sharing them) of Atlas's
processes, with and without the default embedding models loaded.

One run, one stack (embedded Elasticsearch, temporary SQLite):
- the web process (uvicorn, as in production) just started, then after one episode write and one recall
  over REST (the three default models loaded);
- Celery beat and a prefork worker (docker-compose's: two children) just started — today's tasks do
  not embed, so they load no model;
- prefork sharing: a parent forks two children that each embed (what a prefork worker child does on its
  first embedding task), once with the models loaded in each child after the fork and once loaded in
  the parent before it (Celery's ``worker_process_init`` vs. a preload); the children's vectors are
  checked against the parent's.
PSS comes from /proc/<pid>/smaps_rollup. Usage: python benchmarks/memory_footprint.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from _stack import ROOT, atlas_stack, progress

TEXTS = [
    "My printer keeps jamming on the second page.",
    "Mi hermana llega el viernes con su perro.",
    "We are thinking of moving to Lisbon next spring, the kids would start school there.",
] * 7


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of ``pid`` in kB."""
    values = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, rest = line.partition(":")
        values[key] = int(rest.split()[0])
    return values["Rss"], values["Pss"]


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return sorted(out)


def row(label: str, pid: int) -> tuple[str, int, int]:
    rss, pss = memory_kb(pid)
    return label, rss, pss


def wait_for_line(proc: subprocess.Popen, needle: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if needle in line:
            return
        if not line and proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited before logging {needle!r}")
    raise RuntimeError(f"{proc.args} did not log {needle!r}")


def prefork(preload: bool) -> list[tuple[str, int, int]]:
    """A parent and two forked children that embed TEXTS with every default model."""
    from memory.services.prepare import embedding_fields

    code = (
        "import os, sys, time, json\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "import django; django.setup()\n"
        "from memory.services.prepare import embedding_fields\n"
        "texts = json.loads(sys.argv[1]); preload = sys.argv[2] == '1'\n"
        "def embed(): return [f.provider.embed_documents(texts) for f in embedding_fields()]\n"
        "reference = embed() if preload else None\n"
        "pids = []\n"
        "for n in range(2):\n"
        "    r, w = os.pipe()\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.close(r); vectors = embed()\n"
        "        ok = reference is None or vectors == reference\n"
        "        os.write(w, b'ok' if ok else b'DIFFERENT'); os.close(w); time.sleep(600); os._exit(0)\n"
        "    os.close(w); pids.append((pid, r))\n"
        "results = [os.read(r, 16).decode() for _pid, r in pids]\n"
        "print(json.dumps({'parent': os.getpid(), 'children': [p for p, _ in pids], 'results': results}), flush=True)\n"
        "time.sleep(600)\n"
    )
    import json

    assert embedding_fields()  # the settings name the default models
    proc = subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(TEXTS), "1" if preload else "0"],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        info = json.loads(proc.stdout.readline())
        if any(r != "ok" for r in info["results"]):
            raise AssertionError(f"a forked child's vectors differ from the parent's: {info['results']}")
        mode = "models loaded before the fork" if preload else "models loaded in each child"
        rows = [row(f"prefork parent ({mode})", info["parent"])]
        rows += [row(f"  child {n + 1}, after embedding", pid) for n, pid in enumerate(info["children"])]
        return rows
    finally:
        for pid in children(proc.pid):
            os.kill(pid, 9)
        proc.kill()
        proc.wait()


def main() -> None:
    rows: list[tuple[str, int, int]] = []
    with atlas_stack():
        import requests
        from api_overhead import serve

        from tenants import services, tokens

        tenant = services.tenant_create(slug="mem", name="Mem", actor="benchmark")
        services.subject_create(tenant=tenant, external_id="alice", actor="benchmark")
        token = tokens.token_create(tenant=tenant, name="mem", scopes="read,write", actor="benchmark").secret

        progress("web process …")
        url, server = serve()
        try:
            time.sleep(2)
            rows.append(row("web (uvicorn), started", server.pid))
            http = requests.Session()
            http.headers["Authorization"] = f"Bearer {token}"
            base = f"{url}/api/v1/subjects/alice"
            assert http.post(base + "/episodes", json={"text": TEXTS[0], "session_id": "s"}, timeout=300).ok
            assert http.post(base + "/episodes", json={"text": TEXTS[1], "session_id": "s"}, timeout=300).ok
            assert http.post(base + "/recall", json={"query": "where will they move?", "k": 10}, timeout=300).ok
            rows.append(row("web (uvicorn), after a write and a recall (3 models loaded)", server.pid))
        finally:
            server.terminate()
            server.wait(timeout=30)

        progress("celery worker and beat …")
        celery = [sys.executable, "-m", "celery", "-A", "atlas_site"]
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True, "cwd": ROOT}
        worker = subprocess.Popen(
            [*celery, "worker", "--concurrency=2", "--loglevel=INFO", "--without-gossip", "--without-mingle"], **pipes
        )
        beat = subprocess.Popen(
            [*celery, "beat", "--loglevel=INFO", "--schedule", os.path.join(os.environ["ATLAS_DATA_DIR"], "beat")],
            **pipes,
        )
        try:
            wait_for_line(worker, "ready.")
            wait_for_line(beat, "beat: Starting")
            time.sleep(2)
            rows.append(row("celery worker (prefork) parent, started", worker.pid))
            rows += [row(f"  worker child {n + 1}, idle", pid) for n, pid in enumerate(children(worker.pid))]
            rows.append(row("celery beat, started", beat.pid))
        finally:
            for proc in (beat, worker):
                proc.terminate()
            for proc in (beat, worker):
                proc.wait(timeout=60)

        for preload in (False, True):
            progress(f"prefork sharing, preload={preload} …")
            part = prefork(preload)
            rows += part
            rows.append(("  **total PSS of the three**", 0, sum(p for _l, _r, p in part)))

    print(f"\nresident memory, MB (load avg {os.getloadavg()[0]:.2f}, cpu_count={os.cpu_count()})")
    print("| process | RSS MB | PSS MB |")
    print("|---|---:|---:|")
    for label, rss, pss in rows:
        print(f"| {label} | {rss / 1024:.0f} | {pss / 1024:.0f} |" if rss else f"| {label} | | {pss / 1024:.0f} |")


if __name__ == "__main__":
    main()
