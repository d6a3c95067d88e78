"""One successor per fact over real HTTP (issues 25.6, 27.3, 25.7): concurrent and repeated supersessions,
PATCH racers holding one ETag, text fields that refuse numbers, and a chunked body over the size limit."""

from __future__ import annotations

import json
import threading

import pytest

from . import test_rest
from .test_rest import _problem

pytestmark = pytest.mark.django_db(transaction=True)
world = test_rest.world  # the fixture: a tenant, alice and bob, tokens, a live server


def _race(n: int, call) -> list:
    """``call(i)`` on ``n`` threads released together; the responses in thread order."""
    answers: list = [None] * n
    gate = threading.Barrier(n)

    def run(i: int) -> None:
        gate.wait()
        answers[i] = call(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def _facts(svc, superseded: bool = False) -> list[dict]:
    params = {"type": "semantic", "page_size": 100, **({"include_superseded": "true"} if superseded else {})}
    return svc("GET", "subjects/alice/memories", params=params).json()["memories"]


def test_a_409_for_a_replaced_fact_names_the_callers_external_ids_and_gives_the_newest(world) -> None:
    """A caller that names facts by its own ids gets its own ids back in the 409, and the newest version as a
    member of the problem ({id, external_id}) that a client reads without parsing the detail."""
    svc = world["svc"]
    home = svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Berlin", "external_id": "home-1"}).json()
    body = {"text": "Alice lives in Lisbon", "supersedes": ["home-1"], "external_id": "home-2"}
    lisbon = svc("POST", "subjects/alice/facts", json=body).json()
    refused = _problem(
        svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Faro", "supersedes": ["home-1"]}), 409
    )
    assert refused["detail"] == (
        f"fact home-1 (id {home['id']}) was already replaced; its newest version is home-2 (id {lisbon['id']}). "
        f"A replaced fact cannot be replaced again: edit the newest version (home-2 (id {lisbon['id']}))"
    )
    assert refused["newest"] == {"id": lisbon["id"], "external_id": "home-2"}
    edit = _problem(svc("PATCH", f"subjects/alice/facts/{home['id']}", json={"text": "Alice lives in Faro"}), 409)
    assert edit["newest"] == {"id": lisbon["id"], "external_id": "home-2"}


def test_eight_concurrent_posts_superseding_one_fact_one_201_seven_409(world) -> None:
    """The report: 8 concurrent POSTs with the same supersedes got 8 × 201 in each of 5 rounds. Now one
    wins; the seven others get 409 naming the winner and leave no fact behind."""
    svc = world["svc"]
    heads: list[str] = []
    for round_no in range(3):
        old = svc("POST", "subjects/alice/facts", json={"text": f"Alice's phone ends in {round_no}0"}).json()
        answers = _race(
            8,
            lambda i, old=old: svc(
                "POST", "subjects/alice/facts", json={"text": f"Alice's phone ends in {i}", "supersedes": [old["id"]]}
            ),
        )
        assert sorted(a.status_code for a in answers) == [201] + [409] * 7, [a.text for a in answers]
        winner = next(a.json()["id"] for a in answers if a.status_code == 201)
        for refused in (a for a in answers if a.status_code == 409):
            body = _problem(refused, 409)
            assert f"newest version is {winner}" in body["detail"]
            assert body["errors"][0]["field"] == "supersedes"
        heads.append(winner)
        assert {f["id"] for f in _facts(svc)} == set(heads)  # one current version per round
        everything = _facts(svc, superseded=True)
        assert len(everything) == 2 * (round_no + 1)  # each round: the old fact and its one successor
        assert next(f for f in everything if f["id"] == old["id"])["superseded_by"] == [winner]


def test_a_second_post_superseding_a_replaced_fact_is_409_naming_the_newest(world) -> None:
    """27.3: the README's fact curl run twice (superseding f-home-3 again) forked the chain."""
    svc = world["svc"]
    home = svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Berlin", "external_id": "f-home-3"})
    assert home.status_code == 201
    body = {"text": "Alice lives in Lisbon", "supersedes": ["f-home-3"], "contradiction": "natural"}
    first = svc("POST", "subjects/alice/facts", json=body)
    assert first.status_code == 201, first.text
    lisbon = first.json()["id"]
    assert f"newest version is {lisbon}" in _problem(svc("POST", "subjects/alice/facts", json=body), 409)["detail"]
    porto = svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Porto", "supersedes": [lisbon]}).json()
    again = _problem(svc("POST", "subjects/alice/facts", json=body), 409)
    assert f"newest version is {porto['id']}" in again["detail"]  # the chain's head, not the direct successor
    assert [f["text"] for f in _facts(svc)] == ["Alice lives in Porto"]
    assert len(_facts(svc, superseded=True)) == 3


def test_patch_racers_holding_a_valid_if_match_one_200_the_rest_412(world) -> None:
    """25.7: every racer held the ETag it read, so the documented answer to the losers is 412, not 409."""
    svc = world["svc"]
    fact = svc("POST", "subjects/alice/facts", json={"text": "Drinks coffee"}).json()
    etag = svc("GET", f"subjects/alice/memories/{fact['id']}").headers["ETag"]
    answers = _race(
        8,
        lambda i: svc(
            "PATCH", f"subjects/alice/facts/{fact['id']}", json={"text": f"Drinks tea {i}"}, headers={"If-Match": etag}
        ),
    )
    assert sorted(a.status_code for a in answers) == [200] + [412] * 7, [a.text for a in answers]
    winner = next(a.json()["id"] for a in answers if a.status_code == 200)
    for refused in (a for a in answers if a.status_code == 412):
        assert winner in _problem(refused, 412)["detail"]
    assert [f["id"] for f in _facts(svc)] == [winner]
    assert len(_facts(svc, superseded=True)) == 2


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("subjects/alice/facts", '{"text": 1}', "text"),
        ("subjects/alice/facts", '{"text": 1e999}', "text"),
        ("subjects/alice/facts", '{"text": true}', "text"),
        ("subjects/alice/facts", '{"text": "ok", "source_episodes": [7]}', "source_episodes[0]"),
        ("subjects/alice/episodes", '{"text": 12.5}', "text"),
        ("subjects/alice/episodes", '{"text": "hi", "session_id": 3}', "session_id"),
        ("subjects/alice/playbooks", '{"name": 1, "trigger_text": "t", "steps": [{"instruction": "a"}]}', "name"),
        (
            "subjects/alice/playbooks",
            '{"name": "n", "trigger_text": 2, "steps": [{"instruction": "a"}]}',
            "trigger_text",
        ),
        (
            "subjects/alice/playbooks",
            '{"name": "n", "trigger_text": "t", "description": 3, "steps": [{"instruction": "a"}]}',
            "description",
        ),
        (
            "subjects/alice/playbooks",
            '{"name": "n", "trigger_text": "t", "steps": [{"instruction": 4}]}',
            "steps[0].instruction",
        ),
        ("catalog", '{"title": 5, "text": "Returns within 30 days"}', "title"),
        ("catalog", '{"title": "Returns", "text": "30 days", "tags": [6]}', "tags[0]"),
        ("subjects", '{"id": 8}', "id"),
    ],
)
def test_text_fields_refuse_numbers(world, path: str, body: str, field: str) -> None:
    """25.7: ``1`` was stored as "1" and ``1e999`` as "inf": a text field takes a string or is refused (400
    naming the field), and nothing is stored."""
    svc = world["svc"]
    answer = svc("POST", path, data=body, headers={"Content-Type": "application/json"})
    problem = _problem(answer, 400)
    assert [e["field"] for e in problem["errors"]] == [field], problem
    assert "must be a string" in problem["errors"][0]["message"]
    listed = svc("GET", "subjects/alice/memories").json()["memories"]
    assert listed == []


