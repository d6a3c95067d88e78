"""schemathesis against the live schema: generated requests for every operation, valid and invalid.

Each operation is called with data generated from the schema, and with data that breaks it (which
must be refused with a 4xx), through the live server, with a tenant service token that may do everything. Checked on every answer: no 5xx,
the status code is one the schema documents, the content type and body match the schema.
Seeded and bounded, so CI is reproducible.
"""

from __future__ import annotations

import base64
import itertools
import uuid

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis import checks as sc

from tenants import services, tokens
from tenants.models import ApiKeyCredential
from tests.bad_inputs import MALFORMED_CURSORS, NESTING_DEPTHS, b64_json, nested_json

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


# Fuzzers for what the schema cannot describe: page cursors the API never handed out, and JSON bodies
# nested past any request's depth (up to 50,000 levels), added to generated cases of every operation.
_B64 = st.binary(max_size=200).map(lambda raw: base64.urlsafe_b64encode(raw).decode())
_JSON_CURSORS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=40)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=2),
    max_leaves=6,
).map(lambda value: b64_json(value))
CURSORS = st.one_of(st.sampled_from([c for _, c in MALFORMED_CURSORS]), _B64, _JSON_CURSORS, st.text(max_size=300))
DEPTHS = st.one_of(st.integers(33, 2_000), st.sampled_from([*NESTING_DEPTHS]))


def _has_cursor(operation) -> bool:
    return any(p.name == "cursor" and p.location == "query" for p in operation.query)


@pytest.fixture
def unthrottled(settings):
    settings.ATLAS_API_RATE = "100000/min"  # the fuzzer's pace is not what is under test


def test_malformed_cursors_and_deep_bodies_on_every_operation_are_4xx(api_schema, unthrottled) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert sum(_has_cursor(op) for op in operations) == 4  # the four listings, the review queue among them
    headers = dict(api_schema.config.headers or {})
    failures: list[str] = []
    for operation in operations:

        @settings(
            max_examples=4, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
        )
        @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE), cursor=CURSORS, depth=DEPTHS)
        def call(case, cursor, depth) -> None:
            kwargs = case.as_transport_kwargs(base_url=api_schema.config.base_url, headers=headers)
            # A listing gets the cursor alone (its other generated parameters may be refused first).
            other = {} if _has_cursor(operation) else (kwargs.get("params") or {})  # noqa: B023
            kwargs["params"] = {**other, "cursor": cursor}
            response = requests.request(**kwargs, timeout=60)
            assert response.status_code < 500, (kwargs["url"], cursor, response.text[:300])
            # On a listing: a page (a well-formed cursor, e.g. [0, "a"]), a 400 naming the cursor, or a 404 for
            # a generated subject that does not exist.
            if _has_cursor(operation):  # noqa: B023
                assert response.status_code in (200, 400, 404), response.text[:300]
                if response.status_code == 400:
                    assert response.json()["errors"][0]["field"] == "cursor", response.text[:300]
            kwargs.pop("json", None)
            kwargs["params"] = {k: v for k, v in kwargs["params"].items() if k != "cursor"}
            kwargs["data"] = nested_json(depth)
            kwargs["headers"] = {**headers, "Content-Type": "application/json"}  # no generated Idempotency-Key
            response = requests.request(**kwargs, timeout=60)
            assert response.status_code < 500, (kwargs["url"], depth, response.text[:300])
            # A route that reads a body never accepts it: a 400 naming it, unless refused before reading (404…).
            if operation.body:  # noqa: B023
                assert response.status_code >= 400, (kwargs["url"], depth, response.text[:300])
            if operation.body and response.status_code == 400:  # noqa: B023
                assert response.json()["errors"][0]["field"] == "body", (kwargs["url"], response.text[:300])

        try:
            call()
        except Exception as exc:
            failures.append(f"{operation.method.upper()} {operation.path}: {str(exc)[:600]}")
    assert failures == [], "\n\n".join(failures)
