"""Forgetting reaches every stored Idempotency-Key answer that holds the forgotten memory's text or id,
whoever's request stored it (issue 32 finding 6), through real HTTP: a deleted catalog entry recalled by
subjects' ``/turn``s (a tenant token's and a subject token's); a subject's fact recalled in a tenant
token's ``/turn`` and kept in a stored proposal accept; an episode named (by id only) as a fact's source.
A retry with the same key then runs again instead of replaying the forgotten text, and the receipt
counts exactly the records that went."""

from __future__ import annotations

import hashlib
import uuid

import pytest
import requests

from tenants import services, tokens
from tenants.models import ApiKeyCredential, ApiToken, Tenant
from tests.memory.api.test_rest import Api

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world(atlas_server, atlas_es):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"fsa-{uuid.uuid4().hex[:8]}", name="Stored answers", actor="test")
    alice = services.subject_create(tenant=tenant, external_id="alice", actor="test")
    services.subject_create(tenant=tenant, external_id="bob", actor="test")
    svc = tokens.token_create(tenant=tenant, name="svc", scopes="read,write,forget", actor="test").secret
    own = tokens.token_create(tenant=tenant, subject=alice, name="alice", scopes="read,write", actor="test").secret
    reviewer = tokens.token_create(tenant=tenant, name="reviewer", scopes="read,review", actor="test").secret
    return {
        "tenant": tenant,
        "svc": Api(atlas_server.url, svc),
        "own": Api(atlas_server.url, own),
        "reviewer": Api(atlas_server.url, reviewer),
    }


def _slot(tenant: Tenant, token_name: str, path: str, key: str) -> str:
    """The record's slot, as atlas_site.api.idempotent names it (the receipt lists slots)."""
    token = ApiToken.objects.get(tenant=tenant, name=token_name)
    return "idem:" + hashlib.sha256(f"{token.pk}:/api/v1/{path}:{key}".encode()).hexdigest()


def _keyed(api: Api, path: str, body: dict, key: str) -> requests.Response:
    response = api("POST", path, json=body, headers={"Idempotency-Key": key})
    assert response.status_code in (200, 201, 202), response.text
    return response


def _replayed(response: requests.Response) -> bool:
    return response.headers.get("Idempotent-Replayed") == "true"


def _hit_ids(turn: requests.Response) -> list[str]:
    return [hit["id"] for hit in turn.json()["recall"]["hits"]]


def test_deleting_a_catalog_entry_drops_every_subjects_stored_turn_that_recalled_it(world) -> None:
    svc, own, tenant = world["svc"], world["own"], world["tenant"]
    door = "The back door code of the Rua Augusta shop is 7319"
    entry = svc("POST", "catalog", json={"title": "Back door code", "text": door}).json()
    question = {"text": "what is the back door code of the shop?", "session_id": "s1", "recall": {"k": 5}}
    turns = {
        "svc-alice": (svc, "subjects/alice/turn", "t-1"),  # a tenant service token, for alice
        "own-alice": (own, "subjects/alice/turn", "t-2"),  # alice's own subject token
        "svc-bob": (svc, "subjects/bob/turn", "t-3"),  # another subject of the tenant
    }
    for api, path, key in turns.values():
        assert entry["id"] in _hit_ids(_keyed(api, path, question, key))
    unrelated = _keyed(svc, "subjects/bob/facts", {"text": "Bob likes jazz"}, "f-1").json()
    assert _replayed(_keyed(svc, "subjects/alice/turn", question, "t-1"))  # kept, before the delete

    receipt = svc("DELETE", f"catalog/{entry['id']}").json()["receipt"]

    expected = {
        _slot(tenant, "svc", "subjects/alice/turn", "t-1"),
        _slot(tenant, "alice", "subjects/alice/turn", "t-2"),
        _slot(tenant, "svc", "subjects/bob/turn", "t-3"),
    }
    stored = receipt["idempotency_records"]
    assert (stored["count"], set(stored["ids"]), stored["truncated"]) == (3, expected, False)
    for api, path, key in turns.values():
        again = _keyed(api, path, question, key)
        assert not _replayed(again)  # it ran again: the stored answer is gone
        assert entry["id"] not in again.text and door not in again.text
    kept = _keyed(svc, "subjects/bob/facts", {"text": "Bob likes jazz"}, "f-1")
    assert _replayed(kept) and kept.json() == unrelated  # an answer that never held the entry stays


