"""`make run`'s entry point: the whole product starts, serves, reuses its data, and stops cleanly."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from embedded_es.engine import free_port
from tests.processes import process_state

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.embedded_only(reason="make run starts the embedded Elasticsearch")


def _user_env(data_dir: Path) -> dict[str, str]:
    """A newcomer's shell: no secrets or addresses of ours, only the data directory."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "ATLAS_ES_URL")}
    for key in ("DJANGO_SECRET_KEY", "ATLAS_ENCRYPTION_KEYS", "ATLAS_ES_PASSWORD", "ATLAS_ENV_FILE"):
        env.pop(key, None)
    return {**env, "ATLAS_DATA_DIR": str(data_dir)}


def _start(data_dir: Path, es_port: int, web_port: int) -> tuple[subprocess.Popen, list[str]]:
    env = {**_user_env(data_dir), "ATLAS_ES_PORT": str(es_port), "ATLAS_WEB_PORT": str(web_port)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "atlas_site.run"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Ctrl-C stops everything" in line:
            return proc, lines
    proc.kill()
    pytest.fail("make run did not come up:\n" + "".join(lines))


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    return out


def _wait_for(url: str) -> requests.Response:
    deadline = time.monotonic() + 30
    while True:
        try:
            return requests.get(url, timeout=5, allow_redirects=False)
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _open_to_others(data_dir: Path) -> list[str]:
    """Everything in the data directory group or others may access (it should be nothing)."""
    return [
        f"{path.relative_to(data_dir.parent)} {stat.S_IMODE(path.lstat().st_mode):o}"
        for path in [data_dir, *data_dir.rglob("*")]
        if not path.is_symlink() and path.lstat().st_mode & 0o077
    ]


def test_make_run_serves_and_stops(tmp_path: Path) -> None:
    es_port, web_port = free_port(), free_port()
    base = f"http://127.0.0.1:{web_port}"
    tmp_path.chmod(0o755)  # as a fresh checkout's .data might be: make run tightens it
    proc, lines = _start(tmp_path, es_port, web_port)
    try:
        banner = "".join(lines)
        password = re.search(r"demo login\s+demo@atlas\.local / (\S+)", banner).group(1)
        assert "generated development secrets" in banner
        # No Elasticsearch key id in what make run prints (issue 24): the writer key is only said to be ready.
        assert "service writer key: ready\n" in banner
        assert re.search(r"key:? [A-Za-z0-9_-]{20}\b", banner) is None
        # The banner comes once the web server answers (not a second before it), and the Celery processes'
        # own start-up banners go to their log files, one line each on screen (issue 27 point 14).
        health = requests.get(f"{base}/healthz", timeout=30)
        assert health.status_code == 200, health.text
        assert "-------------- celery@" not in banner and "[tasks]" not in banner
        assert f"celery worker started (its output: {tmp_path / 'logs' / 'celery-worker.log'})" in banner
        assert "celery@" in (tmp_path / "logs" / "celery-worker.log").read_text()
        assert health.json()["checks"]["elasticsearch"]["licence"] == "trial"
        # The web server runs with its connection bounds (docs/security.md "Connections").
        [web] = [
            (Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"))
            for pid in _descendants(proc.pid)
            if b"uvicorn" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        flags = " ".join(part.decode() for part in web)
        assert "--limit-concurrency 256 --timeout-keep-alive 5" in flags
        assert _wait_for(f"{base}/admin/").status_code == 302
        session = requests.Session()
        login_page = session.get(f"{base}/accounts/login/", timeout=10)
        assert login_page.status_code == 200
        csrf = session.cookies["csrftoken"]
        session.post(
            f"{base}/accounts/login/",
            data={"login": "demo@atlas.local", "password": password, "csrfmiddlewaretoken": csrf},
            headers={"Referer": f"{base}/accounts/login/"},
            timeout=10,
        )
        admin = session.get(f"{base}/admin/tenants/tenant/", timeout=10)
        assert admin.status_code == 200
        assert "demo" in admin.text
        # The demo data: alice's memories in the operator's memory pages, the chain among them.
        alice_pk = re.search(
            r'href="/admin/tenants/memorysubject/(\d+)/memories/">Memories of alice',
            session.get(f"{base}/admin/tenants/memorysubject/?q=alice", timeout=10).text,
        )
        assert alice_pk is not None
        facts = session.get(f"{base}/admin/tenants/memorysubject/{alice_pk.group(1)}/memories/", timeout=30)
        assert facts.status_code == 200 and "Alice lives in Porto" in facts.text
        # The end user logs in with the same password.
        assert re.search(rf"demo user\s+alice@atlas\.local / {re.escape(password)}", banner)
        user = requests.Session()
        user.get(f"{base}/accounts/login/", timeout=10)
        signed_in = user.post(
            f"{base}/accounts/login/",
            data={"login": "alice@atlas.local", "password": password, "csrfmiddlewaretoken": user.cookies["csrftoken"]},
            headers={"Referer": f"{base}/accounts/login/"},
            timeout=10,
            allow_redirects=False,
        )
        assert signed_in.status_code == 302 and "/accounts/login/" not in signed_in.headers["Location"]
        css = session.get(f"{base}/static/admin/css/base.css", timeout=10)
        assert css.status_code == 200
        # The printed demo token works as alice's own token, straight away.
        token = re.search(r"demo token\s+(atlas_\S+)", banner).group(1)
        me = requests.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert me.status_code == 200, me.text
        assert (me.json()["subject"], me.json()["scopes"]) == ("alice", ["forget", "read", "write"])
        # The operator CLI in another shell finds this run's Elasticsearch (not port 9200) through dev.env.
        recorded = (tmp_path / "dev.env").read_text().splitlines()
        # So does the embedded engine's recall plan (the CLI's atlas_recall then recalls as the web does).
        assert [
            line for line in recorded if line.startswith(("ATLAS_ES_URL=", "ATLAS_PUBLIC_URL=", "ATLAS_BM25_LEG="))
        ] == [
            f"ATLAS_ES_URL=http://127.0.0.1:{es_port}",
            f"ATLAS_PUBLIC_URL={base}",
            "ATLAS_BM25_LEG=literal",
        ]
        cli = subprocess.run(
            [sys.executable, "manage.py", "atlas_es_bootstrap"],
            cwd=ROOT,
            env=_user_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert cli.returncode == 0, cli.stderr
        assert cli.stdout.splitlines()[0] == "licence: trial (active); isolation mode: dls"
        _a_second_run_is_refused(tmp_path, owner=proc.pid)
        wrote = requests.post(
            f"{base}/api/v1/subjects/alice/episodes",
            json={"text": "hello from the demo token"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert wrote.status_code == 201, wrote.text
    finally:
        out = _stop(proc)
    assert proc.returncode == 0, out
    assert "[atlas] stopped" in out
    # Secrets, the SQLite database and the search data are the owner's alone.
    assert (tmp_path / "atlas.sqlite3").is_file()
    assert (tmp_path / "es" / "noida" / "elasticsearch.json").is_file()
    assert _open_to_others(tmp_path) == []

    # A second run reuses the same data and secrets.
    proc, lines = _start(tmp_path, es_port, web_port)
    try:
        banner = "".join(lines)
        assert "generated development secrets" not in banner
        assert f"demo@atlas.local / {password}" in banner
        assert f"demo token   {token}" in banner  # the same token, still valid
        assert _wait_for(f"{base}/healthz").status_code == 200
        me = requests.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert me.status_code == 200, me.text
    finally:
        out = _stop(proc)
    assert proc.returncode == 0, out


def _quick_run(data_dir: Path, es_port: int, web_port: int) -> subprocess.CompletedProcess:
    """A `make run` expected to stop before it starts anything."""
    env = {**_user_env(data_dir), "ATLAS_ES_PORT": str(es_port), "ATLAS_WEB_PORT": str(web_port)}
    return subprocess.run(
        [sys.executable, "-m", "atlas_site.run"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def _a_second_run_is_refused(data_dir: Path, *, owner: int) -> None:
    """Issue 32, finding 9: a second run on the data directory, on other ports as a taken port's message
    suggested, rewrote dev.env and started a second engine on the same data: each run saw only its own
    writes, and one's acknowledged writes were lost. The first run's lock refuses it before it reads or
    writes anything there, naming the first run's pid."""
    dev_env = (data_dir / "dev.env").read_bytes()
    second = _quick_run(data_dir, free_port(), free_port())
    assert (second.returncode, second.stderr) == (1, "")
    assert second.stdout.splitlines() == [
        f"[atlas] another `make run` (pid {owner}) is using the data directory {data_dir}: two runs on one data "
        f"directory lose each other's writes. Stop it first (Ctrl-C in its terminal, or kill {owner}); for a "
        "second, separate stack give it a data directory of its own (ATLAS_DATA_DIR=…) and other ports "
        "(ATLAS_WEB_PORT, ATLAS_ES_PORT)"
    ]
    assert (data_dir / "dev.env").read_bytes() == dev_env
    assert (data_dir / "run.lock").read_text() == f"{owner}\n"


@pytest.mark.parametrize(
    ("taken", "what", "setting"),
    [("web", "the web server", "ATLAS_WEB_PORT"), ("search", "the embedded Elasticsearch", "ATLAS_ES_PORT")],
)
def test_a_taken_port_stops_the_run_before_anything_starts(tmp_path: Path, taken: str, what: str, setting: str) -> None:
    """Issue 32, finding 9: with the web port taken, make run started everything, wrote a new demo password
    and token, printed the banner (the other program answered /healthz), then restarted the web server five
    times and gave up. Every port the run binds is checked first: one line, and nothing written but the lock."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(1)
        port = other.getsockname()[1]
        ports = {"web": free_port(), "search": free_port(), taken: port}
        run = _quick_run(tmp_path, ports["search"], ports["web"])
    assert (run.returncode, run.stderr) == (1, "")
    assert run.stdout.splitlines() == [
        f"[atlas] port {port} ({what}) is not free on 127.0.0.1 (Address already in use): stop the program "
        f"listening there, or choose another port with {setting}=…; nothing was started"
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run.lock"]


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid``, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, frontier = set(), [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.add(child)
            frontier.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return process_state(pid) != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_killed_make_run_takes_its_children_with_it(tmp_path: Path) -> None:
    es_port, web_port = free_port(), free_port()
    proc, _ = _start(tmp_path, es_port, web_port)
    assert _wait_for(f"http://127.0.0.1:{web_port}/healthz").status_code == 200
    children = _descendants(proc.pid)
    assert len(children) >= 4  # search engine, web server, worker, beat
    proc.kill()  # SIGKILL: make run's own clean-up never runs
    proc.wait(timeout=10)
    deadline = time.monotonic() + 60
    while (survivors := {pid for pid in children if _alive(pid)}) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in survivors:  # do not leave them running when the assertion fails
        os.kill(pid, signal.SIGKILL)
    proc.stdout.close()
    assert survivors == set()
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{web_port}/healthz", timeout=5)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the stack's processes through /proc")
def test_a_killed_engine_and_a_killed_worker_come_back(tmp_path: Path) -> None:
    """Issue 25, point 8: the search engine's death (kill -9) no longer stops the stack: embedded_es starts
    it again and replays its journal, and a write through the API succeeds; a killed Celery worker is
    started again by make run. Each restart is said on the console."""
    es_port, web_port = free_port(), free_port()
    base = f"http://127.0.0.1:{web_port}"
    proc, lines = _start(tmp_path, es_port, web_port)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        token = re.search(r"demo token\s+(atlas_\S+)", "".join(lines)).group(1)
        headers = {"Authorization": f"Bearer {token}"}
        assert _wait_for(f"{base}/healthz").status_code == 200
        engines = [pid for pid in _descendants(proc.pid) if _comm(pid) == "noida-db"]
        assert len(engines) == 1
        os.kill(engines[0], signal.SIGKILL)
        deadline = time.monotonic() + 90
        wrote = None
        while time.monotonic() < deadline:
            wrote = requests.post(
                f"{base}/api/v1/subjects/alice/episodes",
                json={"text": "written after the engine came back"},
                headers=headers,
                timeout=60,
            )
            if wrote.status_code == 201:
                break
            time.sleep(0.5)
        assert wrote is not None and wrote.status_code == 201, wrote.text if wrote is not None else "no answer"
        assert proc.poll() is None, "".join(output)
        said = "".join(output)
        assert "the engine (noida-db) exited unexpectedly (code -9); restarting it in 1 s" in said
        assert "the engine is back" in said
        assert _wait_for(f"{base}/healthz").status_code == 200

        workers = [pid for pid in _descendants(proc.pid) if "worker" in _cmdline(pid) and "celery" in _cmdline(pid)]
        assert len(workers) == 1
        os.kill(workers[0], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while "[atlas] celery worker restarted" not in "".join(output) and time.monotonic() < deadline:
            time.sleep(0.2)
        said = "".join(output)
        assert "[atlas] celery worker exited with code -9; restarting it in 1 s" in said
        assert "[atlas] celery worker restarted" in said
        again = [pid for pid in _descendants(proc.pid) if "worker" in _cmdline(pid) and "celery" in _cmdline(pid)]
        assert len(again) == 1 and again != workers
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=10)
    assert proc.returncode == 0, "".join(output)
    assert "[atlas] stopped" in "".join(output)


def test_a_child_that_keeps_dying_stops_the_stack_with_one_line(monkeypatch, capsys) -> None:
    """Back-off doubles from 1 s up to 30 s; five deaths within five minutes give up, naming the child."""
    from atlas_site import run

    monkeypatch.setattr(run, "RESTART_MAX_DELAY", 0.05)
    stack = run.Stack({})
    stack.start("flaky child", [sys.executable, "-c", "raise SystemExit(3)"])
    deadline = time.monotonic() + 60
    gave_up = None
    while gave_up is None and time.monotonic() < deadline:
        gave_up = stack.supervise()
        time.sleep(0.02)
    out = capsys.readouterr().out.splitlines()
    assert gave_up == "flaky child"
    assert out.count("[atlas] flaky child exited with code 3; restarting it in 0 s") == 4
    assert sum(line.startswith("[atlas] flaky child restarted (pid ") for line in out) == 4
    assert out[-1] == (
        "[atlas] flaky child died 5 times in 5 minutes (last exit code 3); stopping everything. "
        "Its output above says why; start again with `make run`"
    )
