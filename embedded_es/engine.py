"""Runs the noida-db engine as a child process speaking Elasticsearch on a private port."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from importlib.resources import files
from pathlib import Path

from .private_files import DIR_MODE

NOIDA_VERSION = "0.2.3"
#: How long the gateway waits for the engine's answer to a read (EMBEDDED_ES_ENGINE_TIMEOUT overrides it):
#: below the application's Elasticsearch client timeout (ATLAS_ES_REQUEST_TIMEOUT, 10 s), so a stalled
#: engine gets the client a clear 503 rather than a timeout of its own (docs/operations.md "Timeouts").
#: A journaled write waits for the engine however long it takes: answering before its fate is known would
#: let it land in the engine without being in the journal.
ENGINE_TIMEOUT_SECONDS = 8.0
_PR_SET_PDEATHSIG = 1
# Loaded here, in the parent, so the forked child (die_with_parent runs between fork and exec) only
# calls into it and never takes the dynamic loader's lock another thread of the parent may hold.
try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL("libc.so.6", use_errno=True)
except OSError:  # not glibc Linux: no parent-death signal, children are stopped explicitly only
    _LIBC = None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def noida_binary() -> Path:
    """The engine binary inside the installed noida-db wheel.

    We run it directly rather than through the wheel's ``noida-db`` Python
    wrapper: the wrapper is an extra process, and a signal to it would not
    reach the engine, which would then be left running as an orphan.
    """
    path = Path(str(files("noida_db").joinpath("noida-db")))
    if not path.is_file():
        raise RuntimeError(f"noida-db engine binary not found at {path}; is noida-db=={NOIDA_VERSION} installed?")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


def die_with_parent() -> None:
    # A child started with this (preexec_fn) gets SIGTERM from the kernel when its parent dies without
    # stopping it (SIGKILL, or a SIGTERM the parent does not handle), so no engine or gateway outlives
    # the process that owns it. Linux ties this to the thread that forked: start children from a
    # thread that lives as long as they should.
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class NoidaEngine:
    def __init__(self, *, data_dir: Path, port: int | None = None, log_path: Path | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.log_path = log_path or data_dir / "noida.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        self.data_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        cmd = [
            str(noida_binary()),
            "start",
            "--only",
            "elasticsearch",
            "--host",
            "127.0.0.1",
            "--elasticsearch-port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
        ]
        # The engine needs no secret of ours: keep the superuser's password out of its environment.
        env = {k: v for k, v in os.environ.items() if k != "ATLAS_ES_PASSWORD"}
        self._proc = subprocess.Popen(
            cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env, preexec_fn=die_with_parent
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"noida-db exited with code {self._proc.returncode} during start-up; see {self.log_path}"
                )
            try:
                with urllib.request.urlopen(self.url + "/", timeout=1) as resp:  # noqa: S310 (our own http:// URL)
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"noida-db did not answer on {self.url} within {timeout:.0f}s; see {self.log_path}")

    def stop(self, timeout: float = 15.0) -> int | None:
        """Stop the engine the way Ctrl-C does, so it saves its data; kill only as a last resort."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return proc.returncode if proc else None
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"embedded_es: noida-db did not stop within {timeout:.0f}s; killing it", file=sys.stderr)
            proc.kill()
            return proc.wait()

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None
