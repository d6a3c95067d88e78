"""`make run`: the whole product on one machine, with embedded defaults.

Starts the embedded Elasticsearch, migrates, bootstraps the cluster, seeds the
demo tenant, then runs the web server, a Celery worker and beat until Ctrl-C,
when it stops them all (web first, search engine last). A child that dies is
started again after a back-off (1, 2, 4 … 30 s), and said so; one that dies five
times in five minutes stops the stack with one line naming it. Development secrets are
generated once into .data/dev.env, so a second run reuses the same data. Before anything starts or is
written, the run takes the data directory's lock (one run per directory) and the ports it will serve.
"""

from __future__ import annotations

import ctypes
import http.client
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.fernet import Fernet

from embedded_es.data_lock import DataDirInUse, data_dir_lock

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("ATLAS_DATA_DIR", ROOT / ".data"))
ENV_FILE = DATA / "dev.env"
LOGS = DATA / "logs"  # the Celery processes' own output: their start-up banners would bury make run's
PY = sys.executable

#: What bounds one client's hold on the web server (docs/security.md "Connections"): at most this many
#: connections and requests in flight (503 beyond, so a flood of held connections — issue 24 — cannot
#: grow the process without end), idle keep-alive connections closed after 5 s, a short accept queue,
#: and h11's 16 KiB ceiling on a request's unfinished head. uvicorn has no per-client limit; in
#: production a proxy in front adds one (docs/security.md).
WEB_SERVER_BOUNDS = (
    "--limit-concurrency",
    "256",
    "--timeout-keep-alive",
    "5",
    "--backlog",
    "256",
    "--h11-max-incomplete-event-size",
    "16384",
)


def _say(message: str) -> None:
    print(f"[atlas] {message}", flush=True)


def _dev_env() -> dict[str, str]:
    """Development settings and secrets: generated on the first run, then reused."""
    _private_data_dir()
    if not ENV_FILE.exists():
        ENV_FILE.write_text(
            "\n".join(
                [
                    "DJANGO_DEBUG=true",
                    f"DJANGO_SECRET_KEY={secrets.token_urlsafe(48)}",
                    f"ATLAS_ENCRYPTION_KEYS={Fernet.generate_key().decode()}",
                    f"ATLAS_ES_PASSWORD={secrets.token_urlsafe(18)}",
                    f"ATLAS_DEMO_PASSWORD={secrets.token_urlsafe(9)}",
                    "ATLAS_EMAIL_VERIFICATION=optional",
                ]
            )
            + "\n"
        )
        ENV_FILE.chmod(0o600)
        _say(f"generated development secrets in {ENV_FILE}")
    values = {}
    for line in ENV_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    if "ATLAS_DEMO_TOKEN" not in values:  # generated once, like the other secrets (older files get it added)
        values["ATLAS_DEMO_TOKEN"] = f"atlas_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"
        with ENV_FILE.open("a") as env_file:
            env_file.write(f"ATLAS_DEMO_TOKEN={values['ATLAS_DEMO_TOKEN']}\n")
    # Explicit environment variables win over the generated file.
    return {**values, **{k: v for k, v in os.environ.items() if k in values}}


#: What each run decides afresh and records in dev.env for the operator CLI in another terminal: where
#: its stack listens, and the recall plan chosen for the embedded engine. An earlier run's values are
#: not inherited (they may name another port, or an embedded-only setting when this run uses your cluster).
RUN_CHOICES = ("ATLAS_ES_URL", "ATLAS_PUBLIC_URL", "ATLAS_BM25_LEG")


def _run_choices_record(choices: dict[str, str]) -> None:
    """Write this run's choices into dev.env (replacing an earlier run's, dropping those it did not make),
    so that `manage.py atlas_*` in another terminal reaches this stack and recalls as it does."""
    kept = [line for line in ENV_FILE.read_text().splitlines() if line.partition("=")[0].strip() not in RUN_CHOICES]
    ENV_FILE.write_text("\n".join([*kept, *(f"{k}={v}" for k, v in choices.items())]) + "\n")


