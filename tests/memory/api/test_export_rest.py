"""``GET /api/v1/subjects/{s}/export`` through real HTTP: the documented format, streamed, one subject's
memories only, the read scope, and a caller's bad query refused."""

from __future__ import annotations

import json
import uuid

import pytest
import requests
from jsonschema import Draft202012Validator

from memory.portable import export_schema
from tenants import services, tokens
from tenants.models import ApiKeyCredential

pytestmark = pytest.mark.django_db(transaction=True)


def _get(base: str, token: str, path: str) -> requests.Response:
    return requests.get(f"{base}/api/v1/{path}", headers={"Authorization": f"Bearer {token}"}, timeout=60, stream=True)


@pytest.fixture
def world(atlas_server, atlas_es):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"exp-{uuid.uuid4().hex[:8]}", name="Export tests", actor="test")
    alice = services.subject_create(tenant=tenant, external_id="alice", actor="test")
    services.subject_create(tenant=tenant, external_id="bob", actor="test")
    return {
        "base": atlas_server.url,
        "tenant": tenant,
        "alice": alice,
        "svc": tokens.token_create(tenant=tenant, name="svc", scopes="read,write", actor="test").secret,
        "writer": tokens.token_create(tenant=tenant, name="w", scopes="write", actor="test").secret,
        "own": tokens.token_create(tenant=tenant, subject=alice, name="alice", scopes="read", actor="test").secret,
    }


def test_export_streams_the_documented_lines_of_one_subject(world) -> None:
    base, svc = world["base"], world["svc"]
    post = lambda path, body: requests.post(  # noqa: E731
        f"{base}/api/v1/{path}", json=body, headers={"Authorization": f"Bearer {svc}"}, timeout=60
    )
    said = post("subjects/alice/episodes", {"text": "I moved to Lisbon last month"}).json()
    old = post("subjects/alice/facts", {"text": "Lives in Porto", "fact_type": "identity"}).json()
    new = post(
        "subjects/alice/facts",
        {
            "text": "Lives in Lisbon",
            "fact_type": "identity",
            "supersedes": [old["id"]],
            "source_episodes": [said["id"]],
        },
    ).json()
    post("subjects/bob/facts", {"text": "Bob's fact"})

    response = _get(base, svc, "subjects/alice/export")
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert response.headers["Cache-Control"] == "no-store"
    lines = [json.loads(line) for line in response.iter_lines() if line]
    header, records = lines[0], lines[1:]
    assert (header["format"], header["version"], header["subject"]) == ("atlas-memory-export", 1, "alice")
    validator = Draft202012Validator(export_schema())
    assert [list(validator.iter_errors(line)) for line in lines] == [[]] * len(lines)
    assert [(r["type"], r["text"]) for r in records] == [
        ("episodic", "I moved to Lisbon last month"),
        ("semantic", "Lives in Porto"),
        ("semantic", "Lives in Lisbon"),
    ]
    assert {r["subject"] for r in records} == {"alice"}
    assert records[1]["superseded_by"] == new["id"] and records[2]["supersedes"] == [old["id"]]
    assert records[2]["source_episodes"] == [said["id"]]

    # A subject token exports its own subject, and another subject is the same 404 as a missing one.
    assert _get(base, world["own"], "subjects/alice/export").status_code == 200
    assert _get(base, world["own"], "subjects/bob/export").status_code == 404
    # The read scope is needed; an unknown query parameter is refused, not ignored.
    refused = _get(base, world["writer"], "subjects/alice/export")
    assert refused.status_code == 403 and refused.headers["Content-Type"] == "application/problem+json"
    bad = _get(base, svc, "subjects/alice/export?types=semantic")
    assert bad.status_code == 400 and bad.json()["detail"] == "unknown query parameter types"
