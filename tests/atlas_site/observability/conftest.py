"""Helpers for the observability tests: reading a metric's value from this process's registry (the live
server runs in a thread of the test process) and from /metrics' text."""

from __future__ import annotations

import uuid

import pytest
import requests
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from tenants import services, tokens
from tenants.models import ApiKeyCredential

METRICS_TOKEN = "metrics-test-token-0123456789"  # noqa: S105 - a test credential


def sample(name: str, **labels: str) -> float:
    """A sample's value now (0 when the series does not exist yet)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def scraped(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a /metrics answer: (name, sorted labels) → value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


class Api:
    def __init__(self, base: str, token: str) -> None:
        self.base = base + "/api/v1/"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def __call__(self, method: str, path: str, **kwargs) -> requests.Response:
        return self.session.request(method, self.base + path, timeout=60, **kwargs)


@pytest.fixture
def agent_api(atlas_server, atlas_es):
    """A fresh tenant with subject alice and a service token; returns (tenant, Api)."""

    def make(prefix: str = "obs"):
        services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
        tenant = services.tenant_create(slug=f"{prefix}-{uuid.uuid4().hex[:8]}", name="Observability", actor="test")
        services.subject_create(tenant=tenant, external_id="alice", actor="test")
        secret = tokens.token_create(tenant=tenant, name="svc", scopes="read,write", actor="test").secret
        return tenant, Api(atlas_server.url, secret)

    return make