def _private_data_dir() -> None:
    """.data holds secrets, the SQLite database and the search engine's data: its owner's alone.

    The umask covers everything the stack creates from here on (it is inherited by every child);
    the chmods tighten what an older version created readable by others.
    """
    os.umask(0o077)
    DATA.mkdir(mode=0o700, parents=True, exist_ok=True)
    DATA.chmod(0o700)
    for database in DATA.glob("atlas.sqlite3*"):  # the database and its -wal / -shm / -journal
        database.chmod(0o600)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent(parent_pid: int) -> None:
    """Runs in each child between fork and exec: the kernel sends it SIGTERM when ``make run`` dies,
    however it dies — a SIGKILLed or crashed parent cannot run ``Stack.stop``, and children started in
    their own session would otherwise keep serving (and holding the ports) with no one to stop them.
    The SIGTERM is the one ``Stack.stop`` sends, so each child shuts down as cleanly as on Ctrl-C.
    Linux only: elsewhere (macOS) the children outlive a killed parent, as before."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        os._exit(127)
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)


#: A child that dies is started again after 1, 2, 4 … 30 s; this many deaths of one child within
#: RESTART_WINDOW stop the whole stack, with one line saying what died and how to start again.
RESTART_LIMIT = 5
RESTART_WINDOW = 300.0
RESTART_MAX_DELAY = 30.0


class Stack:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = {**os.environ, **env, "ATLAS_ENV_FILE": str(ENV_FILE), "PYTHONUNBUFFERED": "1"}
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self._specs: dict[str, tuple[list[str], dict, Callable[[subprocess.Popen], bool] | None]] = {}
        self._deaths: dict[str, list[float]] = {}
        self._due: dict[str, float] = {}  # child name → when to start it again

    def start(
        self, name: str, args: list[str], *, ready: Callable[[subprocess.Popen], bool] | None = None, **kwargs
    ) -> subprocess.Popen:
        parent_pid = os.getpid()
        proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env=self.env,
            start_new_session=True,  # Ctrl-C reaches make run alone, which stops the children in order
            preexec_fn=lambda: _die_with_parent(parent_pid),  # noqa: PLW1509 — make run starts no threads
            **kwargs,
        )
        self._specs[name] = (args, kwargs, ready)
        # A restarted child keeps its place: the stack stops in reverse order of the first start.
        self.procs = [(n, proc if n == name else p) for n, p in self.procs]
        if name not in (n for n, _ in self.procs):
            self.procs.append((name, proc))
        return proc

    def supervise(self) -> str | None:
        """Start again, after a back-off, every child that died; the name of one that died too often."""
        now = time.monotonic()
        for name, proc in self.procs:
            if proc.poll() is None or name in self._due:
                continue
            deaths = [t for t in self._deaths.get(name, []) if now - t < RESTART_WINDOW] + [now]
            self._deaths[name] = deaths
            if len(deaths) >= RESTART_LIMIT:
                _say(
                    f"{name} died {len(deaths)} times in {RESTART_WINDOW / 60:.0f} minutes (last exit code "
                    f"{proc.returncode}); stopping everything. Its output above says why; start again with `make run`"
                )
                return name
            delay = min(RESTART_MAX_DELAY, 2.0 ** (len(deaths) - 1))
            _say(f"{name} exited with code {proc.returncode}; restarting it in {delay:.0f} s")
            self._due[name] = now + delay
        for name, due in list(self._due.items()):
            if now < due:
                continue
            del self._due[name]
            args, kwargs, ready = self._specs[name]
            proc = self.start(name, args, ready=ready, **kwargs)
            if ready is not None and not ready(proc):
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait()
                _say(f"{name} did not come back")
                continue  # counted as another death on the next round
            _say(f"{name} restarted (pid {proc.pid})")
        return None

    def manage(self, *args: str) -> None:
        subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=self.env, check=True)

    def stop(self) -> None:
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                _say(f"stopping {name}")
                proc.send_signal(signal.SIGTERM)
        for name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _say(f"{name} did not stop in time; killing it")
                proc.kill()
                proc.wait()


def _logged(name: str) -> dict[str, object]:
    """A child's stdout and stderr appended to ``LOGS/<name>.log`` (kept open by make run)."""
    log = open(LOGS / f"{name}.log", "ab")  # noqa: SIM115 — the child writes to it for the whole run
    return {"stdout": log, "stderr": subprocess.STDOUT}


WEB_WAIT_SECONDS = 120


def _positive_env(name: str, default: int) -> int:
    value = os.environ.get(name, str(default))
    if not value.isdigit() or int(value) < 1:
        raise SystemExit(f"[atlas] {name} must be a whole number of at least 1, not {value!r}")
    return int(value)


def _web_workers() -> list[str]:
    """ATLAS_WEB_WORKERS web server processes (default 1); uvicorn's own supervisor starts a dead one again.
    More processes serve more requests at once (each loads its own models: ~0.4 GB each,
    docs/performance.md "Load, faults and capacity")."""
    count = _positive_env("ATLAS_WEB_WORKERS", 1)
    return ["--workers", str(count)] if count > 1 else []


