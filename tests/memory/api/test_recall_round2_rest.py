"""Issue 34 through the REST API and MCP: evidence lifts its fact, a correction takes the place of the
turn that supported the version it replaced, small talk recalls nothing, and ``min_score``."""

from __future__ import annotations

import pytest

from memory.services import writes
from tests.memory.mcp.conftest import call, payload, tenant_with_subjects, token_for

from .test_rest import world  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_rest_recall_lifts_evidence_lets_the_correction_win_and_keeps_silence(world) -> None:  # noqa: F811
    svc, alice = world["svc"], world["alice"]
    said = writes.episode_write(subject=alice, text="My cat is called Miso")
    old = writes.fact_write(subject=alice, text="Alice's cat is called Miso", source_episodes=[said["id"]])
    fixed = svc("POST", "subjects/alice/episodes", json={"text": "Sorry, I got it wrong: my cat is called Mochi"})
    edited = svc(
        "PATCH",
        f"subjects/alice/facts/{old['id']}",
        json={"text": "Alice's cat is called Mochi", "contradiction": "harsh", "source_episodes": [fixed.json()["id"]]},
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["source_episodes"] == [fixed.json()["id"]]
    body = {"query": "what is my cat called?", "k": 5, "explain": True, "expect": [said["id"]]}
    answer = svc("POST", "subjects/alice/recall", json=body).json()
    ids = [hit["id"] for hit in answer["hits"]]
    assert ids[0] == edited.json()["id"] and said["id"] not in ids
    assert [e["id"] for e in answer["hits"][0]["evidence"]] == [fixed.json()["id"]]
    assert answer["explain"]["expected"][0]["removed_by"] == "fold"
    silent = svc("POST", "subjects/alice/recall", json={"query": "Hello again", "explain": True}).json()
    assert silent["hits"] == [] and silent["explain"]["floor"] == "small talk"
    own = svc("POST", "subjects/alice/recall", json={"query": "Hello again", "min_score": -1000}).json()
    assert own["hits"]
    turn = svc("POST", "subjects/alice/turn", json={"text": "cheers!"}).json()
    assert turn["recall"]["hits"] == []
    refused = svc("POST", "subjects/alice/recall", json={"query": "cat", "min_score": "high"})
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "min_score"


def test_mcp_recall_memory_keeps_silence_and_takes_min_score(atlas_server) -> None:
    tenant, (alice,) = tenant_with_subjects("round2", "alice")
    writes.fact_write(subject=alice, text="Alice is vegetarian", fact_type="constraint")
    token = token_for(tenant, alice)
    quiet = payload(call(atlas_server.url, token, "recall_memory", {"query": "thanks, that's all"}))
    assert quiet["memories"] == []
    chosen = payload(
        call(atlas_server.url, token, "recall_memory", {"query": "thanks, that's all", "min_score": -1000})
    )
    assert [m["text"] for m in chosen["memories"]] == ["Alice is vegetarian"]


def test_a_correction_cannot_cite_another_subjects_turn_and_changes_nothing(world) -> None:  # noqa: F811
    svc, alice, bob = world["svc"], world["alice"], world["bob"]
    fact = writes.fact_write(subject=alice, text="Alice's cat is called Miso")
    theirs = writes.episode_write(subject=bob, text="My cat is called Mochi")
    refused = svc(
        "PATCH",
        f"subjects/alice/facts/{fact['id']}",
        json={"text": "Alice's cat is called Mochi", "contradiction": "harsh", "source_episodes": [theirs["id"]]},
    )
    assert refused.status_code == 404 and refused.json()["errors"][0]["field"] == "source_episodes"
    assert theirs["id"] not in refused.text.replace(f"no episode {theirs['id']}", "")  # named only as asked
    current = svc("GET", f"subjects/alice/memories/{fact['id']}").json()
    assert current["text"] == "Alice's cat is called Miso" and not current.get("superseded_by")
