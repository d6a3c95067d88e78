"""Fixtures for the tenancy tests: tenants and subjects with real keys on the session's cluster."""

from __future__ import annotations

import pytest

from memory.elastic.indices import alias_name
from tenants import selectors, services
from tenants.models import ApiKeyCredential, MemorySubject, Tenant


@pytest.fixture
def writer(atlas_es, db):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    return selectors.writer_es_client()


@pytest.fixture
def acme(atlas_es, db) -> Tenant:
    return services.tenant_create(slug="acme", name="Acme", actor="test")


@pytest.fixture
def globex(atlas_es, db) -> Tenant:
    return services.tenant_create(slug="globex", name="Globex", actor="test")


@pytest.fixture
def alice(acme) -> MemorySubject:
    return services.subject_create(tenant=acme, external_id="alice", actor="test")


@pytest.fixture
def bob(acme) -> MemorySubject:
    return services.subject_create(tenant=acme, external_id="bob", actor="test")


@pytest.fixture
def zed(globex) -> MemorySubject:
    return services.subject_create(tenant=globex, external_id="zed", actor="test")


@pytest.fixture
def memories(writer, acme, globex, alice, bob, zed) -> dict[str, str]:
    """One semantic fact per subject and one catalog entry per tenant, written by the service writer.

    Returns {document id: owner description}. Ids are unique per test so the
    shared indices of the session do not mix tests.
    """
    import uuid

    run = uuid.uuid4().hex[:8]
    docs = {
        f"{run}-alice": ("semantic", acme, alice),
        f"{run}-bob": ("semantic", acme, bob),
        f"{run}-zed": ("semantic", globex, zed),
        f"{run}-acme-catalog": ("catalog", acme, None),
        f"{run}-globex-catalog": ("catalog", globex, None),
    }
    for doc_id, (memory_type, tenant, subject) in docs.items():
        body = {"tenant_id": str(tenant.es_id), "text": f"memory {doc_id}"}
        if subject is not None:
            body["user_id"] = str(subject.es_id)
        writer.index(index=alias_name(memory_type), id=doc_id, document=body, refresh="wait_for")
    return {k: k.split("-", 1)[1] for k in docs}


def visible_ids(client, run_ids) -> set[str]:
    """Ids among ``run_ids`` the client can find in every memory index (no application filter at all)."""
    indices = ",".join(alias_name(t) for t in ("semantic", "catalog", "episodic", "procedural", "archive"))
    hits = client.search(index=indices, query={"ids": {"values": list(run_ids)}}, size=100)["hits"]["hits"]
    return {h["_id"] for h in hits}
