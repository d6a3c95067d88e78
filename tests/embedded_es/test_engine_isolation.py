"""No way around the gateway (issue 15, point 5): the superuser's password is never in a command line.

proc(5): ``/proc/<pid>/cmdline`` is readable by every local user (``ps``), so the password comes from
the environment or a file the owner alone may read. Every test here runs the real server.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from elasticsearch import Elasticsearch

from .conftest import needs_embedded, ready_url, serve_cli

pytestmark = needs_embedded


def _stop(proc: subprocess.Popen, *, terminate: bool = True) -> tuple[int, str, str]:
    """(exit code, stdout, stderr), after SIGTERM unless the process is expected to exit by itself."""
    if terminate and proc.poll() is None:
        proc.terminate()
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


def _env_without_password(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ATLAS_ES_PASSWORD"}
    return {**env, **extra}


def test_the_password_flag_is_refused(tmp_path: Path) -> None:
    proc = serve_cli(tmp_path / "es", _env_without_password(), "--password", "pw")
    code, _, err = _stop(proc, terminate=False)
    assert code == 2
    assert "--password is not accepted (every user sees it in ps)" in err
    assert not (tmp_path / "es").exists()


def test_password_file_authenticates(tmp_path: Path) -> None:
    secret = tmp_path / "elastic.pw"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"from-a-file\n")
    os.close(fd)
    proc = serve_cli(tmp_path / "es", _env_without_password(), "--password-file", str(secret))
    try:
        client = Elasticsearch(ready_url(proc), basic_auth=("elastic", "from-a-file"))
        assert client.security.authenticate()["username"] == "elastic"
    finally:
        code, _, err = _stop(proc)
    assert code == 0, err


def test_a_password_file_others_may_read_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "elastic.pw"
    secret.write_text("pw\n")
    secret.chmod(0o644)
    proc = serve_cli(tmp_path / "es", _env_without_password(), "--password-file", str(secret))
    code, _, err = _stop(proc, terminate=False)
    assert code == 2
    assert f"the password file {secret} is open to group or others (mode 644); chmod 600 it" in err
    assert not (tmp_path / "es").exists()
