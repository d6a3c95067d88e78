"""The job wiring with a real Celery worker process: a task queued here runs there, against the same
database and cluster (embedded filesystem broker, or Redis when REDIS_URL is set)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from atlas_site.elastic import keys as es_keys
from tenants import selectors, services
from tenants.tasks import credentials_reconcile_task

ROOT = Path(__file__).resolve().parents[2]


def _worker_database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    if connection.vendor == "postgresql":
        auth = settings["USER"] + (f":{settings['PASSWORD']}" if settings["PASSWORD"] else "")
        return f"postgres://{auth}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{settings['NAME']}"
    pytest.fail(f"no worker database URL for {connection.vendor}")


@pytest.fixture
def worker(atlas_es):
    env = {
        **os.environ,
        "DATABASE_URL": _worker_database_url(),
        "ATLAS_ES_URL": atlas_es.url,
        "ATLAS_ES_USERNAME": atlas_es.username,
        "ATLAS_ES_PASSWORD": atlas_es.password,
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "atlas_site",
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"test-{os.getpid()}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


@pytest.mark.django_db(transaction=True)
def test_reconcile_task_runs_on_a_real_worker(atlas_es, worker) -> None:
    tenant = services.tenant_create(slug="celery-co", name="Celery Co", actor="test")
    subject = services.subject_create(tenant=tenant, external_id="worker-bee", actor="test")
    broken = selectors.credential_active(kind="subject", tenant=tenant, subject=subject)
    es_keys.api_keys_invalidate(ids=[broken.es_key_id])
    report = credentials_reconcile_task.delay().get(timeout=120)
    replacement = selectors.credential_active(kind="subject", tenant=tenant, subject=subject)
    assert replacement.es_key_id != broken.es_key_id
    assert replacement.es_key_id in report["replaced"]
    assert es_keys.api_key_is_valid(key_id=replacement.es_key_id)
