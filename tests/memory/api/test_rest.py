"""The REST API through real HTTP: uvicorn on a free port, the embedded Elasticsearch, real tokens."""

from __future__ import annotations

import threading
import uuid

import pytest
import requests

from memory.services import writes
from tenants import services, tokens
from tenants.models import ApiKeyCredential, AuditRecord

pytestmark = pytest.mark.django_db(transaction=True)


class Api:
    def __init__(self, base: str, token: str | None) -> None:
        self.base = base + "/api/v1/"
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def __call__(self, method: str, path: str, **kwargs) -> requests.Response:
        return self.session.request(method, self.base + path, timeout=60, **kwargs)


@pytest.fixture
def world(atlas_server, atlas_es):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"api-{uuid.uuid4().hex[:8]}", name="API tests", actor="test")
    alice = services.subject_create(tenant=tenant, external_id="alice", actor="test")
    bob = services.subject_create(tenant=tenant, external_id="bob", actor="test")
    service = tokens.token_create(tenant=tenant, name="svc", scopes="read,write,forget", actor="test").secret
    reader = tokens.token_create(tenant=tenant, name="ro", scopes="read", actor="test").secret
    own = tokens.token_create(tenant=tenant, subject=alice, name="alice", scopes="read,write", actor="test").secret
    return {
        "tenant": tenant,
        "alice": alice,
        "bob": bob,
        "svc": Api(atlas_server.url, service),
        "ro": Api(atlas_server.url, reader),
        "own": Api(atlas_server.url, own),
        "anon": Api(atlas_server.url, None),
    }


