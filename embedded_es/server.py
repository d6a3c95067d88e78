"""Running embedded_es: the serve loop behind the CLI, and a handle for tests and scripts."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from aiohttp import web

from .data_lock import DataDirInUse, data_dir_lock
from .engine import NoidaEngine, die_with_parent
from .gateway import Gateway
from .isolation import (
    SHARED_LOOPBACK,
    SHARED_LOOPBACK_WARNING,
    IsolationRefused,
    enter_private_network,
    isolation_mode,
    join_network_of,
)
from .journal import SYNC_MODES, Journal, ReplayFailed
from .private_files import DIR_MODE, make_private_dir, write_private

READY_LINE = re.compile(r"^embedded_es ready on (http://127\.0\.0\.1:(\d+))$")


# What the server writes in its data directory (tightened to 0700/0600 on every start).
LOCK_FILE = "embedded_es.lock"
OWNED_ENTRIES = ("embedded_es.json", "security", "ilm", "noida", "journal", LOCK_FILE)


def _say(message: str) -> None:
    print(f"embedded_es: {message}", file=sys.stderr, flush=True)


def _bind_public(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(socket.SOMAXCONN)
    except OSError:
        sock.close()
        raise
    return sock


def serve(*, port: int, data_dir: Path, password: str, license_type: str) -> int:
    """Start the engine and the gateway, announce readiness, run until SIGINT/SIGTERM.

    The order is the security boundary (see isolation.py): a private umask and data directory, the
    gateway's public socket bound on the host, then the private network namespace — all before
    any thread or the event loop exists — and only then the engine, which is born inside it.
    """
    try:
        mode = isolation_mode(os.environ)
    except ValueError as exc:
        _say(str(exc))
        return 2
    sync = os.environ.get("EMBEDDED_ES_JOURNAL_SYNC", "interval")
    if sync not in SYNC_MODES:
        _say(f"EMBEDDED_ES_JOURNAL_SYNC must be one of {', '.join(SYNC_MODES)}, not {sync!r}")
        return 2
    os.umask(0o077)  # for the engine's snapshot and log too: it inherits the umask
    data_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    try:
        lock = data_dir_lock(data_dir, LOCK_FILE)  # held until this process ends
    except DataDirInUse as exc:
        _say(
            f"the data directory {data_dir} is in use by another embedded_es ({exc.holder}): stop it first, "
            "or give this one its own --data-dir (two engines on one directory lose each other's writes)"
        )
        return 1
    try:
        return _serve_locked(port=port, data_dir=data_dir, password=password, license_type=license_type, mode=mode)
    finally:
        os.close(lock)


def _serve_locked(*, port: int, data_dir: Path, password: str, license_type: str, mode: str) -> int:
    make_private_dir(data_dir, owned=OWNED_ENTRIES)
    try:
        public = _bind_public(port)
    except OSError as exc:
        _say(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}")
        return 1
    if mode == SHARED_LOOPBACK:
        print(SHARED_LOOPBACK_WARNING, file=sys.stderr, flush=True)
    else:
        try:
            enter_private_network()
        except IsolationRefused as exc:
            public.close()
            _say(str(exc))
            return 1
    return asyncio.run(
        _serve(public=public, data_dir=data_dir, password=password, license_type=license_type, isolation=mode)
    )


#: The engine is restarted when it dies, after 1, 2, 4 … 30 s; this many deaths within RESTART_WINDOW stop the server.
RESTART_LIMIT = 5
RESTART_WINDOW = 300.0
RESTART_MAX_DELAY = 30.0


def _engine_up(engine: NoidaEngine, journal: Journal) -> int:
    """Start the engine on the journal's base and replay the records after it (blocking). Returns how many."""
    records = journal.restore()
    engine.start()
    return journal.replay(engine.url, records)


async def _serve(*, public: socket.socket, data_dir: Path, password: str, license_type: str, isolation: str) -> int:
    engine = NoidaEngine(data_dir=data_dir / "noida")
    journal = Journal(directory=data_dir / "journal", snapshot=engine.data_dir / "elasticsearch.json")
    try:
        replayed = await asyncio.to_thread(_engine_up, engine, journal)
    except ReplayFailed as exc:
        await asyncio.to_thread(engine.stop)
        _say(f"could not replay the write journal: {exc}")
        return 1
    if replayed:
        _say(f"replayed {replayed} acknowledged writes from the journal")
    runner: web.AppRunner | None = None
    maintenance: asyncio.Task | None = None
    try:
        gateway = Gateway(
            engine_url=engine.url, data_dir=data_dir, password=password, license_type=license_type, journal=journal
        )
        runner = web.AppRunner(gateway.app(), access_log=None, handle_signals=False)
        await runner.setup()
        await web.SockSite(runner, public).start()
        maintenance = asyncio.create_task(journal.maintain())
        bound = runner.addresses[0][1]
        # Where the gateway listens, for tools. Not the engine: it is the gateway's alone.
        write_private(
            data_dir / "embedded_es.json",
            json.dumps({"gateway_url": f"http://127.0.0.1:{bound}", "pid": os.getpid(), "engine_isolation": isolation}),
        )
        print(f"embedded_es ready on http://127.0.0.1:{bound}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        deaths: list[float] = []
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=0.2)
            except TimeoutError:
                if not engine.alive():
                    if not await _engine_restart(engine, journal, gateway, deaths, stop):
                        return 1
        return 0
    finally:
        if maintenance is not None:
            maintenance.cancel()
        if runner is not None:
            await runner.cleanup()
        public.close()
        code = await asyncio.to_thread(engine.stop)
        if code == 0:
            journal.stopped_cleanly()  # the engine saved everything on SIGINT: its snapshot is the new base
        else:
            journal.close()
            if code not in (None, -signal.SIGINT):
                _say(f"the engine exited with code {code}")


