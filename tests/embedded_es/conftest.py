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
