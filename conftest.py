"""Root test configuration: test environment defaults, and one Elasticsearch for the session.

By default the session starts one embedded_es. With ``ATLAS_ES_URL`` (plus
``ATLAS_ES_USERNAME``/``ATLAS_ES_PASSWORD``) the suite runs against that real
cluster instead; tests that restart or inspect the embedded server skip there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from embedded_es import EmbeddedElasticsearch

# The live server and the browser harness, for every test package that asks for their fixtures.
pytest_plugins = ["tests.live_server", "tests.browser"]

REAL_CLUSTER_URL = os.environ.get("ATLAS_ES_URL")


class Cluster:
    def __init__(self, url: str, username: str, password: str, server: EmbeddedElasticsearch | None) -> None:
        self.url = url
        self.username = username
        self.password = password
        self.server = server

    def admin(self) -> Elasticsearch:
        return Elasticsearch(self.url, basic_auth=(self.username, self.password), request_timeout=30)

    def with_key(self, encoded: str) -> Elasticsearch:
        return Elasticsearch(self.url, api_key=encoded, request_timeout=30)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    if REAL_CLUSTER_URL:
        yield Cluster(
            REAL_CLUSTER_URL, os.environ.get("ATLAS_ES_USERNAME", "elastic"), os.environ["ATLAS_ES_PASSWORD"], None
        )
        return
    server = EmbeddedElasticsearch().start()
    try:
        yield Cluster(server.url, "elastic", server.password, server)
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def admin(cluster: Cluster) -> Elasticsearch:
    return cluster.admin()


@pytest.fixture(scope="session")
def atlas_es(cluster: Cluster) -> Cluster:
    """Point the application at the session's cluster, with indices bootstrapped."""
    from django.conf import settings

    from memory.elastic.bootstrap import cluster_bootstrap
    from memory.elastic.client import clients_reset

    settings.ATLAS_ES_URL = cluster.url
    settings.ATLAS_ES_USERNAME = cluster.username
    settings.ATLAS_ES_PASSWORD = cluster.password
    clients_reset()
    cluster_bootstrap()
    return cluster