async def _engine_restart(
    engine: NoidaEngine, journal: Journal, gateway: Gateway, deaths: list[float], stop: asyncio.Event
) -> bool:
    """The engine died: start it again on the journal (after a back-off), or give up. False to stop serving."""
    while not stop.is_set():
        code = await asyncio.to_thread(engine.stop)  # reaps it; a dead engine answers nothing
        now = time.monotonic()
        deaths[:] = [t for t in deaths if now - t < RESTART_WINDOW] + [now]
        if len(deaths) >= RESTART_LIMIT:
            _say(
                f"the engine (noida-db) died {len(deaths)} times in {RESTART_WINDOW / 60:.0f} minutes "
                f"(last exit code {code}); stopping. See {engine.log_path}; restart with "
                "`python -m embedded_es serve` (or `make run`) on the same --data-dir: "
                "every acknowledged write is in its journal"
            )
            return False
        delay = min(RESTART_MAX_DELAY, 2.0 ** (len(deaths) - 1))
        _say(f"the engine (noida-db) exited unexpectedly (code {code}); restarting it in {delay:.0f} s")
        try:
            await asyncio.wait_for(stop.wait(), timeout=delay)
            return True  # asked to stop meanwhile
        except TimeoutError:
            pass
        async with journal.paused():  # no write reaches the new engine before the journal is replayed
            await journal.segment_close()
            try:
                replayed = await asyncio.to_thread(_engine_up, engine, journal)
            except (RuntimeError, OSError) as exc:
                _say(f"the engine did not come back: {exc}")
                continue
            finally:
                gateway.engine_restarted()
        _say(f"the engine is back ({replayed} journaled writes replayed)")
        return True
    return True


class EmbeddedElasticsearch:
    """A running ``python -m embedded_es serve`` in a child process.

    The gateway runs in its own process (as in production, the cluster is not
    in the application's process), started through the same CLI users run.
    """

    def __init__(
        self,
        *,
        data_dir: Path | None = None,
        password: str = "embedded-es-test-password",  # noqa: S107 (a throwaway test server)
        port: int = 0,
        license_type: str = "trial",
    ) -> None:
        self._tmp = None if data_dir else tempfile.TemporaryDirectory(prefix="embedded-es-")
        self.data_dir = Path(data_dir) if data_dir else Path(self._tmp.name)
        self.password = password
        self.port = port
        self.license_type = license_type
        self.url: str | None = None
        self._proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 60.0) -> EmbeddedElasticsearch:
        env = {**os.environ, "ATLAS_ES_PASSWORD": self.password}
        cmd = [
            sys.executable,
            "-m",
            "embedded_es",
            "serve",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
            "--license",
            self.license_type,
        ]
        self._proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=None,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
            # A test run or benchmark killed mid-way must not leave a server (and its engine) behind.
            preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + timeout
        assert self._proc.stdout is not None
        while time.monotonic() < deadline:
            line = self._proc.stdout.readline()
            if not line:
                code = self._proc.wait()
                raise RuntimeError(f"embedded_es exited with code {code} before it was ready")
            match = READY_LINE.match(line.strip())
            if match:
                self.url = match.group(1)
                self.port = int(match.group(2))
                return self
        self.stop()
        raise RuntimeError(f"embedded_es was not ready within {timeout:.0f}s")

    def stop(self, timeout: float = 30.0) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout:
            proc.stdout.close()
        return proc.returncode

    def engine_pid(self) -> int:
        """The noida engine this server started (its child process, found through /proc)."""
        assert self._proc is not None, "the server is not running"
        for entry in Path("/proc").iterdir():
            try:
                comm, _, rest = (entry / "stat").read_text().rpartition(")")
            except OSError:
                continue
            if entry.name.isdigit() and comm.endswith("(noida-db") and int(rest.split()[1]) == self._proc.pid:
                return int(entry.name)
        raise RuntimeError(f"no noida-db process under embedded_es (pid {self._proc.pid})")

    @property
    def engine_url(self) -> str:
        """The engine's unauthenticated URL, for benchmarks comparing the two layers.

        It answers only inside the server's private network namespace: use it from
        :meth:`engine_thread`, not from the host.
        """
        cmdline = Path(f"/proc/{self.engine_pid()}/cmdline").read_bytes().split(b"\0")
        return f"http://127.0.0.1:{cmdline[cmdline.index(b'--elasticsearch-port') + 1].decode()}"

    def engine_thread(self) -> ThreadPoolExecutor:
        """A one-thread executor whose thread has joined the server's network namespace.

        Work submitted to it reaches :attr:`engine_url`; every other thread stays on the host.
        Joining takes CAP_SYS_ADMIN (root), as setns(2) demands; the caller shuts it down.
        """
        assert self._proc is not None, "the server is not running"
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedded-es-engine-netns")
        try:
            pool.submit(join_network_of, self._proc.pid).result()
        except OSError:
            pool.shutdown()
            raise
        return pool

    def kill(self) -> None:
        """Stop abruptly (SIGKILL), as a crash would."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            if self._proc.stdout:
                self._proc.stdout.close()
            self._proc = None

    def cleanup(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> EmbeddedElasticsearch:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()
