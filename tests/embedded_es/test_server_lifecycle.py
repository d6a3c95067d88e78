"""The ``python -m embedded_es serve`` entry point, clean shutdown, and what survives a restart.

Persistence guarantees (measured; see docs/embedded-elasticsearch.md):
- API keys and ILM policies are written by the gateway with fsync before the request is answered,
  so they survive any crash;
- documents live in the noida engine, which keeps them in memory and snapshots them to
  ``<data-dir>/noida/elasticsearch.json`` shortly after writes go quiet and on every clean stop;
  a clean stop (SIGINT/SIGTERM, or the gateway dying, which signals the engine) loses nothing;
- every acknowledged document write is also in the gateway's journal before it is answered, so a
  SIGKILL of the engine, or of both processes, loses none of them (test_durability.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from elasticsearch import AuthenticationException, Elasticsearch

from embedded_es import EmbeddedElasticsearch

from .conftest import engine_pids, needs_embedded, ready_url, serve_cli
from .documents import read_role

pytestmark = needs_embedded
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_cli_announces_readiness_and_stops_cleanly(tmp_path: Path, stop_signal: signal.Signals) -> None:
    data_dir = tmp_path / "es"
    proc = serve_cli(data_dir, {**os.environ, "ATLAS_ES_PASSWORD": "pw-cli"})
    try:
        client = Elasticsearch(ready_url(proc), basic_auth=("elastic", "pw-cli"))
        assert client.info()["version"]["number"].startswith("8.")
        assert len(engine_pids(data_dir)) == 1
        proc.send_signal(stop_signal)
        assert proc.wait(timeout=30) == 0
        assert engine_pids(data_dir) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()


def test_cli_requires_a_password(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ATLAS_ES_PASSWORD"}
    result = subprocess.run(
        [sys.executable, "-m", "embedded_es", "serve", "--data-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "a password for the 'elastic' superuser is required: ATLAS_ES_PASSWORD or --password-file" in result.stderr
    assert not (tmp_path / "noida").exists()


def test_a_second_server_on_the_same_data_directory_is_refused(tmp_path: Path) -> None:
    """Issue 32, finding 9: two engines on one data directory each keep their own copy of the documents and
    overwrite each other's snapshot, losing acknowledged writes. The second is refused (the first's lock on
    a file in the directory, held for its life) before it changes anything there, naming the first's pid."""
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    try:
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        admin.index(index="owned", id="1", document={"text": "the first server's"}, refresh="wait_for")
        announced = (server.data_dir / "embedded_es.json").read_bytes()
        second = subprocess.run(
            [sys.executable, "-m", "embedded_es", "serve", "--port", "0", "--data-dir", str(server.data_dir)],
            cwd=ROOT,
            env={**os.environ, "ATLAS_ES_PASSWORD": "pw-second"},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert (second.returncode, second.stdout) == (1, "")
        assert second.stderr.splitlines() == [
            f"embedded_es: the data directory {server.data_dir} is in use by another embedded_es "
            f"(pid {server._proc.pid}): stop it first, or give this one its own --data-dir (two engines on one "
            "directory lose each other's writes)"
        ]
        assert len(engine_pids(server.data_dir)) == 1
        assert (server.data_dir / "embedded_es.json").read_bytes() == announced
        assert admin.get(index="owned", id="1")["_source"] == {"text": "the first server's"}
    finally:
        assert server.stop() == 0
    # The lock goes with its process: the next start on the directory is the owner.
    server.start()
    try:
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        assert admin.get(index="owned", id="1")["_source"] == {"text": "the first server's"}
    finally:
        server.cleanup()


def test_documents_keys_and_policies_survive_a_clean_restart(tmp_path: Path) -> None:
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    try:
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        admin.index(index="kept", id="1", document={"text": "still here"}, refresh="wait_for")
        encoded = admin.security.create_api_key(name="kept-key", role_descriptors=read_role(["kept"]))["encoded"]
        revoked = admin.security.create_api_key(name="revoked-key", role_descriptors={})
        admin.security.invalidate_api_key(ids=[revoked["id"]])
        admin.ilm.put_lifecycle(name="kept-policy", policy={"phases": {"hot": {"actions": {}}}})
    finally:
        assert server.stop() == 0
    server.start()
    try:
        reader = Elasticsearch(server.url, api_key=encoded)
        assert reader.get(index="kept", id="1")["_source"] == {"text": "still here"}
        with pytest.raises(AuthenticationException):
            Elasticsearch(server.url, api_key=revoked["encoded"]).security.authenticate()
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        assert "kept-policy" in admin.ilm.get_lifecycle()
    finally:
        server.cleanup()


def test_crash_keeps_keys_and_settled_documents(tmp_path: Path) -> None:
    """SIGKILL of both processes: keys (fsynced by the gateway) and documents written more than the
    engine's snapshot delay ago survive."""
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
    admin.index(index="settled", id="1", document={"text": "settled"}, refresh="wait_for")
    time.sleep(2.5)
    encoded = admin.security.create_api_key(name="crash-key", role_descriptors=read_role(["settled"]))["encoded"]
    for pid in engine_pids(server.data_dir):
        os.kill(pid, signal.SIGKILL)
    server.kill()
    server.start()
    try:
        reader = Elasticsearch(server.url, api_key=encoded)
        assert reader.get(index="settled", id="1")["_source"] == {"text": "settled"}
    finally:
        server.cleanup()


def test_killing_the_gateway_stops_the_engine(tmp_path: Path) -> None:
    """No orphan: the engine is told to stop (and saves) when the gateway dies."""
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
    admin.index(index="orphan-check", id="1", document={"n": 1}, refresh="wait_for")
    server.kill()
    deadline = time.monotonic() + 15
    while engine_pids(server.data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert engine_pids(server.data_dir) == []
    server.start()
    try:
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        assert admin.get(index="orphan-check", id="1")["_source"] == {"n": 1}
    finally:
        server.cleanup()


def test_a_server_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """A test run or benchmark killed outright (SIGKILL: no context manager, no atexit) takes its
    embedded_es server and engine with it instead of leaving them running."""
    data_dir = tmp_path / "es"
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from embedded_es import EmbeddedElasticsearch\n"
            f"server = EmbeddedElasticsearch(data_dir={str(data_dir)!r}).start()\n"
            "print(server._proc.pid, flush=True)\n"
            "time.sleep(600)\n",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    server_pid = None
    try:
        server_pid = int(owner.stdout.readline())
        assert len(engine_pids(data_dir)) == 1
        owner.kill()
        owner.wait(timeout=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (Path(f"/proc/{server_pid}").exists() or engine_pids(data_dir)):
            time.sleep(0.2)
        assert not Path(f"/proc/{server_pid}").exists()
        assert engine_pids(data_dir) == []
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.stdout.close()
        if server_pid and Path(f"/proc/{server_pid}").exists():  # the failure case: clean up the orphan
            os.kill(server_pid, signal.SIGTERM)