def _web_answers(port: int, stack: Stack) -> bool:
    """Wait until the web server answers ``/healthz`` (any status: a 503 says what is missing), so the
    banner printed next never sends anyone to a port that refuses them."""
    deadline = time.monotonic() + WEB_WAIT_SECONDS
    while time.monotonic() < deadline:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            return True
        except OSError:
            if stack.supervise() is not None:
                return False
            time.sleep(0.2)
        finally:
            connection.close()
    return False


def _search_ready(proc: subprocess.Popen) -> bool:
    """The embedded Elasticsearch prints one line on stdout once it serves (nothing if it fails to start)."""
    line = proc.stdout.readline().strip()
    if line.startswith("embedded_es ready"):
        _say(line)
        return True
    return False


class NotStarted(Exception):
    """A check before anything starts failed: the message says what to do."""


LOCK_FILE = "run.lock"


def _data_dir_claim() -> int:
    """This run's hold on the data directory (a lock on ``run.lock`` in it, the OS's: released when the
    process ends however it ends), taken before anything in the directory is read or written. A second
    run on the same directory would rewrite dev.env and start a second search engine on the same data:
    each side would see only its own writes, and one side's acknowledged writes would be lost."""
    os.umask(0o077)  # .data holds secrets: everything the stack creates is its owner's alone
    DATA.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        return data_dir_lock(DATA, LOCK_FILE)
    except DataDirInUse as exc:
        pid = exc.pid if exc.pid is not None else "PID"
        raise NotStarted(
            f"another `make run` ({exc.holder}) is using the data directory {DATA}: two runs on one data "
            f"directory lose each other's writes. Stop it first (Ctrl-C in its terminal, or kill {pid}); "
            "for a second, separate stack give it a data directory of its own (ATLAS_DATA_DIR=…) and other "
            "ports (ATLAS_WEB_PORT, ATLAS_ES_PORT)"
        ) from None


