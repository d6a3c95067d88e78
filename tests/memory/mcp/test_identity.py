"""Issue 24 finding 1 through /mcp/: ids an agent names by the external id its subject's memories were
written with resolve inside that subject's own memories only (the code-level filter is off: DLS and the
owner-scoped ids alone). Bob and alice both hold a fact with the external id ``f-diet`` (before, bob's
write took alice's over); alice alone holds ``e-lunch`` and ``p-router``."""

from __future__ import annotations

import pytest

from memory.elastic.mappings import VECTOR_FIELDS
from memory.services.writes import episode_write, fact_write, playbook_write

from .conftest import call, payload, tenant_with_subjects, token_for, tool_error

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def dls_only(settings):
    settings.ATLAS_CODE_FILTER = False


def _stored(admin, memory_id: str) -> dict | None:
    admin.indices.refresh(index="atlas-test-*")
    hits = admin.search(index="atlas-test-*", query={"ids": {"values": [memory_id]}})["hits"]["hits"]
    return {k: v for k, v in hits[0]["_source"].items() if k not in VECTOR_FIELDS} if hits else None


def test_an_agent_reaches_only_its_own_subjects_memory_by_external_id(atlas_server, admin) -> None:
    tenant, (alice, bob) = tenant_with_subjects("mcp-ident", "alice", "bob")
    alices = [
        fact_write(subject=alice, text="Alice is vegetarian", external_id="f-diet"),
        episode_write(subject=alice, text="Alice had lentils for lunch", external_id="e-lunch"),
        playbook_write(
            subject=alice, name="router", trigger_text="internet down", steps=["unplug it"], external_id="p-router"
        ),
    ]
    bobs = fact_write(subject=bob, text="Bob eats everything", external_id="f-diet")
    assert bobs["id"] != alices[0]["id"]
    before = {m["id"]: _stored(admin, m["id"]) for m in alices}
    assert all(doc["user_id"] == str(alice.es_id) for doc in before.values())
    token = token_for(tenant, bob)

    edited = payload(call(atlas_server.url, token, "update_fact", {"memory_id": "f-diet", "text": "Bob eats fish"}))
    assert edited["supersedes"] == [bobs["id"]]
    assert _stored(admin, bobs["id"])["superseded_by"] == [edited["id"]]
    assert payload(call(atlas_server.url, token, "forget_memory", {"memory_id": "e-lunch"}))["forgotten"] is False
    for tool, arguments in (
        ("record_outcome", {"playbook_id": "p-router", "success": False}),
        ("memory_chain", {"memory_id": alices[0]["id"]}),
        ("update_fact", {"memory_id": alices[0]["id"], "text": "Alice eats steak"}),
        ("remember", {"kind": "fact", "text": "stolen", "source_episodes": ["e-lunch"]}),
    ):
        assert tool_error(call(atlas_server.url, token, tool, arguments))["code"] == "not_found", tool

    assert {m["id"]: _stored(admin, m["id"]) for m in alices} == before
    admin.indices.refresh(index="atlas-test-*")
    bobs_now = admin.search(index="atlas-test-*", query={"term": {"user_id": str(bob.es_id)}})["hits"]["hits"]
    assert sorted(h["_source"]["text"] for h in bobs_now) == ["Bob eats everything", "Bob eats fish"]
