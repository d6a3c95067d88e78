"""Celery's tasks measured by a real worker process (the embedded filesystem broker, or Redis when REDIS_URL
is set): the worker writes its metrics to PROMETHEUS_MULTIPROC_DIR, and the exposition there counts each
task by state exactly; the queue depth is read from the broker."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from atlas_site.celery import app
from atlas_site.observability.celery import QueueDepthCollector, _depth
from memory.services.consolidation_lease import consolidation_lease_acquire, consolidation_lease_release
from memory.tasks import consolidation_subject_task, memories_usage_record_task
from tenants import services
from tenants.tasks import credentials_reconcile_task
from tests.atlas_site.test_celery_worker import _worker_database_url

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def measured_worker(atlas_es, tmp_path):
    directory = tmp_path / "metrics"
    directory.mkdir()
    # Tasks other tests queued and no worker ran (use-count bumps of their recalls) are not this test's.
    with app.connection_for_write() as conn, contextlib.suppress(FileNotFoundError):  # none queued yet
        conn.default_channel.queue_purge(app.conf.task_default_queue)
    env = {
        **os.environ,
        "DATABASE_URL": _worker_database_url(),
        "ATLAS_ES_URL": atlas_es.url,
        "ATLAS_ES_USERNAME": atlas_es.username,
        "ATLAS_ES_PASSWORD": atlas_es.password,
        "PROMETHEUS_MULTIPROC_DIR": str(directory),
        # An LLM the worker never reaches (the retry test's run is refused before asking), and a retry
        # far enough away that the test ends first.
        "ATLAS_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "ATLAS_LLM_MODEL": "never-asked",
        "ATLAS_CONSOLIDATION_RETRY_SECONDS": "600",
    }
    command = [sys.executable, "-m", "celery", "-A", "atlas_site", "worker", "--pool=solo", "--loglevel=WARNING"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"metrics-{os.getpid()}@%h"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield directory
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        with app.connection_for_write() as conn, contextlib.suppress(FileNotFoundError):  # a retry it gave back
            conn.default_channel.queue_purge(app.conf.task_default_queue)


def _value(directory: Path, name: str, labels: dict[str, str]) -> float:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    return registry.get_sample_value(name, labels) or 0.0


def _eventually(directory: Path, name: str, labels: dict[str, str], expected: float) -> float:
    """The worker counts a task right after storing its result (task_postrun): wait for it briefly."""
    deadline = time.monotonic() + 20
    while (value := _value(directory, name, labels)) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_counts_successes_and_failures_per_task(atlas_es, measured_worker) -> None:
    services.tenant_create(slug=f"celery-{uuid.uuid4().hex[:6]}", name="Celery metrics", actor="test")
    for _ in range(2):
        credentials_reconcile_task.delay().get(timeout=120)
    ok = {"task": "tenants.credentials_reconcile", "state": "SUCCESS"}
    assert _eventually(measured_worker, "atlas_celery_tasks_total", ok, 2) == 2
    assert _value(measured_worker, "atlas_celery_task_duration_seconds_count", {"task": ok["task"]}) == 2
    failing = memories_usage_record_task.delay("not a list of targets")
    with pytest.raises(ValueError):
        failing.get(timeout=120)
    failed = {"task": "memory.usage_record", "state": "FAILURE"}
    assert _eventually(measured_worker, "atlas_celery_tasks_total", failed, 1) == 1
    assert _value(measured_worker, "atlas_celery_tasks_total", {**failed, "state": "SUCCESS"}) == 0
    # The worker's engine calls are measured in its own process's files too.
    assert _value(measured_worker, "atlas_engine_request_duration_seconds_count", {"operation": "_security"}) >= 1


@pytest.mark.django_db(transaction=True)
def test_a_task_that_retries_is_counted_as_a_retry(atlas_es, measured_worker) -> None:
    """A subject's consolidation refused because another run holds its lease retries later (memory/tasks.py)."""
    services.shared_credential_ensure(kind="writer", actor="test")
    tenant = services.tenant_create(slug=f"retry-{uuid.uuid4().hex[:6]}", name="Retries", actor="test")
    subject = services.subject_create(tenant=tenant, external_id="maya", actor="test")
    assert consolidation_lease_acquire(subject=subject, owner="another-run")
    consolidation_subject_task.delay(subject.pk)
    retried = {"task": "memory.consolidate_subject", "state": "RETRY"}
    assert _eventually(measured_worker, "atlas_celery_tasks_total", retried, 1) == 1
    assert _value(measured_worker, "atlas_celery_tasks_total", {**retried, "state": "SUCCESS"}) == 0
    consolidation_lease_release(subject=subject, owner="another-run")


def test_queue_depth_counts_the_messages_waiting(atlas_es) -> None:
    queue = f"metrics-depth-{uuid.uuid4().hex[:6]}"  # a queue no worker reads
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        assert _depth(channel, queue) == 0
        for _ in range(3):
            credentials_reconcile_task.apply_async(queue=queue, connection=conn)
        assert _depth(channel, queue) == 3
        channel.queue_purge(queue)
        assert _depth(channel, queue) == 0
    families = list(QueueDepthCollector(app).collect())
    assert [family.name for family in families] == ["atlas_celery_queue_depth"]
    assert [sample.labels for sample in families[0].samples] == [{"queue": "celery"}]
