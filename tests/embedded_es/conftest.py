"""Helpers of the embedded_es suite (the ``cluster`` and ``admin`` fixtures come from the root conftest)."""

from __future__ import annotations

import pytest
from elasticsearch import Elasticsearch

from conftest import REAL_CLUSTER_URL, Cluster  # noqa: F401  (re-exported for the tests)

needs_embedded = pytest.mark.skipif(
    bool(REAL_CLUSTER_URL), reason="restarts or inspects the embedded server; not possible on a real cluster"
)


def mint_key(admin: Elasticsearch, name: str, role_descriptors: dict, **kwargs) -> str:
    return admin.security.create_api_key(name=name, role_descriptors=role_descriptors, **kwargs)["encoded"]


@pytest.fixture(scope="session")
def adv_world(cluster: Cluster):
    """The adversarial suite's planted indices and attacker keys (tests/embedded_es/adversarial.py)."""
    from .adversarial import AdvWorld

    world = AdvWorld.start(cluster.url, cluster.username, cluster.password)
    try:
        yield world
    finally:
        world.stop()


@pytest.fixture
def adv(adv_world):
    """The world, put back as planted when a test changed it (so one broken invariant does not cascade)."""
    yield adv_world
    adv_world.restore_if_changed()
