"""/healthz: 200 when every dependency answers, 503 naming the part that failed."""

from __future__ import annotations

import json
import time

import pytest

from atlas_site.elastic.client import clients_reset
from tests.processes import paused


@pytest.fixture
def reset_clients():
    yield
    clients_reset()


def test_healthy(client, atlas_es, db) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = json.loads(response.content)
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["elasticsearch"] == {
        "ok": True,
        "cluster_status": body["checks"]["elasticsearch"]["cluster_status"],
        "licence": "trial",
        "dls_available": True,
        "isolation_mode": "dls",
    }
    assert body["checks"]["broker"]["ok"] is True


def test_elasticsearch_down_is_a_503_naming_it(client, settings, atlas_es, reset_clients, db) -> None:
    from embedded_es.engine import free_port

    settings.ATLAS_ES_URL = f"http://127.0.0.1:{free_port()}"
    clients_reset()
    response = client.get("/healthz")
    assert response.status_code == 503
    body = json.loads(response.content)
    assert body["status"] == "unavailable"
    assert body["checks"]["elasticsearch"]["ok"] is False
    assert "Elasticsearch is unreachable" in body["checks"]["elasticsearch"]["error"]
    assert body["checks"]["database"]["ok"] is True


@pytest.mark.embedded_only(reason="needs a cluster on a Basic licence: the embedded engine reports one on request")
def test_licence_without_dls_is_a_503(client, settings, reset_clients, db) -> None:
    from embedded_es import EmbeddedElasticsearch

    with EmbeddedElasticsearch(license_type="basic") as server:
        settings.ATLAS_ES_URL, settings.ATLAS_ES_PASSWORD = server.url, server.password
        clients_reset()
        response = client.get("/healthz")
        body = json.loads(response.content)
        assert response.status_code == 503
        assert body["checks"]["elasticsearch"]["licence"] == "basic"
        assert body["checks"]["elasticsearch"]["dls_available"] is False
        assert "no document level security" in body["checks"]["elasticsearch"]["error"]
        settings.ATLAS_ISOLATION_MODE = "app-filter"
        assert client.get("/healthz").status_code == 200


def test_broker_down_is_a_503_naming_it(client, settings, atlas_es, db) -> None:
    from atlas_site.celery import app

    previous = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        response = client.get("/healthz")
    finally:
        app.conf.broker_url = previous
    body = json.loads(response.content)
    assert response.status_code == 503
    assert body["checks"]["broker"]["ok"] is False
    assert body["checks"]["elasticsearch"]["ok"] is True


@pytest.mark.embedded_only(reason="stalls the embedded engine's process (SIGSTOP)")
def test_a_stalled_elasticsearch_is_a_503_within_the_health_timeout(client, settings, reset_clients, db) -> None:
    """The engine stopped (SIGSTOP: the port accepts, nothing answers). /healthz used to wait for the
    client's request timeout three times over (10 s × 3 tries); it answers 503 within its own timeout."""
    from embedded_es import EmbeddedElasticsearch

    with EmbeddedElasticsearch() as server:
        settings.ATLAS_ES_URL, settings.ATLAS_ES_PASSWORD = server.url, server.password
        settings.ATLAS_HEALTH_TIMEOUT = 1.5
        clients_reset()
        assert client.get("/healthz").status_code == 200
        engine = server.engine_pid()
        with paused(engine):
            start = time.monotonic()
            response = client.get("/healthz")
            elapsed = time.monotonic() - start
        body = json.loads(response.content)
        assert response.status_code == 503
        assert body["checks"]["elasticsearch"]["ok"] is False
        assert (
            "Elasticsearch is unreachable while trying to check cluster health"
            in body["checks"]["elasticsearch"]["error"]
        )
        assert elapsed < 1.5 + 1.5, f"/healthz took {elapsed:.1f} s with a 1.5 s health timeout"
        assert body["checks"]["database"]["ok"] is True