def _port_hold(port: int, what: str, setting: str) -> socket.socket:
    """Listen on 127.0.0.1:``port`` until the child that serves it starts (then close it just before), so a
    port taken by another program stops the run before anything starts or any secret is written, and no
    other program takes the port meanwhile."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: a port in TIME_WAIT is free
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(1)
    except OSError as exc:
        sock.close()
        raise NotStarted(
            f"port {port} ({what}) is not free on 127.0.0.1 ({exc.strerror}): stop the program listening "
            f"there, or choose another port with {setting}=…; nothing was started"
        ) from None
    return sock


def _ports_hold(*, es_port: int | None, web_port: int) -> dict[str, socket.socket]:
    """Every port this run binds, held: the search engine's (unless ATLAS_ES_URL names your cluster), the web server's."""
    if es_port == web_port:
        raise NotStarted(f"ATLAS_ES_PORT and ATLAS_WEB_PORT are both {web_port}: give them different ports")
    held: dict[str, socket.socket] = {}
    try:
        if es_port is not None:
            held["search"] = _port_hold(es_port, "the embedded Elasticsearch", "ATLAS_ES_PORT")
        held["web"] = _port_hold(web_port, "the web server", "ATLAS_WEB_PORT")
    except NotStarted:
        for sock in held.values():
            sock.close()
        raise
    return held


def _run_env(*, es_port: int, web_port: int, external_es: bool) -> dict[str, str]:
    """The environment of the stack's children: dev.env's secrets, then what this run chose (recorded in dev.env)."""
    env = {k: v for k, v in _dev_env().items() if k not in RUN_CHOICES}
    env["ATLAS_ES_URL"] = os.environ.get("ATLAS_ES_URL", f"http://127.0.0.1:{es_port}")
    if not external_es:
        # The embedded engine scans every document per search: recall's BM25 leg only for literal
        # questions is the measured best point there (settings.ATLAS_BM25_LEG, docs/recall-latency.md).
        if "ATLAS_BM25_LEG" not in os.environ:
            env["ATLAS_BM25_LEG"] = "literal"
    env["ATLAS_PUBLIC_URL"] = os.environ.get("ATLAS_PUBLIC_URL", f"http://127.0.0.1:{web_port}")
    # A value given in the environment is the caller's to pass on; the ones this run chose go to dev.env.
    _run_choices_record({k: env[k] for k in RUN_CHOICES if k in env and k not in os.environ})
    return env


def main() -> int:
    es_port = int(os.environ.get("ATLAS_ES_PORT", "9200"))
    web_port = int(os.environ.get("ATLAS_WEB_PORT", "8000"))
    external_es = "ATLAS_ES_URL" in os.environ
    try:
        lock = _data_dir_claim()  # held until this process ends
        held = _ports_hold(es_port=None if external_es else es_port, web_port=web_port)
    except NotStarted as exc:
        _say(str(exc))
        return 1
    try:
        env = _run_env(es_port=es_port, web_port=web_port, external_es=external_es)
        return _stack_run(env, held=held, es_port=es_port, web_port=web_port, external_es=external_es)
    finally:
        for sock in held.values():
            sock.close()
        os.close(lock)


def _stack_run(
    env: dict[str, str], *, held: dict[str, socket.socket], es_port: int, web_port: int, external_es: bool
) -> int:
    stack = Stack(env)
    stopping = False

    def _stop(signum, _frame) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        if not external_es:
            held.pop("search").close()
            if not _search_start(stack, es_port):
                return 1
        _say("migrating the database")
        stack.manage("migrate", "--noinput", "-v", "0")
        _say("bootstrapping Elasticsearch")
        stack.manage("atlas_es_bootstrap")
        stack.manage("atlas_demo_seed")  # reads ATLAS_DEMO_PASSWORD from the environment, not from argv
        held.pop("web").close()
        _web_and_celery_start(stack, web_port)
        url = f"http://127.0.0.1:{web_port}"
        if not _web_answers(web_port, stack):
            _say(f"the web server did not answer on {url} within {WEB_WAIT_SECONDS} s; stopping")
            return 1
        _banner(env, url)
        # A child that dies is started again (the search engine's own engine process is restarted by
        # embedded_es itself, which replays its write journal); one that keeps dying stops the stack.
        while not stopping:
            if stack.supervise() is not None:
                return 1
            time.sleep(0.5)
        return 0
    except subprocess.CalledProcessError as exc:
        _say(f"a set-up step failed: {' '.join(map(str, exc.cmd[1:]))}")
        return 1
    finally:
        stack.stop()
        _say("stopped")


def _search_start(stack: Stack, es_port: int) -> bool:
    _say(f"starting embedded Elasticsearch on port {es_port} (data in {DATA / 'es'})")
    es = stack.start(
        "embedded Elasticsearch",
        [PY, "-m", "embedded_es", "serve", "--port", str(es_port), "--data-dir", str(DATA / "es")],
        ready=_search_ready,
        stdout=subprocess.PIPE,
        text=True,
    )
    if not _search_ready(es):
        _say(f"embedded Elasticsearch did not start (is port {es_port} free?)")
        return False
    return True


def _web_and_celery_start(stack: Stack, web_port: int) -> None:
    stack.start(
        "web server",
        [
            PY,
            "-m",
            "uvicorn",
            "atlas_site.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(web_port),
            "--log-level",
            "warning",
            *WEB_SERVER_BOUNDS,
            *_web_workers(),
        ],
    )
    LOGS.mkdir(mode=0o700, exist_ok=True)
    concurrency = _positive_env("ATLAS_WORKER_CONCURRENCY", 2)
    worker = ["worker", "--loglevel=warning", f"--concurrency={concurrency}", "--pool=threads"]
    stack.start("celery worker", [PY, "-m", "celery", "-A", "atlas_site", *worker], **_logged("celery-worker"))
    _say(f"celery worker started (its output: {LOGS / 'celery-worker.log'})")
    beat = ["beat", "--loglevel=warning", "--schedule", str(DATA / "celerybeat-schedule")]
    stack.start("celery beat", [PY, "-m", "celery", "-A", "atlas_site", *beat], **_logged("celery-beat"))
    _say(f"celery beat started (its output: {LOGS / 'celery-beat.log'})")


def _banner(env: dict[str, str], url: str) -> None:
    print(
        f"\n  Atlas Memory is running\n"
        f"    web        {url}/\n"
        f"    admin      {url}/admin/\n"
        f"    health     {url}/healthz\n"
        f"    search     {env['ATLAS_ES_URL']} (user elastic, password in {ENV_FILE})\n"
        f"  demo login   demo@atlas.local / {env['ATLAS_DEMO_PASSWORD']}  (operator: admin, tenant demo's owner)\n"
        f"  demo user    alice@atlas.local / {env['ATLAS_DEMO_PASSWORD']}  (end user: alice's memories)\n"
        f"  demo token   {env['ATLAS_DEMO_TOKEN']}  (subject alice: read, write, forget)\n"
        f"    try        curl -s -X POST {url}/api/v1/subjects/alice/recall -H 'Authorization: Bearer "
        f"{env['ATLAS_DEMO_TOKEN']}' -H 'Content-Type: application/json' -d '{{\"query\": \"hello\"}}'\n"
        f"    API docs   {url}/api/v1/docs/ · MCP {url}/mcp/\n"
        f"  Ctrl-C stops everything.\n",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
