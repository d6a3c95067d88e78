"""Running embedded_es: the serve loop behind the CLI, and a handle for tests and scripts."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import web

from .engine import NoidaEngine, die_with_parent
from .gateway import Gateway

READY_LINE = re.compile(r"^embedded_es ready on (http://127\.0\.0\.1:(\d+))$")


async def serve(*, port: int, data_dir: Path, password: str, license_type: str) -> int:
    """Start the engine and the gateway, announce readiness, run until SIGINT/SIGTERM."""
    data_dir.mkdir(parents=True, exist_ok=True)
    engine = NoidaEngine(data_dir=data_dir / "noida")
    await asyncio.to_thread(engine.start)
    runner: web.AppRunner | None = None
    try:
        gateway = Gateway(engine_url=engine.url, data_dir=data_dir, password=password, license_type=license_type)
        runner = web.AppRunner(gateway.app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, reuse_address=True)
        await site.start()
        bound = runner.addresses[0][1]
        # Where each layer listens, for tools that must compare the two (the benchmark).
        (data_dir / "embedded_es.json").write_text(
            json.dumps({"gateway_url": f"http://127.0.0.1:{bound}", "engine_url": engine.url, "pid": os.getpid()})
        )
        print(f"embedded_es ready on http://127.0.0.1:{bound}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=1.0)
            except TimeoutError:
                if not engine.alive():
                    print("embedded_es: the engine exited unexpectedly; stopping", file=sys.stderr, flush=True)
                    return 1
        return 0
    finally:
        if runner is not None:
            await runner.cleanup()
        code = await asyncio.to_thread(engine.stop)
        if code not in (0, None, -signal.SIGINT):
            print(f"embedded_es: the engine exited with code {code}", file=sys.stderr, flush=True)


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

    @property
    def engine_url(self) -> str:
        """The engine's private, unauthenticated URL (for benchmarks comparing the two layers)."""
        return json.loads((self.data_dir / "embedded_es.json").read_text())["engine_url"]

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