def test_a_fact_edit_refuses_a_number_as_text(world) -> None:
    svc = world["svc"]
    fact = svc("POST", "subjects/alice/facts", json={"text": "Drinks coffee"}).json()
    answer = svc(
        "PATCH", f"subjects/alice/facts/{fact['id']}", data='{"text": 42}', headers={"Content-Type": "application/json"}
    )
    assert _problem(answer, 400)["errors"][0]["field"] == "text"
    assert [f["text"] for f in _facts(svc, superseded=True)] == ["Drinks coffee"]


def test_a_chunked_body_over_the_limit_is_413(world, settings) -> None:
    """25.7: a 4 MiB body sent chunked (no Content-Length) got 400; Django checks only a declared length."""
    svc = world["svc"]

    def chunks():
        yield b'{"text": "'
        for _ in range(4 * 1024):
            yield b"x" * 1024
        yield b'"}'

    answer = svc("POST", "subjects/alice/episodes", data=chunks(), headers={"Content-Type": "application/json"})
    assert answer.request.headers.get("Transfer-Encoding") == "chunked"
    assert "Content-Length" not in answer.request.headers
    problem = _problem(answer, 413)
    assert problem["detail"] == f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"
    small = svc(
        "POST",
        "subjects/alice/episodes",
        data=iter([json.dumps({"text": "chunked and small"}).encode()]),
        headers={"Content-Type": "application/json"},
    )
    assert small.status_code == 201, small.text
    assert [m["text"] for m in svc("GET", "subjects/alice/memories").json()["memories"]] == ["chunked and small"]


def test_catalog_patch_racers_holding_a_valid_if_match_one_200_the_rest_412(world) -> None:
    """The same class as the fact edit: the catalog's ETag check and its write were a read then a
    conditional write whose loss was a 409; now one compare-and-set, so the losers get 412."""
    svc = world["svc"]
    entry = svc("POST", "catalog", json={"title": "Returns", "text": "Returns within 30 days"}).json()
    etag = svc("GET", f"catalog/{entry['id']}").headers["ETag"]
    answers = _race(
        6,
        lambda i: svc(
            "PATCH",
            f"catalog/{entry['id']}",
            json={"text": f"Returns within {i + 40} days"},
            headers={"If-Match": etag},
        ),
    )
    assert sorted(a.status_code for a in answers) == [200] + [412] * 5, [a.text for a in answers]
    won = next(a for a in answers if a.status_code == 200)
    assert svc("GET", f"catalog/{entry['id']}").json()["text"] == won.json()["text"]
