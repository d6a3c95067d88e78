"""Several processes, one set of metrics: with PROMETHEUS_MULTIPROC_DIR, what two processes count is
summed by /metrics' exposition in a third (as uvicorn's workers and a Celery worker's pool do)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.atlas_site.observability.conftest import scraped

ROOT = Path(__file__).resolve().parents[3]
ENV = {
    "DJANGO_SETTINGS_MODULE": "atlas_site.settings",
    "DJANGO_SECRET_KEY": "multiprocess-test",
    "ATLAS_ENCRYPTION_KEYS": "9CcI2YIb7ugLd6R0H0w1wu8S9ls0dI0bOBV3zEmDbBM=",
    "ATLAS_ENV_FILE": os.devnull,
}
COUNT = """
import django; django.setup()
from atlas_site.observability import metrics as m
for _ in range({n}):
    m.HTTP_REQUESTS.labels("healthz", "GET", "200").inc()
    m.HTTP_LATENCY.labels("healthz", "GET", "200").observe(0.003)
m.RECALLS.labels("acme").inc({n})
print("pid", __import__("os").getpid())
"""
EXPOSE = """
import sys, django; django.setup()
from atlas_site.observability.http import metrics_exposition
sys.stdout.write(metrics_exposition(queue_depth=False).decode())
"""


def _run(code: str, directory: Path, data_dir: Path) -> str:
    env = {**os.environ, **ENV, "PROMETHEUS_MULTIPROC_DIR": str(directory), "ATLAS_DATA_DIR": str(data_dir)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_processes_writing_one_directory_are_summed(tmp_path) -> None:
    directory = tmp_path / "metrics"
    directory.mkdir()
    first = _run(COUNT.format(n=3), directory, tmp_path)
    second = _run(COUNT.format(n=4), directory, tmp_path)
    assert first != second  # two processes, two pids
    assert len(list(directory.glob("counter_*.db"))) == 2 and len(list(directory.glob("histogram_*.db"))) == 2
    samples = scraped(_run(EXPOSE, directory, tmp_path))
    labels = (("method", "GET"), ("route", "healthz"), ("status", "200"))
    assert samples[("atlas_http_requests_total", labels)] == 7
    assert samples[("atlas_http_request_duration_seconds_count", labels)] == 7
    assert samples[("atlas_http_request_duration_seconds_bucket", (("le", "0.005"), *labels))] == 7
    assert samples[("atlas_recalls_total", (("tenant", "acme"),))] == 7
    # Only what the processes wrote: no per-process collectors (gc, process) in multiprocess mode.
    assert not any(name.startswith("python_gc") for name, _ in samples)
