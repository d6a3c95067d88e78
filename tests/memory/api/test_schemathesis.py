"""schemathesis against the live schema: generated requests for every operation, valid and invalid.

Each operation is called with data generated from the schema, and with data that breaks it (which
must be refused with a 4xx), through the live server, with a tenant service token that may do everything. Checked on every answer: no 5xx,
the status code is one the schema documents, the content type and body match the schema.
Seeded and bounded, so CI is reproducible.
"""

from __future__ import annotations

import itertools
import uuid

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis import checks as sc

from tenants import services, tokens
from tenants.models import ApiKeyCredential

pytestmark = pytest.mark.django_db(transaction=True)
CHECKS = [
    sc.not_a_server_error,
    sc.status_code_conformance,
    sc.content_type_conformance,
    sc.response_schema_conformance,
]


@pytest.fixture
def api_schema(atlas_server, atlas_es):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"st-{uuid.uuid4().hex[:8]}", name="schemathesis", actor="test")
    for name in ("alice", "bob"):
        services.subject_create(tenant=tenant, external_id=name, actor="test")
    secret = tokens.token_create(tenant=tenant, name="st", scopes="read,write,forget", actor="test").secret
    schema = schemathesis.openapi.from_url(f"{atlas_server.url}/api/v1/schema/?format=json")
    schema.config.update(base_url=atlas_server.url, headers={"Authorization": f"Bearer {secret}"})
    return schema


def test_every_operation_answers_as_documented(api_schema) -> None:
    # Driven through Hypothesis directly: schemathesis's pytest plugin (from_fixture) does not run on pytest 9.
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 20
    failures: list[str] = []
    for operation, mode in itertools.product(operations, (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)):
        checks = CHECKS if mode is GenerationMode.POSITIVE else [*CHECKS, sc.negative_data_rejection]

        @settings(
            max_examples=12, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def call(case) -> None:
            case.call_and_validate(checks=checks, timeout=60)  # noqa: B023  (called before the loop moves on)

        try:
            call()
        except Unsatisfiable:
            # Nothing in this operation's schema can be broken (its only inputs are free-form strings).
            assert mode is GenerationMode.NEGATIVE, operation.path
        except Exception as exc:  # a check failed: keep going, report every operation at the end
            failures.append(f"{mode.value} {operation.method.upper()} {operation.path}: {str(exc)[:600]}")
    assert failures == [], "\n\n".join(failures)