def _problem(response: requests.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["type"].startswith("urn:atlas-memory:problem:")
    assert set(body) >= {"type", "title", "status", "detail"}
    return body


def test_write_recall_list_get_chain_forget(world) -> None:
    svc = world["svc"]
    episode = svc("POST", "subjects/alice/episodes", json={"text": "I moved to Lisbon last month", "session_id": "s1"})
    assert episode.status_code == 201, episode.text
    fact = svc("POST", "subjects/alice/facts", json={"text": "Lives in Lisbon", "fact_type": "identity"}).json()
    recall = svc("POST", "subjects/alice/recall", json={"query": "where does alice live?", "k": 3})
    assert recall.status_code == 200, recall.text
    body = recall.json()
    assert [h["rank"] for h in body["hits"]] == list(range(1, len(body["hits"]) + 1))
    assert fact["id"] in {h["id"] for h in body["hits"]}
    assert "bm25" in body["legs"] and body["took_ms"] > 0
    memory = svc("GET", f"subjects/alice/memories/{fact['id']}")
    assert memory.status_code == 200 and memory.json()["text"] == "Lives in Lisbon"
    etag = memory.headers["ETag"]
    edited = svc(
        "PATCH", f"subjects/alice/facts/{fact['id']}", json={"text": "Lives in Porto"}, headers={"If-Match": etag}
    )
    assert edited.status_code == 200, edited.text
    new = edited.json()
    assert new["supersedes"] == [fact["id"]] and new["fact_type"] == "identity"
    chain = svc("GET", f"subjects/alice/memories/{fact['id']}/chain").json()["chain"]
    assert [m["id"] for m in chain] == [fact["id"], new["id"]]
    listing = svc("GET", "subjects/alice/memories", params={"type": "semantic"}).json()
    assert [m["id"] for m in listing["memories"]] == [new["id"]]
    with_old = svc("GET", "subjects/alice/memories", params={"type": "semantic", "superseded": "true"}).json()
    assert {m["id"] for m in with_old["memories"]} == {new["id"], fact["id"]}
    gone = svc("DELETE", f"subjects/alice/memories/{episode.json()['id']}")
    assert gone.json() == {"id": episode.json()["id"], "type": "episodic", "forgotten": True}
    _problem(svc("GET", f"subjects/alice/memories/{episode.json()['id']}"), 404)


def test_an_edit_of_a_replaced_version_or_a_stale_etag_is_refused(world) -> None:
    svc = world["svc"]
    fact = svc("POST", "subjects/alice/facts", json={"text": "Drinks coffee"}).json()
    etag = svc("GET", f"subjects/alice/memories/{fact['id']}").headers["ETag"]
    _problem(
        svc(
            "PATCH", f"subjects/alice/facts/{fact['id']}", json={"text": "Drinks tea"}, headers={"If-Match": '"stale"'}
        ),
        412,
    )
    assert svc(
        "PATCH", f"subjects/alice/facts/{fact['id']}", json={"text": "Drinks tea"}, headers={"If-Match": etag}
    ).ok
    second = svc(
        "PATCH", f"subjects/alice/facts/{fact['id']}", json={"text": "Drinks water"}, headers={"If-Match": etag}
    )
    assert "edit the newest version" in _problem(second, 409)["detail"]
    texts = {m["text"] for m in svc("GET", "subjects/alice/memories", params={"type": "semantic"}).json()["memories"]}
    assert texts == {"Drinks tea"}


def test_an_edit_can_say_the_old_version_was_wrong(world) -> None:
    svc = world["svc"]
    fact = svc("POST", "subjects/alice/facts", json={"text": "Is vegetarian", "confidence": 0.9}).json()
    path = f"subjects/alice/facts/{fact['id']}"
    etag = svc("GET", f"subjects/alice/memories/{fact['id']}").headers["ETag"]
    _problem(svc("PATCH", path, json={"text": "Eats fish", "contradiction": "mild"}, headers={"If-Match": etag}), 400)
    stale = svc("PATCH", path, json={"text": "Eats fish", "contradiction": "harsh"}, headers={"If-Match": '"old"'})
    _problem(stale, 412)
    edited = svc("PATCH", path, json={"text": "Eats fish", "contradiction": "harsh"}, headers={"If-Match": etag})
    assert edited.status_code == 200, edited.text
    assert (edited.json()["contradiction"], edited.json()["confidence"]) == ("harsh", 0.8)
    chain = svc("GET", f"subjects/alice/memories/{fact['id']}/chain").json()["chain"]
    assert [(m["text"], m.get("retracted")) for m in chain] == [("Is vegetarian", True), ("Eats fish", False)]


def test_concurrent_edits_of_one_version_leave_one_winner(world) -> None:
    svc = world["svc"]
    fact = svc("POST", "subjects/alice/facts", json={"text": "Owns a bike"}).json()
    results: list[int] = []

    def edit(text: str) -> None:
        results.append(
            Api(svc.base[: -len("/api/v1/")], svc.session.headers["Authorization"][7:])(
                "PATCH", f"subjects/alice/facts/{fact['id']}", json={"text": text}
            ).status_code
        )

    threads = [threading.Thread(target=edit, args=(f"Owns {n} bikes",)) for n in range(2, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200, 409, 409]
    current = svc("GET", "subjects/alice/memories", params={"type": "semantic"}).json()["memories"]
    assert len(current) == 1 and current[0]["supersedes"] == [fact["id"]]


def test_recall_filters_by_fact_type_and_when_a_memory_was_stored(world) -> None:
    svc = world["svc"]
    for text, fact_type, at in (  # the API stamps a fact's time itself: stored back then through the service
        ("Prefers window seats on trains", "preference", "2026-03-10T09:00:00Z"),
        ("Prefers aisle seats on trains", "preference", "2026-05-10T09:00:00Z"),
        ("Never takes trains after midnight", "constraint", "2026-03-12T09:00:00Z"),
    ):
        writes.fact_write(subject=world["alice"], text=text, fact_type=fact_type, at=at)
    assert svc(
        "POST", "subjects/alice/episodes", json={"text": "I like seats on trains", "at": "2026-03-11T09:00:00Z"}
    ).ok

    def texts(**filters) -> set[str]:
        answer = svc("POST", "subjects/alice/recall", json={"query": "seats on trains", **filters})
        assert answer.status_code == 200, answer.text
        return {hit["text"] for hit in answer.json()["hits"]}

    assert texts(fact_type="preference") == {"Prefers window seats on trains", "Prefers aisle seats on trains"}
    assert texts(since="2026-03-01T00:00:00Z", until="2026-04-01T00:00:00Z") == {
        "Prefers window seats on trains",
        "Never takes trains after midnight",
        "I like seats on trains",
    }
    assert texts(fact_type="preference", since="2026-03-01T00:00:00Z", until="2026-04-01T00:00:00Z") == {
        "Prefers window seats on trains"
    }


def test_turn_writes_and_recalls_in_one_round_trip(world) -> None:
    svc = world["svc"]
    svc("POST", "subjects/bob/facts", json={"text": "Bob is allergic to peanuts", "fact_type": "constraint"})
    turn = svc(
        "POST", "subjects/bob/turn", json={"text": "can you suggest a snack without peanuts?", "recall": {"k": 3}}
    )
    assert turn.status_code == 201, turn.text
    body = turn.json()
    assert body["episode"]["type"] == "episodic"
    assert body["episode"]["id"] not in {h["id"] for h in body["recall"]["hits"]}
    assert "Bob is allergic to peanuts" in {h["text"] for h in body["recall"]["hits"]}


def test_playbook_and_outcome(world) -> None:
    svc = world["svc"]
    playbook = svc(
        "POST",
        "subjects/alice/playbooks",
        json={"name": "reset", "trigger_text": "internet down", "steps": [{"instruction": "unplug the router"}]},
    )
    assert playbook.status_code == 201, playbook.text
    pid = playbook.json()["id"]
    done = svc(
        "POST",
        f"subjects/alice/playbooks/{pid}/outcome",
        json={"success": False, "refined_steps": [{"instruction": "call the ISP"}]},
    )
    assert done.status_code == 200, done.text
    assert done.json()["failure_count"] == 1 and done.json()["version"] == 2


def test_idempotency_key_stores_once_and_replays(world) -> None:
    svc = world["svc"]
    headers = {"Idempotency-Key": "turn-7"}
    first = svc("POST", "subjects/alice/episodes", json={"text": "retry me"}, headers=headers)
    again = svc("POST", "subjects/alice/episodes", json={"text": "retry me"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    episodes = svc("GET", "subjects/alice/memories", params={"type": "episodic"}).json()["memories"]
    assert [e["text"] for e in episodes].count("retry me") == 1
    _problem(svc("POST", "subjects/alice/episodes", json={"text": "something else"}, headers=headers), 422)


def test_subject_tokens_act_only_as_their_subject(world) -> None:
    own = world["own"]
    assert own("POST", "subjects/alice/episodes", json={"text": "mine"}).status_code == 201
    for path in ("subjects/bob/memories", "subjects/nobody/memories"):
        assert _problem(own("GET", path), 404)["detail"] == f"no subject '{path.split('/')[1]}'"
    _problem(own("GET", "subjects"), 403)
    _problem(own("GET", "catalog"), 403)
    me = own("GET", "me").json()
    assert me["kind"] == "subject" and me["subject"] == "alice" and me["scopes"] == ["read", "write"]


def test_scopes_and_authentication(world) -> None:
    _problem(world["ro"]("POST", "subjects/alice/episodes", json={"text": "x"}), 403)
    _problem(world["ro"]("DELETE", "subjects/alice/memories", json={"confirm": "alice"}), 403)
    for response in (
        world["anon"]("GET", "me"),
        Api(world["svc"].base[: -len("/api/v1/")], "atlas_000000000000_" + "A" * 43)("GET", "me"),
    ):
        assert _problem(response, 401)
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="atlas-memory"'
    assert not AuditRecord.objects.filter(action="memory.forget").exists()


def test_forget_everything_needs_the_subject_repeated(world) -> None:
    svc = world["svc"]
    svc("POST", "subjects/bob/facts", json={"text": "Bob likes jazz"})
    _problem(svc("DELETE", "subjects/bob/memories", json={"confirm": "alice"}), 400)
    _problem(svc("DELETE", "subjects/bob/memories", json={}), 400)
    assert svc("GET", "subjects/bob/memories").json()["memories"]
    done = svc("DELETE", "subjects/bob/memories", json={"confirm": "bob"})
    assert done.status_code == 200 and done.json()["forgotten"]["semantic"] == 1
    assert svc("GET", "subjects/bob/memories").json()["memories"] == []


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "subjects/alice/episodes", {"text": ""}, "text"),
        ("POST", "subjects/alice/episodes", {"text": "x", "colour": "red"}, "colour"),
        ("POST", "subjects/alice/episodes", {"text": "x", "role": "assistant"}, "role"),
        ("POST", "subjects/alice/facts", {"text": "x", "confidence": 2}, "confidence"),
        ("POST", "subjects/alice/facts", {"text": "x", "fact_type": "gossip"}, "fact_type"),
        ("POST", "subjects/alice/facts", {"text": "x", "supersedes": ["no-such-fact"]}, "supersedes"),
        ("POST", "subjects/alice/recall", {"query": "x", "k": 0}, "k"),
        ("POST", "subjects/alice/recall", {"query": "x", "memory_types": ["dreams"]}, "memory_types[0]"),
        ("POST", "subjects/alice/recall", {"query": "x", "fact_type": "gossip"}, "fact_type"),
        (
            "POST",
            "subjects/alice/recall",
            {"query": "x", "fact_type": "world", "memory_types": ["episodic"]},
            "fact_type",
        ),
        ("POST", "subjects/alice/recall", {"query": "x", "since": "last week"}, "since"),
        (
            "POST",
            "subjects/alice/recall",
            {"query": "x", "since": "2026-02-01T00:00:00Z", "until": "2026-01-01"},
            "since",
        ),
        ("POST", "subjects/alice/turn", {"text": "x", "recall": {"until": "soon"}}, "recall.until"),
        ("POST", "subjects/alice/playbooks", {"name": "x", "trigger_text": "y", "steps": []}, "steps"),
        ("GET", "subjects/alice/memories?page_size=500", None, "page_size"),
        ("GET", "subjects/alice/memories?sort=random", None, "sort"),
    ],
)
def test_bad_input_is_a_clear_400_and_writes_nothing(world, method, path, body, field) -> None:
    svc = world["svc"]
    before = len(svc("GET", "subjects/alice/memories", params={"superseded": "true"}).json()["memories"])
    problem = _problem(svc(method, path, json=body), 400 if field != "supersedes" else 404)
    assert field in {e["field"] for e in problem.get("errors", [])}
    assert len(svc("GET", "subjects/alice/memories", params={"superseded": "true"}).json()["memories"]) == before


def test_malformed_and_oversized_bodies(world, settings) -> None:
    svc = world["svc"]
    _problem(
        svc("POST", "subjects/alice/episodes", data=b"{not json", headers={"Content-Type": "application/json"}), 400
    )
    _problem(
        svc(
            "POST",
            "subjects/alice/episodes",
            data=b"text=x",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        ),
        415,
    )
    _problem(svc("POST", "subjects/alice/episodes", json=["a", "list"]), 400)
    _problem(svc("POST", "subjects/alice/episodes", json={"text": "x" * (2 * 1024 * 1024)}), 413)


def test_catalog_crud_for_tenant_tokens(world) -> None:
    svc = world["svc"]
    entry = svc("POST", "catalog", json={"title": "Returns", "text": "Returns within 30 days", "tags": ["policy"]})
    assert entry.status_code == 201, entry.text
    eid = entry.json()["id"]
    got = svc("GET", f"catalog/{eid}")
    assert got.json()["shared"] is True
    edited = svc(
        "PATCH", f"catalog/{eid}", json={"text": "Returns within 60 days"}, headers={"If-Match": got.headers["ETag"]}
    )
    assert edited.status_code == 200, edited.text
    _problem(svc("PATCH", f"catalog/{eid}", json={"text": "90 days"}, headers={"If-Match": got.headers["ETag"]}), 412)
    assert [m["text"] for m in svc("GET", "catalog").json()["memories"]] == ["Returns within 60 days"]
    hits = svc("POST", "subjects/alice/recall", json={"query": "how long do I have to return things?"}).json()["hits"]
    assert eid in {h["id"] for h in hits}
    _problem(world["ro"]("POST", "catalog", json={"title": "x", "text": "y"}), 403)
    assert svc("DELETE", f"catalog/{eid}").json()["forgotten"] is True
    _problem(svc("GET", f"catalog/{eid}"), 404)


def test_subjects_are_listed_and_created_with_their_key(world) -> None:
    svc = world["svc"]
    created = svc("POST", "subjects", json={"id": "carol", "display_name": "Carol"})
    assert created.status_code == 201, created.text
    assert ApiKeyCredential.objects.filter(subject__external_id="carol", subject__tenant=world["tenant"]).exists()
    _problem(svc("POST", "subjects", json={"id": "carol"}), 409)
    page = svc("GET", "subjects", params={"page_size": 2}).json()
    assert [s["id"] for s in page["subjects"]] == ["alice", "bob"] and page["next_cursor"]
    rest = svc("GET", "subjects", params={"page_size": 2, "cursor": page["next_cursor"]}).json()
    assert [s["id"] for s in rest["subjects"]] == ["carol"] and rest["next_cursor"] is None
    assert svc("POST", "subjects/carol/episodes", json={"text": "hello"}).status_code == 201


def test_rate_limit_answers_429_with_retry_after(world, settings) -> None:
    settings.ATLAS_API_RATE = "3/min"
    own = world["own"]
    statuses = [own("GET", "me").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = own("GET", "me")
    assert int(limited.headers["Retry-After"]) >= 1
    assert world["svc"]("GET", "me").status_code == 200  # per token, not global


def test_schema_and_docs_are_served_by_the_app(world) -> None:
    anon = world["anon"]
    schema = anon("GET", "schema/", headers={"Accept": "application/vnd.oai.openapi+json"})
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/v1/subjects/{subject}/recall" in paths
    docs = anon("GET", "docs/")
    assert docs.status_code == 200 and "swagger-ui" in docs.text and "cdn." not in docs.text
    asset = [line for line in docs.text.split('"') if line.endswith("swagger-ui-bundle.js")][0]
    assert requests.get(world["svc"].base.split("/api/v1/")[0] + asset, timeout=10).status_code == 200


def test_the_external_id_a_writer_gave_works_wherever_an_id_does(world) -> None:
    svc = world["svc"]
    fact = svc("POST", "subjects/alice/facts", json={"text": "Plays the cello", "external_id": "f-3"}).json()
    got = svc("GET", "subjects/alice/memories/f-3")
    assert got.status_code == 200 and got.json()["id"] == fact["id"] and got.json()["external_id"] == "f-3"
    edited = svc(
        "PATCH", "subjects/alice/facts/f-3", json={"text": "Plays the viola"}, headers={"If-Match": got.headers["ETag"]}
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["supersedes"] == [fact["id"]]  # links hold the memories' own ids
    chain = svc("GET", "subjects/alice/memories/f-3/chain").json()["chain"]
    assert [m["id"] for m in chain] == [fact["id"], edited.json()["id"]]
    forgotten = svc("DELETE", "subjects/alice/memories/f-3").json()
    assert forgotten == {"id": fact["id"], "type": "semantic", "forgotten": True}
    _problem(world["own"]("GET", "subjects/bob/memories/f-3"), 404)
