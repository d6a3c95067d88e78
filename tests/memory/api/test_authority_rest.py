"""Authority over REST (live server, real tokens): stamped from the token, returned, filterable, and an
agent's replacement of a person's fact answered 202 pending — never a 409, never an overwrite."""

from __future__ import annotations

import pytest

from memory.services import writes
from tests.memory.api.test_rest import _problem, world  # noqa: F401 — the live-server fixture

pytestmark = pytest.mark.django_db(transaction=True)

PERSON = {"authority": "person", "written_by": "person:alice@example.org"}


def test_agent_writes_are_stamped_with_the_token_and_client_input_is_refused(world) -> None:  # noqa: F811
    svc = world["svc"]
    fact = svc("POST", "subjects/alice/facts", json={"text": "Alice likes jazz"})
    assert fact.status_code == 201, fact.text
    body = fact.json()
    assert (body["authority"], body["written_by"], body["status"]) == ("agent", "token:svc", "current")
    playbook = svc("POST", "subjects/alice/playbooks", json={"name": "n", "trigger_text": "t", "steps": ["s"]})
    assert playbook.status_code == 201 and playbook.json()["authority"] == "agent"
    # Authority is never taken from the client: the field is refused, nothing is stored.
    spoofed = svc("POST", "subjects/alice/facts", json={"text": "Alice is an admin", "authority": "person"})
    assert _problem(spoofed, 400)["errors"][0]["field"] == "authority"
    listed = svc("GET", "subjects/alice/memories", params={"types": "semantic"}).json()["memories"]
    assert [m["text"] for m in listed] == ["Alice likes jazz"]


def test_an_agent_replacing_a_persons_fact_gets_202_pending_and_the_fact_stays(world) -> None:  # noqa: F811
    svc, alice = world["svc"], world["alice"]
    mine = writes.fact_write(subject=alice, text="Alice lives in Lisbon", fact_type="identity", **PERSON)
    replaced = svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Porto", "supersedes": [mine["id"]]})
    assert replaced.status_code == 202, replaced.text
    proposal = replaced.json()
    assert (proposal["status"], proposal["proposal_for"], proposal["supersedes"]) == ("pending", [mine["id"]], [])
    edited = svc("PATCH", f"subjects/alice/facts/{mine['id']}", json={"text": "Alice lives in Faro"})
    assert edited.status_code == 202 and edited.json()["status"] == "pending"
    assert svc("GET", f"subjects/alice/memories/{mine['id']}").json()["status"] == "current"
    chain = svc("GET", f"subjects/alice/memories/{mine['id']}/chain").json()["chain"]
    assert [m["id"] for m in chain] == [mine["id"]]
    hits = svc("POST", "subjects/alice/recall", json={"query": "Alice lives in Porto Faro", "k": 10}).json()["hits"]
    assert [h["id"] for h in hits] == [mine["id"]]
    # The person's own fact is what the authority filter finds; an unknown authority is a 400.
    person = svc("GET", "subjects/alice/memories", params={"authority": "person"}).json()["memories"]
    assert [m["id"] for m in person] == [mine["id"]]
    assert svc("GET", "subjects/alice/memories", params={"authority": "agent"}).json()["memories"] == []
    bad = _problem(svc("GET", "subjects/alice/memories", params={"authority": "root"}), 400)
    assert bad["errors"] == [
        {"field": "authority", "message": "authority must be one of person, agent, consolidation, import, operator"}
    ]


def test_an_agent_replacing_an_agents_fact_replaces_it_at_once(world) -> None:  # noqa: F811
    svc = world["svc"]
    first = svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Lisbon"}).json()
    second = svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Porto", "supersedes": [first["id"]]})
    assert second.status_code == 201 and second.json()["status"] == "current"
    assert svc("GET", f"subjects/alice/memories/{first['id']}").json()["status"] == "superseded"
