"""Fixtures for the memory engine tests: a tenant with subjects, keys and the writer, on the session cluster."""

from __future__ import annotations

import uuid

import pytest

from tenants import services
from tenants.models import ApiKeyCredential, MemorySubject, Tenant


@pytest.fixture
def tenant(atlas_es, db) -> Tenant:
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    return services.tenant_create(slug=f"t-{uuid.uuid4().hex[:8]}", name="Memory tests", actor="test")


@pytest.fixture
def maya(tenant) -> MemorySubject:
    return services.subject_create(tenant=tenant, external_id="maya", actor="test")


@pytest.fixture
def tom(tenant) -> MemorySubject:
    return services.subject_create(tenant=tenant, external_id="tom", actor="test")


@pytest.fixture
def other_tenant_subject(atlas_es, db) -> MemorySubject:
    other = services.tenant_create(slug=f"o-{uuid.uuid4().hex[:8]}", name="Other", actor="test")
    return services.subject_create(tenant=other, external_id="maya", actor="test")