def test_forgetting_a_subjects_memory_drops_the_stored_answers_that_hold_its_text_or_id(world) -> None:
    svc, reviewer, tenant = world["svc"], world["reviewer"], world["tenant"]
    said = _keyed(svc, "subjects/alice/episodes", {"text": "my locker at the gym is number 4471"}, "e-1").json()
    # An agent's fact waits for review; a reviewing token accepts it (the stored answer holds its text).
    Tenant.objects.filter(pk=tenant.pk).update(review_mode="agents")
    locker = "Alice's gym locker is number 4471"
    proposal = _keyed(svc, "subjects/alice/facts", {"text": locker, "source_episodes": [said["id"]]}, "f-1").json()
    assert proposal["status"] == "pending"
    [shown] = svc("GET", "subjects/alice/proposals").json()["proposals"]
    decision = {"version": shown["version"]}
    accepted = _keyed(reviewer, f"subjects/alice/proposals/{proposal['id']}/accept", decision, "a-1").json()
    assert (accepted["id"], accepted["text"]) == (proposal["id"], locker)
    # A tenant token's turn for alice recalls the fact.
    question = {"text": "which locker is mine at the gym?", "session_id": "s2", "recall": {"k": 5}}
    assert proposal["id"] in _hit_ids(_keyed(svc, "subjects/alice/turn", question, "t-1"))
    # Another fact names the episode as its source, by id only: no word of the episode is in its answer.
    trains = {"text": "Alice trains on Tuesdays", "source_episodes": [said["id"]]}
    _keyed(svc, "subjects/alice/facts", trains, "f-3")
    unrelated = _keyed(svc, "subjects/alice/facts", {"text": "Alice likes green tea"}, "f-2").json()

    receipt = svc("DELETE", f"subjects/alice/memories/{proposal['id']}").json()["receipt"]
    expected = {
        _slot(tenant, "svc", "subjects/alice/facts", "f-1"),
        _slot(tenant, "reviewer", f"subjects/alice/proposals/{proposal['id']}/accept", "a-1"),
        _slot(tenant, "svc", "subjects/alice/turn", "t-1"),
    }
    stored = receipt["idempotency_records"]
    assert (stored["count"], set(stored["ids"])) == (3, expected)
    accept = f"subjects/alice/proposals/{proposal['id']}/accept"
    again = reviewer("POST", accept, json=decision, headers={"Idempotency-Key": "a-1"})
    assert not _replayed(again) and again.status_code == 404 and locker not in again.text
    turn = _keyed(svc, "subjects/alice/turn", question, "t-1")
    assert not _replayed(turn) and proposal["id"] not in turn.text and locker not in turn.text
    assert said["id"] in _hit_ids(turn)  # the turn ran again: now it recalls the episode itself

    receipt = svc("DELETE", f"subjects/alice/memories/{said['id']}").json()["receipt"]
    expected = {
        _slot(tenant, "svc", "subjects/alice/episodes", "e-1"),
        _slot(tenant, "svc", "subjects/alice/facts", "f-3"),
        _slot(tenant, "svc", "subjects/alice/turn", "t-1"),
    }
    stored = receipt["idempotency_records"]
    assert (stored["count"], set(stored["ids"])) == (3, expected)
    retried = svc("POST", "subjects/alice/facts", json=trains, headers={"Idempotency-Key": "f-3"})
    assert retried.status_code == 404 and not _replayed(retried)  # it ran again: its source is gone
    kept = _keyed(svc, "subjects/alice/facts", {"text": "Alice likes green tea"}, "f-2")
    assert _replayed(kept) and kept.json() == unrelated  # an answer that never held either stays
