"""Fixtures for the embedded_es suite.

By default each session starts one embedded_es. With ``ATLAS_ES_URL`` (plus
``ATLAS_ES_USERNAME``/``ATLAS_ES_PASSWORD``) the same tests run against that
real cluster instead; tests that restart or kill the server skip there.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from embedded_es import EmbeddedElasticsearch

REAL_CLUSTER_URL = os.environ.get("ATLAS_ES_URL")
needs_embedded = pytest.mark.skipif(
    bool(REAL_CLUSTER_URL), reason="restarts or inspects the embedded server; not possible on a real cluster"
)


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
            REAL_CLUSTER_URL,
            os.environ.get("ATLAS_ES_USERNAME", "elastic"),
            os.environ["ATLAS_ES_PASSWORD"],
            None,
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


@pytest.fixture
def index_name(admin: Elasticsearch) -> Iterator[str]:
    """A fresh index name per test, deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    yield name
    admin.options(ignore_status=404).indices.delete(index=f"{name}*")


def mint_key(admin: Elasticsearch, name: str, role_descriptors: dict, **kwargs) -> str:
    return admin.security.create_api_key(name=name, role_descriptors=role_descriptors, **kwargs)["encoded"]
