"""No way around the gateway (issue 15, point 5): the engine, its files and the superuser's password.

The noida engine has no authentication, so it runs in a private network namespace the server
creates (network_namespaces(7): a socket belongs to the namespace it was created in), and nothing
on the host can connect to it; the data directory is its owner's alone; the password never appears
in a command line, which every local user can read in ``/proc/<pid>/cmdline``. Every test here runs
real processes and probes them from outside as another process on the host would.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from embedded_es import EmbeddedElasticsearch
from embedded_es.isolation import ISOLATION_ENV, SHARED_LOOPBACK, isolation_mode

from .conftest import ROOT, engine_pids, needs_embedded, ready_url, serve_cli

pytestmark = needs_embedded
ENGINE_TAGLINE = b"You Know, for Search"  # what the engine's GET / answers, to anyone, unauthenticated


def _listening_ports(pid: int) -> set[int]:
    """TCP ports listening in the network namespace of ``pid`` (proc(5): /proc/<pid>/net/tcp is that
    process's namespace's table; state 0A is LISTEN)."""
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _http_get_root(port: int) -> bytes | None:
    """What ``GET /`` on 127.0.0.1:``port`` answers from the calling thread's network, None if refused."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
            return b"".join(chunks)
    except ConnectionRefusedError:
        return None
    except OSError as exc:  # a reset or timeout is not the engine answering either
        return repr(exc).encode()


def _is_engine_answer(response: bytes | None) -> bool:
    return response is not None and response.startswith(b"HTTP/1.1 200") and ENGINE_TAGLINE in response


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
    env = {k: v for k, v in os.environ.items() if k not in ("ATLAS_ES_PASSWORD", ISOLATION_ENV)}
    return {**env, **extra}


def test_nothing_on_the_host_reaches_the_engine(tmp_path: Path) -> None:
    """Every port the engine listens on, tried from this process on the host's 127.0.0.1: refused
    (or something else answers). The same probe from a thread inside the server's namespace does
    reach the engine, so the probe would have seen it."""
    with EmbeddedElasticsearch(data_dir=tmp_path / "es") as server:
        engine = server.engine_pid()
        ports = _listening_ports(engine)
        engine_port = int(server.engine_url.rsplit(":", 1)[1])
        assert engine_port in ports
        for port in ports:
            assert not _is_engine_answer(_http_get_root(port)), f"the engine answers the host on port {port}"

        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        assert admin.info()["tagline"] == ENGINE_TAGLINE.decode()  # the gateway still serves the host

        if os.geteuid() == 0:  # the positive control needs setns(2), which needs CAP_SYS_ADMIN
            inside = server.engine_thread()
            try:
                assert _is_engine_answer(inside.submit(_http_get_root, engine_port).result())
            finally:
                inside.shutdown()


def test_the_engine_lives_in_its_own_network_namespace(tmp_path: Path) -> None:
    with EmbeddedElasticsearch(data_dir=tmp_path / "es") as server:
        engine_ns = os.readlink(f"/proc/{server.engine_pid()}/ns/net")
        assert engine_ns != os.readlink("/proc/self/ns/net")
        assert os.readlink(f"/proc/{server._proc.pid}/ns/net") == engine_ns  # the gateway joined it too


