"""One vocabulary and the errors a newcomer meets, over real HTTP: an episode's time is ``timestamp`` as every
answer and the export name it (``at`` is its old name for a release), and each refusal says what to send."""

from __future__ import annotations

import pytest

from . import test_rest
from .test_rest import _problem

pytestmark = pytest.mark.django_db(transaction=True)
world = test_rest.world  # the fixture: a tenant, alice and bob, tokens, a live server

TYPES_HINT = "use episodic, semantic, procedural, catalog (did you mean semantic?)"


def test_an_episodes_time_is_timestamp_and_at_is_its_old_name_for_a_release(world) -> None:
    svc = world["svc"]
    new = svc(
        "POST", "subjects/alice/episodes", json={"text": "I moved to Lisbon", "timestamp": "2026-03-11T09:00:00Z"}
    )
    assert new.status_code == 201 and "Deprecation" not in new.headers
    assert new.json()["timestamp"].startswith("2026-03-11T09:00:00")
    old = svc("POST", "subjects/alice/episodes", json={"text": "I moved to Porto", "at": "2026-03-12T09:00:00Z"})
    assert old.status_code == 201 and old.json()["timestamp"].startswith("2026-03-12T09:00:00")
    assert (old.headers["Deprecation"], old.headers["X-Atlas-Deprecated"]) == ("@1796256000", "at")
    turn = svc("POST", "subjects/alice/turn", json={"text": "I moved to Faro", "timestamp": "2026-03-13T09:00:00Z"})
    assert turn.status_code == 201 and turn.json()["episode"]["timestamp"].startswith("2026-03-13T09:00:00")
    both = {"text": "x", "at": "2026-03-12T09:00:00Z", "timestamp": "2026-03-12T09:00:00Z"}
    refused = _problem(svc("POST", "subjects/alice/episodes", json=both), 400)
    assert (refused["detail"], refused["errors"][0]["field"]) == (
        "at is the old name of timestamp: give timestamp only",
        "at",
    )


def test_an_unknown_memory_type_lists_the_types_and_says_which_was_meant(world) -> None:
    svc = world["svc"]
    listed = _problem(svc("GET", "subjects/alice/memories", params={"types": "fact"}), 400)
    assert listed["detail"] == (
        "unknown memory type(s) 'fact': use episodic, semantic, procedural, catalog, archive (did you mean semantic?)"
    )
    recalled = _problem(svc("POST", "subjects/alice/recall", json={"query": "x", "types": ["fact"]}), 400)
    assert recalled["detail"] == f"types: unknown memory type(s) 'fact': {TYPES_HINT}"
    assert recalled["errors"] == [{"field": "types", "message": f"unknown memory type(s) 'fact': {TYPES_HINT}"}]
    playbooks = _problem(
        svc("POST", "subjects/alice/recall", json={"query": "x", "types": ["playbooks", "semantc"]}), 400
    )
    assert playbooks["detail"] == (
        "types: unknown memory type(s) 'playbooks', 'semantc': use episodic, semantic, procedural, catalog "
        "(did you mean procedural and semantic?)"
    )


def test_a_bad_fact_type_lists_the_choices(world) -> None:
    svc = world["svc"]
    written = _problem(svc("POST", "subjects/alice/facts", json={"text": "x", "fact_type": "gossip"}), 400)
    assert written["detail"] == "fact_type: must be one of preference, identity, constraint, world, not 'gossip'"
    recalled = _problem(svc("POST", "subjects/alice/recall", json={"query": "x", "fact_type": "fact"}), 400)
    assert recalled["detail"] == "fact_type: must be one of preference, identity, constraint, world, not 'fact'"
    listed = _problem(svc("GET", "subjects/alice/memories", params={"fact_type": "gossip"}), 400)
    assert listed["detail"] == "fact_type must be one of preference, identity, constraint, world"


def test_a_form_encoded_body_is_told_to_send_json(world) -> None:
    form = world["svc"](
        "POST", "subjects/alice/facts", data=b"text=x", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert _problem(form, 415)["detail"] == (
        "the request body's Content-Type is application/x-www-form-urlencoded: send JSON (Content-Type: application/json)"
    )


def test_forgetting_everything_without_the_confirmation_shows_the_body_to_send(world) -> None:
    svc = world["svc"]
    svc("POST", "subjects/alice/facts", json={"text": "Alice likes figs"})
    expected = 'confirm must repeat the subject\'s id: send the body {"confirm": "alice"} (forgetting everything cannot be undone)'
    for body in (None, {}, {"confirm": "bob"}):
        refused = _problem(svc("DELETE", "subjects/alice/memories", json=body), 400)
        assert (refused["detail"], refused["errors"][0]["field"]) == (expected, "confirm"), body
    assert [m["text"] for m in svc("GET", "subjects/alice/memories").json()["memories"]] == ["Alice likes figs"]
    assert svc("DELETE", "subjects/alice/memories", json={"confirm": "alice"}).status_code == 200
