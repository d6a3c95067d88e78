"""Helpers of the embedded_es suite (the ``cluster`` and ``admin`` fixtures come from the root conftest)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from conftest import Cluster  # noqa: F401  (re-exported for the tests)
from embedded_es.server import READY_LINE

ROOT = Path(__file__).resolve().parents[2]
needs_embedded = pytest.mark.embedded_only(reason="restarts or inspects the embedded server")


def mint_key(admin: Elasticsearch, name: str, role_descriptors: dict, **kwargs) -> str:
    return admin.security.create_api_key(name=name, role_descriptors=role_descriptors, **kwargs)["encoded"]


def engine_pids(data_dir: Path) -> list[int]:
    """noida processes serving ``data_dir`` (found through /proc, so orphans are visible too)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"noida-db" in part for part in cmdline[:1]) and str(data_dir / "noida").encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def serve_cli(data_dir: Path, env: dict[str, str], *args: str, wrapper: list[str] | None = None) -> subprocess.Popen:
    """``python -m embedded_es serve`` on a free port (run through ``wrapper``, a command prefix, if given)."""
    return subprocess.Popen(
        [
            *(wrapper or [sys.executable]),
            "-m",
            "embedded_es",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
            *args,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ready_url(proc: subprocess.Popen) -> str:
    """The gateway URL the server announces once it is ready."""
    line = proc.stdout.readline().strip()
    match = READY_LINE.match(line)
    assert match, f"not ready: {line!r}; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
    return match.group(1)


@pytest.fixture(scope="session")
def adv_world(cluster: Cluster):
    """The adversarial suite's planted indices and attacker keys (tests/embedded_es/adversarial.py)."""
    from .adversarial import AdvWorld

    world = AdvWorld.start(cluster.url, cluster.username, cluster.password)
    try:
        yield world
    finally:
        world.stop()


@pytest.fixture
def adv(adv_world):
    """The world, put back as planted when a test changed it (so one broken invariant does not cascade).

    The baseline is the cluster as this test finds it: tests of other files share the session's cluster
    and may have created indices since the world was planted (pytest-xdist runs files in any order);
    without it the first attack would report their indices as changed, and restoring would delete them."""
    adv_world.baseline_refresh()
    yield adv_world
    adv_world.restore_if_changed()