def _modes(data_dir: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(data_dir.stat().st_mode)}
    for path in data_dir.rglob("*"):
        found[str(path.relative_to(data_dir))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def _assert_private(data_dir: Path) -> None:
    for name, mode in _modes(data_dir).items():
        expected = 0o700 if (data_dir / name).is_dir() else 0o600
        assert mode == expected, f"{name} is {mode:o}, want {expected:o}"


def test_data_directory_and_files_are_private(tmp_path: Path) -> None:
    """0700 directories and 0600 files: what the gateway writes (keys, ILM, licence state, the
    readiness file), what the engine writes (snapshot, log), and what an older version left open."""
    data_dir = tmp_path / "es"
    (data_dir / "security").mkdir(parents=True)
    data_dir.chmod(0o755)
    (data_dir / "security").chmod(0o755)
    old_keys = data_dir / "security" / "api_keys.json"
    old_keys.write_text("{}")
    old_keys.chmod(0o644)
    server = EmbeddedElasticsearch(data_dir=data_dir).start()
    try:
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        admin.security.create_api_key(name="k", role_descriptors={})
        admin.ilm.put_lifecycle(name="p", policy={"phases": {"hot": {"actions": {}}}})
        admin.index(index="private", id="1", document={"text": "secret"}, refresh="wait_for")
        _assert_private(data_dir)
        engine_url = server.engine_url
    finally:
        assert server.stop() == 0
    names = set(_modes(data_dir))
    assert {"embedded_es.json", "security/api_keys.json", "ilm/policies.json", "noida/elasticsearch.json"} <= names
    _assert_private(data_dir)
    published = json.loads((data_dir / "embedded_es.json").read_text())
    assert set(published) == {"gateway_url", "pid", "engine_isolation"}  # not the engine's address
    assert published["gateway_url"] != engine_url


def test_no_password_in_any_command_line(tmp_path: Path) -> None:
    """proc(5): /proc/<pid>/cmdline is readable by every user (``ps``). The engine does not even get
    the password in its environment."""
    password = "cmdline-canary-4f1c"  # noqa: S105 (a throwaway test server)
    with EmbeddedElasticsearch(data_dir=tmp_path / "es", password=password) as server:
        engine = server.engine_pid()
        for pid in (server._proc.pid, engine):
            assert password.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
        assert password.encode() not in Path(f"/proc/{engine}/environ").read_bytes()


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


# -- fail closed -------------------------------------------------------------------------------
# A real refusal, not a mock: a seccomp filter makes unshare(2) fail with EPERM, which is how
# Docker's default seccomp profile refuses it in containers without CAP_SYS_ADMIN
# (https://docs.docker.com/engine/security/seccomp/: "unshare ... Deny cloning new namespaces").
# seccomp(2) / PR_SET_SECCOMP with SECCOMP_MODE_FILTER; the filter survives execve(2).

_UNSHARE_NR = {"x86_64": (0xC000003E, 272), "aarch64": (0xC00000B7, 97)}  # AUDIT_ARCH_*, __NR_unshare
_NO_UNSHARE = """
import ctypes, os, struct, sys
arch, nr = {arch}, {nr}
def op(code, k, jt=0, jf=0):
    return struct.pack("HBBI", code, jt, jf, k)
program = b"".join([
    op(0x20, 4),                      # ld [4]: seccomp_data.arch
    op(0x15, arch, 0, 3),             # jeq arch ? next : allow
    op(0x20, 0),                      # ld [0]: seccomp_data.nr
    op(0x15, nr, 0, 1),               # jeq __NR_unshare ? deny : allow
    op(0x06, 0x00050000 | 1),         # ret SECCOMP_RET_ERRNO | EPERM
    op(0x06, 0x7FFF0000),             # ret SECCOMP_RET_ALLOW
])
buf = ctypes.create_string_buffer(program)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
libc = ctypes.CDLL("libc.so.6", use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0                              # PR_SET_NO_NEW_PRIVS
prog = Prog(len(program) // 8, ctypes.addressof(buf))
assert libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0, ctypes.get_errno()  # PR_SET_SECCOMP, FILTER
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


def _without_unshare() -> list[str]:
    if platform.machine() not in _UNSHARE_NR:
        pytest.skip(f"no seccomp filter written for {platform.machine()}")
    arch, nr = _UNSHARE_NR[platform.machine()]
    return [sys.executable, "-c", _NO_UNSHARE.format(arch=arch, nr=nr)]


def test_the_filter_really_refuses_unshare() -> None:
    """The filter does what the next tests rely on: unshare(1) fails with EPERM under it."""
    if shutil.which("unshare") is None:
        pytest.skip("util-linux unshare(1) is not installed")
    probe = "import subprocess, sys; sys.exit(subprocess.run(['unshare', '--net', '--user', 'true']).returncode)"
    result = subprocess.run([*_without_unshare(), "-c", probe], capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert "Operation not permitted" in result.stderr


def test_server_refuses_to_start_when_the_kernel_refuses_the_namespace(tmp_path: Path) -> None:
    data_dir = tmp_path / "es"
    env = _env_without_password(ATLAS_ES_PASSWORD="pw")
    proc = serve_cli(data_dir, env, wrapper=_without_unshare())
    code, out, err = _stop(proc, terminate=False)
    assert out == ""
    assert code == 1
    assert err.strip().splitlines() == [
        "embedded_es: the kernel refused a private network namespace for the engine (unshare: Operation not "
        "permitted); refusing to start with the unauthenticated engine on the host's loopback. Set "
        f"{ISOLATION_ENV}={SHARED_LOOPBACK} to accept that risk on a single-user machine."
    ]
    assert engine_pids(data_dir) == []
    assert not (data_dir / "noida").exists()


def test_shared_loopback_starts_with_a_warning_and_the_engine_exposed(tmp_path: Path) -> None:
    """The explicit opt-out does what its warning says: the engine answers anyone on the host."""
    data_dir = tmp_path / "es"
    env = _env_without_password(ATLAS_ES_PASSWORD="pw", **{ISOLATION_ENV: SHARED_LOOPBACK})
    proc = serve_cli(data_dir, env, wrapper=_without_unshare())
    try:
        url = ready_url(proc)
        assert Elasticsearch(url, basic_auth=("elastic", "pw")).info()
        [engine] = engine_pids(data_dir)
        assert os.readlink(f"/proc/{engine}/ns/net") == os.readlink("/proc/self/ns/net")
        assert any(_is_engine_answer(_http_get_root(port)) for port in _listening_ports(engine))
    finally:
        code, _, err = _stop(proc)
    assert code == 0
    assert (
        f"embedded_es: WARNING: {ISOLATION_ENV}={SHARED_LOOPBACK}: the engine listens on the host's loopback "
        "WITHOUT authentication" in err
    )


def test_isolation_mode_values() -> None:
    assert isolation_mode({}) == "namespace"
    assert isolation_mode({ISOLATION_ENV: ""}) == "namespace"
    assert isolation_mode({ISOLATION_ENV: "namespace"}) == "namespace"
    assert isolation_mode({ISOLATION_ENV: SHARED_LOOPBACK}) == SHARED_LOOPBACK
    with pytest.raises(ValueError, match="EMBEDDED_ES_ENGINE_ISOLATION='off' is not one of"):
        isolation_mode({ISOLATION_ENV: "off"})


def test_an_unknown_isolation_mode_is_refused(tmp_path: Path) -> None:
    proc = serve_cli(tmp_path / "es", _env_without_password(ATLAS_ES_PASSWORD="pw", **{ISOLATION_ENV: "none"}))
    code, _, err = _stop(proc, terminate=False)
    assert code == 2
    assert f"{ISOLATION_ENV}='none' is not one of" in err
    assert not (tmp_path / "es").exists()


# -- an ordinary user ----------------------------------------------------------------------------

NOBODY = 65534


def _python_for_nobody() -> list[str]:
    """A Python that user ``nobody`` may run with this project's dependencies importable."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv(1) to run the server as another user")
    site = sysconfig.get_paths()["purelib"]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, f"/usr/bin/python{version}"):
        cmd = [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "env",
            f"PYTHONPATH={ROOT}:{site}",
        ]
        probe = subprocess.run([*cmd, python, "-c", "import aiohttp, noida_db"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return [*cmd, python]
    pytest.skip(f"no Python {version} that user nobody may run with the project's packages")


def test_an_ordinary_user_gets_the_namespace_and_keeps_owning_the_files() -> None:
    """Without CAP_SYS_ADMIN the server creates a user namespace with the network namespace
    (user_namespaces(7)) and maps its own uid/gid onto themselves: the files it and the engine
    write belong to that user, and the engine is still out of the host's reach."""
    python = _python_for_nobody()
    top = Path(tempfile.mkdtemp(prefix="embedded-es-nobody-"))
    try:
        os.chown(top, NOBODY, NOBODY)
        data_dir = top / "es"
        proc = serve_cli(data_dir, _env_without_password(ATLAS_ES_PASSWORD="pw"), wrapper=python)
        try:
            admin = Elasticsearch(ready_url(proc), basic_auth=("elastic", "pw"))
            admin.security.create_api_key(name="k", role_descriptors={})
            admin.index(index="mine", id="1", document={"text": "x"}, refresh="wait_for")
            [engine] = engine_pids(data_dir)
            assert os.readlink(f"/proc/{engine}/ns/net") != os.readlink("/proc/self/ns/net")
            assert os.readlink(f"/proc/{engine}/ns/user") != os.readlink("/proc/self/ns/user")
            assert not any(_is_engine_answer(_http_get_root(port)) for port in _listening_ports(engine))
            uid_line = next(
                line for line in Path(f"/proc/{engine}/status").read_text().splitlines() if line.startswith("Uid:")
            )
            assert uid_line.split()[1:] == [str(NOBODY)] * 4
        finally:
            code, _, err = _stop(proc)
        assert code == 0, err
        paths = [data_dir, *data_dir.rglob("*")]
        assert data_dir / "noida" / "elasticsearch.json" in paths
        assert {(p.lstat().st_uid, p.lstat().st_gid) for p in paths} == {(NOBODY, NOBODY)}
        _assert_private(data_dir)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_engine_thread_needs_root(tmp_path: Path) -> None:
    """The benchmark's way in is root's alone: an ordinary user cannot setns(2) into the namespace."""
    python = _python_for_nobody()
    with EmbeddedElasticsearch(data_dir=tmp_path / "es") as server:
        probe = (
            "import sys\nfrom embedded_es.isolation import join_network_of\n"
            f"try:\n    join_network_of({server._proc.pid})\nexcept PermissionError as exc:\n    print(exc); sys.exit(3)\n"
        )
        result = subprocess.run([*python, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert result.returncode == 3, result.stderr
    assert "Operation not permitted" in result.stdout or "Permission denied" in result.stdout
