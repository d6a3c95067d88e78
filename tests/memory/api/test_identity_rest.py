"""Issue 24 finding 1: a memory's identity includes its owner (REST, over a live server).

A subject's token names, on its own subject's routes, the external id another subject of the same
tenant used. Before, the memory id was derived from (tenant, type, external id) alone, so bob's write
replaced alice's memory and made it his. Now each subject has an id space of its own: bob gets a new,
separate memory and alice's stays exactly as it was, still hers. The code-level filter is off, so only
each key's DLS guards the reads the services make.
"""

from __future__ import annotations

import uuid

import pytest
import requests

from tenants import services, tokens
from tenants.models import ApiKeyCredential

pytestmark = pytest.mark.django_db(transaction=True)

WRITES = {
    "facts": lambda who: {"text": f"{who} is vegetarian", "external_id": "f-diet", "fact_type": "preference"},
    "episodes": lambda who: {"text": f"{who} said she cooks lentils", "external_id": "e-lunch"},
    "playbooks": lambda who: {
        "name": f"{who} router reset",
        "trigger_text": f"{who} internet is down",
        "steps": [{"instruction": f"{who} unplugs the router"}],
        "external_id": "p-router",
    },
}


@pytest.fixture
def pair(atlas_server, atlas_es, settings):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"ident-{uuid.uuid4().hex[:6]}", name="identity", actor="test")
    out = {"base": atlas_server.url + "/api/v1/"}
    for name in ("alice", "bob"):
        subject = services.subject_create(tenant=tenant, external_id=name, actor="test")
        token = tokens.token_create(tenant=tenant, subject=subject, name=name, scopes="read,write,forget", actor="test")
        out[name] = {"subject": subject, "headers": {"Authorization": f"Bearer {token.secret}"}}
    settings.ATLAS_CODE_FILTER = False
    return out


def _stored(admin, memory_id: str) -> list[dict]:
    """Every document with ``memory_id`` in any memory index, as the cluster holds it (bootstrap read)."""
    admin.indices.refresh(index="atlas-test-*")
    hits = admin.search(index="atlas-test-*", query={"ids": {"values": [memory_id]}}, size=10)["hits"]["hits"]
    return [{k: v for k, v in h["_source"].items() if not k.startswith("embedding")} for h in hits]


@pytest.mark.parametrize("route", list(WRITES))
def test_another_subjects_external_id_makes_a_memory_of_ones_own(pair, admin, route) -> None:
    base, alice, bob = pair["base"], pair["alice"], pair["bob"]
    session = requests.Session()
    first = session.post(f"{base}subjects/alice/{route}", json=WRITES[route]("alice"), headers=alice["headers"])
    assert first.status_code == 201, first.text
    alice_id = first.json()["id"]
    alice_before = _stored(admin, alice_id)
    assert [d["user_id"] for d in alice_before] == [str(alice["subject"].es_id)]

    attack = session.post(f"{base}subjects/bob/{route}", json=WRITES[route]("bob"), headers=bob["headers"])

    assert attack.status_code == 201, attack.text
    bob_id = attack.json()["id"]
    assert bob_id != alice_id
    # Alice's memory did not change and is still hers: her read finds it, bob's does not.
    assert _stored(admin, alice_id) == alice_before
    mine = session.get(f"{base}subjects/alice/memories/{alice_id}", headers=alice["headers"])
    assert mine.status_code == 200, mine.text
    assert "alice" in mine.json()["text"] and "bob" not in mine.json()["text"]
    assert session.get(f"{base}subjects/bob/memories/{alice_id}", headers=bob["headers"]).status_code == 404
    # Bob has a memory of his own, with his text, under the same external id.
    [bobs] = _stored(admin, bob_id)
    assert bobs["user_id"] == str(bob["subject"].es_id) and bobs["external_id"] == alice_before[0]["external_id"]
    assert session.get(f"{base}subjects/bob/memories/{bob_id}", headers=bob["headers"]).json()["text"].startswith("bob")
    # Bob cannot delete alice's memory by either of its ids; deleting his own leaves hers.
    external = alice_before[0]["external_id"]
    assert session.delete(f"{base}subjects/bob/memories/{alice_id}", headers=bob["headers"]).status_code == 404
    assert session.delete(f"{base}subjects/bob/memories/{external}", headers=bob["headers"]).status_code == 200
    assert _stored(admin, bob_id) == []
    assert _stored(admin, alice_id) == alice_before


def test_resending_ones_own_external_id_is_the_same_write_or_a_409_never_an_overwrite(pair, admin) -> None:
    """A write never replaces a stored memory in place (issue 32, finding 1; docs/governance.md)."""
    base, alice = pair["base"], pair["alice"]
    session = requests.Session()
    first = session.post(f"{base}subjects/alice/facts", json=WRITES["facts"]("alice"), headers=alice["headers"])
    same = session.post(f"{base}subjects/alice/facts", json=WRITES["facts"]("alice"), headers=alice["headers"])
    assert same.status_code == 201 and same.json()["id"] == first.json()["id"]
    again = session.post(
        f"{base}subjects/alice/facts",
        json={**WRITES["facts"]("alice"), "text": "alice is vegan now"},
        headers=alice["headers"],
    )
    assert again.status_code == 409 and again.json()["errors"][0]["field"] == "external_id"
    [stored] = _stored(admin, first.json()["id"])
    assert stored["text"] == first.json()["text"]


def test_a_service_token_writing_for_bob_never_reaches_alices_memory_or_the_catalog(pair, admin) -> None:
    base, alice, bob = pair["base"], pair["alice"], pair["bob"]
    tenant = alice["subject"].tenant
    service = {
        "Authorization": f"Bearer {tokens.token_create(tenant=tenant, name='svc', scopes='read,write', actor='t').secret}"
    }
    session = requests.Session()
    entry = session.post(
        f"{base}catalog", json={"title": "Menu", "text": "Lentil soup", "external_id": "f-diet"}, headers=service
    )
    assert entry.status_code == 201, entry.text
    alices = session.post(f"{base}subjects/alice/facts", json=WRITES["facts"]("alice"), headers=alice["headers"]).json()
    before = _stored(admin, alices["id"]) + _stored(admin, entry.json()["id"])

    bobs = session.post(f"{base}subjects/bob/facts", json=WRITES["facts"]("bob"), headers=service)
    refused = session.post(
        f"{base}catalog", json={"title": "Menu", "text": "bob's soup", "external_id": "f-diet"}, headers=bob["headers"]
    )

    assert bobs.status_code == 201 and bobs.json()["id"] not in (alices["id"], entry.json()["id"])
    assert refused.status_code == 403, refused.text
    assert _stored(admin, alices["id"]) + _stored(admin, entry.json()["id"]) == before
    assert [d["user_id"] for d in _stored(admin, bobs.json()["id"])] == [str(bob["subject"].es_id)]
