"""The REST world of the interface tests: Maya's scoped memories written through the API, Tom's look-alikes
(the same scope, another subject) and a catalog entry, with a service token."""

from __future__ import annotations

import uuid

import pytest
import requests

from tenants import services, tokens
from tenants.models import ApiKeyCredential
from tests.memory.scoping.table import WRITES


@pytest.fixture
def world(atlas_server, atlas_es, transactional_db, settings):
    settings.ATLAS_USAGE_RECORDING = "off"
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"scope-{uuid.uuid4().hex[:8]}", name="scope", actor="test")
    for name in ("maya", "tom"):
        services.subject_create(tenant=tenant, external_id=name, actor="test")
    token = tokens.token_create(tenant=tenant, name="svc", scopes="read,write,forget", actor="test").secret
    base = f"{atlas_server.url}/api/v1/"
    headers = {"Authorization": f"Bearer {token}"}
    ids = {}
    for key, (route, body) in WRITES.items():
        written = requests.post(f"{base}subjects/maya/{route}", json=body, headers=headers, timeout=60)
        assert written.status_code == 201, written.text
        ids[key] = written.json()["id"]
    for route, body in WRITES.values():  # Tom's look-alikes: the same scope, another subject
        assert requests.post(f"{base}subjects/tom/{route}", json=body, headers=headers, timeout=60).status_code == 201
    entry = {"title": "Launch checklist", "text": "The tenant's launch checklist"}
    assert requests.post(f"{base}catalog", json=entry, headers=headers, timeout=60).status_code == 201
    return {"url": atlas_server.url, "base": base, "headers": headers, "token": token, "tenant": tenant, "ids": ids}


def found_keys(world, found_ids) -> set[str]:
    """The table keys of the ids found, asserting none is Tom's or the catalog's."""
    by_id = {memory_id: key for key, memory_id in world["ids"].items()}
    stray = [i for i in found_ids if i not in by_id]
    assert not stray, stray  # Tom's and the catalog's never come back
    return {by_id[i] for i in found_ids}
