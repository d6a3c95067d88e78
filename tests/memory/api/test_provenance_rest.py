"""Provenance over REST (``GET …/memories/{id}``'s ``provenance``) and the forget receipt's ``orphaned``,
through real HTTP. Authority and writer are stamped by the writing services (issue 28's review branch);
here they come from an import in the export format, which keeps them as the file states them."""

from __future__ import annotations

import json
import uuid

import pytest
import requests

from memory.models import ConsolidationRun
from memory.portable.lines import memories_import
from tenants import services, tokens
from tenants.models import ApiKeyCredential

pytestmark = pytest.mark.django_db(transaction=True)


class Api:
    def __init__(self, base: str, token: str) -> None:
        self.base = base + "/api/v1/subjects/"
        self.headers = {"Authorization": f"Bearer {token}"}

    def __call__(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, self.base + path, headers=self.headers, timeout=60, **kwargs)


@pytest.fixture
def world(atlas_server, atlas_es):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"prov-{uuid.uuid4().hex[:8]}", name="Provenance", actor="test")
    alice = services.subject_create(tenant=tenant, external_id="alice", actor="test")
    secret = tokens.token_create(tenant=tenant, name="svc", scopes="read,write,forget", actor="test").secret
    return {"tenant": tenant, "alice": alice, "api": Api(atlas_server.url, secret)}


def test_a_memory_says_where_it_came_from_and_what_forgetting_leaves_bare(world) -> None:
    api, tenant, alice = world["api"], world["tenant"], world["alice"]
    run = ConsolidationRun.objects.create(tenant=tenant, subject=alice, status=ConsolidationRun.Status.DONE)
    head = {"format": "atlas-memory-export", "version": 1, "exported_at": "2026-05-01T00:00:00Z"}
    said = {"type": "episodic", "subject": "alice", "created_at": "2026-04-01T09:00:00Z"}
    lines = [
        head,
        {**said, "id": "e1", "text": "I adopted a greyhound called Pixel"},
        {**said, "id": "e2", "text": "Pixel sleeps on the sofa all day", "created_at": "2026-04-01T09:05:00Z"},
        {
            "id": "dog",
            "type": "semantic",
            "subject": "alice",
            "text": "Alice has a greyhound called Pixel",
            "created_at": "2026-04-02T02:00:00Z",
            "source_episodes": ["e1", "e2"],
            "authority": "consolidation",
            "written_by": f"run:{run.pk}",
        },
        {
            "id": "breed",
            "type": "semantic",
            "subject": "alice",
            "text": "Alice likes greyhounds",
            "created_at": "2026-04-02T02:00:01Z",
            "source_episodes": ["e1"],
            "authority": "consolidation",
            "written_by": f"run:{run.pk}",
        },
        {
            "id": "mine",
            "type": "semantic",
            "subject": "alice",
            "text": "Alice walks Pixel at seven",
            "created_at": "2026-04-03T08:00:00Z",
            "authority": "person",
            "written_by": "person:12",
        },
    ]
    report = memories_import(tenant=tenant, lines=[json.dumps(x) for x in lines], create_subjects=False, actor="t")
    assert report.errors == []
    ids = {m["external_id"]: m["id"] for m in api("GET", "alice/memories?page_size=50").json()["memories"]}

    answer = api("GET", f"alice/memories/{ids['dog']}").json()
    assert answer["provenance"] == {
        "authority": "consolidation",
        "written_by": {"kind": "run", "name": str(run.pk), "label": f"nightly consolidation, run {run.pk}"},
        "episodes": [
            {
                "id": ids["e1"],
                "gone": False,
                "timestamp": "2026-04-01T09:00:00+00:00",
                "text": "I adopted a greyhound called Pixel",
            },
            {
                "id": ids["e2"],
                "gone": False,
                "timestamp": "2026-04-01T09:05:00+00:00",
                "text": "Pixel sleeps on the sofa all day",
            },
        ],
        "run": {
            "id": str(run.pk),
            "gone": False,
            "status": "done",
            "started_at": run.started_at.isoformat(),
            "finished_at": None,
        },
    }
    person = api("GET", f"alice/memories/{ids['mine']}").json()["provenance"]
    assert person == {
        "authority": "person",
        "written_by": {"kind": "person", "name": "12", "label": "a person, in the dashboard"},
        "episodes": [],
        "run": None,
    }
    # A catalog entry is the tenant's: no subject's provenance.
    from memory.services.catalog import catalog_entry_write

    entry = catalog_entry_write(tenant=tenant, actor="t", title="Dog parks", text="Dog parks near the river")
    assert api("GET", f"alice/memories/{entry['id']}").json()["provenance"] is None
    # Lists stay small: no provenance there.
    assert all("provenance" not in m for m in api("GET", "alice/memories").json()["memories"])

    # e2 is not the last evidence of anything: "dog" still cites e1.
    first = api("DELETE", f"alice/memories/{ids['e2']}").json()
    assert first["forgotten"] is True and first["orphaned"] == []
    dog = api("GET", f"alice/memories/{ids['dog']}").json()["provenance"]["episodes"]
    # Gone, and named by no id: the id is free again (tests/memory/test_writes.py).
    assert [(e["id"], e["gone"]) for e in dog] == [(ids["e1"], False), ("(forgotten)", True)]
    # e1 is: both facts are left citing nothing that exists, and stay (forgetting them is a choice).
    second = api("DELETE", f"alice/memories/{ids['e1']}").json()
    assert second["orphaned"] == [ids["dog"], ids["breed"]]
    assert api("GET", f"alice/memories/{ids['breed']}").status_code == 200
    # Forgetting a fact orphans nothing.
    assert api("DELETE", f"alice/memories/{ids['mine']}").json()["orphaned"] == []
