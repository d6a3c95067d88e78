"""The whole `make run` stack (``python -m atlas_site.run``) started on free loopback ports in a data
directory of its own, for the load and fault harness (benchmarks/load.py) and its tests: its processes by
role (engine, gateway, web server, Celery worker), its health, and the operator shell against it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from embedded_es.engine import free_port  # noqa: E402


def say(message: str) -> None:
    print(f"[load] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------- the stack


def _proc_children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children[parent].append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, read from /proc."""
    children, found, frontier = _proc_children(), [], [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.append(child)
            frontier.append(child)
    return found


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


#: Which process of the stack each fault target is, told from its command line.
TARGETS = {
    "engine": lambda pid: _comm(pid) == "noida-db",
    "gateway": lambda pid: _cmdline(pid)[1:4] == ["-m", "embedded_es", "serve"],
    "web": lambda pid: "uvicorn" in _cmdline(pid) and "atlas_site.asgi:application" in _cmdline(pid),
    "worker": lambda pid: "celery" in _cmdline(pid) and "worker" in _cmdline(pid),
}


@dataclass
class Stack:
    """A running `make run` (``python -m atlas_site.run``) in its own data directory."""

    proc: subprocess.Popen
    data_dir: Path
    url: str
    demo_password: str
    output: list[str] = field(default_factory=list)

    def pids(self, target: str) -> list[int]:
        """The live processes of ``target`` (engine, gateway, web, worker), oldest first. With several web
        workers, uvicorn's own supervisor is the first."""
        found = sorted(pid for pid in descendants(self.proc.pid) if TARGETS[target](pid))
        if target == "web":  # uvicorn's worker processes (--workers) are spawned children of it
            found += sorted(child for pid in found for child in descendants(pid))
        return found

    def manage_shell(self, code: str) -> str:
        """Run ``code`` in ``manage.py shell`` against this stack (the CLI finds it through dev.env)."""
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=stack_env(self.data_dir),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py shell failed: {done.stderr[-2000:]}")
        return done.stdout

    def healthy(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return True
            except requests.RequestException:
                pass
            time.sleep(0.5)
        return False


def stack_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """A clean shell pointed at ``data_dir``: none of the caller's secrets, databases or clusters."""
    dropped = {"DATABASE_URL", "REDIS_URL", "ATLAS_ES_URL", "DJANGO_SECRET_KEY", "ATLAS_ENCRYPTION_KEYS"}
    dropped |= {"ATLAS_ES_PASSWORD", "ATLAS_ENV_FILE", "DJANGO_SETTINGS_MODULE", "ATLAS_BROKER_DIR"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "ATLAS_DATA_DIR": str(data_dir), **extra}


@contextmanager
def atlas_run(*, web_workers: int = 1, workers: int = 2, data_dir: Path | None = None) -> Iterator[Stack]:
    """Start `make run` in a temporary data directory; stop it (SIGINT, as Ctrl-C) at the end."""
    with tempfile.TemporaryDirectory(prefix="atlas-load-") as scratch:
        base = Path(data_dir or scratch)
        es_port, web_port = free_port(), free_port()
        env = stack_env(
            base,
            ATLAS_ES_PORT=str(es_port),
            ATLAS_WEB_PORT=str(web_port),
            # The per-token rate limit would measure itself: lift it for the run.
            ATLAS_API_RATE="1000000/min",
            ATLAS_WEB_WORKERS=str(web_workers),
            ATLAS_WORKER_CONCURRENCY=str(workers),
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "atlas_site.run"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: list[str] = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Ctrl-C stops everything" in line:
                break
        else:
            proc.kill()
        banner = "".join(lines)
        password = re.search(r"demo login\s+demo@atlas\.local / (\S+)", banner)
        if "Ctrl-C stops everything" not in banner or password is None:
            proc.kill()
            proc.wait()
            raise RuntimeError("make run did not come up:\n" + banner)
        stack = Stack(proc=proc, data_dir=base, url=f"http://127.0.0.1:{web_port}", demo_password=password.group(1))

        def collect() -> None:
            for line in iter(proc.stdout.readline, ""):
                stack.output.append(line)
                if line.startswith("[atlas]") or "embedded_es:" in line:
                    say(f"stack: {line.rstrip()}")

        reader = threading.Thread(target=collect, name="stack-output", daemon=True)
        reader.start()
        try:
            yield stack
        finally:
            for pid in descendants(proc.pid):  # a paused process would never stop
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                for pid in descendants(proc.pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                proc.kill()
                proc.wait()
            reader.join(timeout=10)
            proc.stdout.close()
