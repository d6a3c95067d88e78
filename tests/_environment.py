"""Test environment defaults, loaded as a pytest plugin (``-p tests._environment``) so they are in
place before pytest-django imports the settings."""

from __future__ import annotations

import os
import tempfile

import pytest

from tests.external_cluster import external_cluster_from_environment, run_id_ensure, run_prefix

_TEST_DATA_DIR = tempfile.mkdtemp(prefix="atlas-test-")
os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("ATLAS_ENCRYPTION_KEYS", "9CcI2YIb7ugLd6R0H0w1wu8S9ls0dI0bOBV3zEmDbBM=")
os.environ.setdefault("ATLAS_DATA_DIR", _TEST_DATA_DIR)
os.environ.setdefault("ATLAS_EMAIL_VERIFICATION", "mandatory")
os.environ["ATLAS_ENV_FILE"] = os.devnull
os.environ.setdefault("ATLAS_STATIC_FROM_APPS", "true")
os.environ["DJANGO_EMAIL_BACKEND"] = "django.core.mail.backends.locmem.EmailBackend"
os.environ.setdefault("ATLAS_ES_INDEX_PREFIX", f"atlas-test-{os.getpid()}")
# A Redis cache outlives the session: a fresh prefix keeps rate limits and such from leaking between runs.
os.environ["ATLAS_CACHE_KEY_PREFIX"] = f"atlas-test-{os.getpid()}-{os.urandom(4).hex()}"

# pytest-xdist workers share the Redis of a PostgreSQL/Redis run (.ci/run): each worker gets a database
# of its own (gw0 the configured one, gw1 the one below, …), so a worker's Celery test consumes its own
# tasks only and cached rate limits never meet.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw") and os.environ.get("REDIS_URL"):
    _base, _, _db = os.environ["REDIS_URL"].rpartition("/")
    if _db.isdigit():
        os.environ["REDIS_URL"] = f"{_base}/{(int(_db) - int(_worker[2:])) % 16}"
# The same for the embedded filesystem broker: the workers inherit the controller's ATLAS_DATA_DIR, so
# without a folder each, one worker's Celery test would take the other's tasks (and results).
if _worker.startswith("gw"):
    os.environ["ATLAS_BROKER_DIR"] = os.path.join(os.environ["ATLAS_DATA_DIR"], f"broker-{_worker}")

# ATLAS_TEST_ES_URL (tests/external_cluster.py): the application, and every process a test starts, talks to
# that cluster under this run's and this worker's index prefix (not one a developer set: the run removes
# what is under it). Without the variable nothing changes: the root conftest starts an embedded_es.
try:
    EXTERNAL_CLUSTER = external_cluster_from_environment()
    _EXTERNAL_CLUSTER_PROBLEM = None
except ValueError as exc:
    EXTERNAL_CLUSTER, _EXTERNAL_CLUSTER_PROBLEM = None, str(exc)
if EXTERNAL_CLUSTER is not None:
    os.environ["ATLAS_ES_INDEX_PREFIX"] = run_prefix(run_id=run_id_ensure(), worker=_worker)
    os.environ["ATLAS_ES_URL"] = EXTERNAL_CLUSTER.url
    os.environ["ATLAS_ES_USERNAME"] = EXTERNAL_CLUSTER.username
    os.environ["ATLAS_ES_PASSWORD"] = EXTERNAL_CLUSTER.password
    os.environ["ATLAS_ES_CA_CERTS"] = EXTERNAL_CLUSTER.ca_certs or ""


def pytest_configure(config: pytest.Config) -> None:
    if _EXTERNAL_CLUSTER_PROBLEM:
        raise pytest.UsageError(_EXTERNAL_CLUSTER_PROBLEM)
