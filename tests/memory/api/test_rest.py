"""The REST API through real HTTP: uvicorn on a free port, the embedded Elasticsearch, real tokens."""

from __future__ import annotations

import threading
import uuid

import pytest
import requests

from memory.services import writes
from tenants import services, tokens
from tenants.models import ApiKeyCredential, ApiToken, AuditRecord
from tests.memory.agent_turns import QUESTION, REQUEST, agent_turn_memories, distilled_first, request_served

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
    listing = svc("GET", "subjects/alice/memories", params={"types": "semantic"}).json()
    assert [m["id"] for m in listing["memories"]] == [new["id"]]
    with_old = svc("GET", "subjects/alice/memories", params={"types": "semantic", "include_superseded": "true"}).json()
    assert {m["id"] for m in with_old["memories"]} == {new["id"], fact["id"]}
    gone = svc("DELETE", f"subjects/alice/memories/{episode.json()['id']}").json()
    receipt = gone.pop("receipt")
    assert gone == {"id": episode.json()["id"], "type": "episodic", "forgotten": True, "orphaned": []}
    assert receipt["indices"] == {"episodic": {"count": 1, "ids": [episode.json()["id"]], "truncated": False}}
    assert receipt["idempotency_records"] == {"count": 0, "ids": [], "truncated": False}
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
    tea = svc("GET", "subjects/alice/memories", params={"types": "semantic"}).json()["memories"][0]["id"]
    second = svc(
        "PATCH", f"subjects/alice/facts/{fact['id']}", json={"text": "Drinks water"}, headers={"If-Match": etag}
    )
    assert f"edit the newest version ({tea})" in _problem(second, 412)["detail"]  # the precondition comes first
    without = svc("PATCH", f"subjects/alice/facts/{fact['id']}", json={"text": "Drinks water"})
    assert f"newest version is {tea}" in _problem(without, 409)["detail"]
    texts = {m["text"] for m in svc("GET", "subjects/alice/memories", params={"types": "semantic"}).json()["memories"]}
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
    current = svc("GET", "subjects/alice/memories", params={"types": "semantic"}).json()["memories"]
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
    assert [h["rank"] for h in body["recall"]["hits"]] == list(range(1, len(body["recall"]["hits"]) + 1))


def test_recall_folds_the_turns_a_fact_cites_unless_asked_not_to(world) -> None:
    svc = world["svc"]
    said = svc("POST", "subjects/bob/episodes", json={"text": "I can't eat peanuts, I'm allergic"}).json()
    fact = svc(
        "POST",
        "subjects/bob/facts",
        json={"text": "Bob is allergic to peanuts", "fact_type": "constraint", "source_episodes": [said["id"]]},
    ).json()
    question = {"query": "is bob allergic to peanuts?", "k": 2}
    hits = svc("POST", "subjects/bob/recall", json=question).json()["hits"]
    assert [h["id"] for h in hits] == [fact["id"]]
    assert hits[0]["evidence"] == [{"id": said["id"], "timestamp": said["timestamp"], "text": said["text"]}]
    assert hits[0]["evidence_count"] == 1
    apart = svc("POST", "subjects/bob/recall", json={**question, "fold_evidence": False}).json()["hits"]
    assert {h["id"] for h in apart} == {fact["id"], said["id"]} and not any("evidence" in h for h in apart)
    turn = svc(
        "POST",
        "subjects/bob/turn",
        json={"text": "snack ideas? remember the peanuts", "recall": {"k": 3, "fold_evidence": False}},
    )
    assert turn.status_code == 201 and said["id"] in {h["id"] for h in turn.json()["recall"]["hits"]}
    refused = svc("POST", "subjects/bob/recall", json={**question, "fold_evidence": "sometimes"})
    assert _problem(refused, 400)["errors"][0]["field"] == "fold_evidence"


def test_an_agents_turn_gets_the_distilled_memory_first(world) -> None:
    """Issue 26 through REST: recall of a question and /turn of a request rank for the turn."""
    memories = agent_turn_memories(world["bob"])
    svc = world["svc"]
    recall = svc("POST", "subjects/bob/recall", json={"query": QUESTION, "k": 5})
    assert recall.status_code == 200, recall.text
    distilled_first(recall.json()["hits"], memories)
    turn = svc("POST", "subjects/bob/turn", json={"text": REQUEST, "recall": {"k": 5, "explain": True}})
    assert turn.status_code == 201, turn.text
    hits = turn.json()["recall"]["hits"]
    request_served(hits, memories)
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert turn.json()["recall"]["explain"]["turn_kind"] == "request"
    assert hits[0]["explain"]["turn_prior"] > 1  # the prior that lifted a distilled memory over the turns


def test_recall_explains_its_ranks_and_what_kept_an_expected_memory_out(world) -> None:
    svc = world["svc"]
    old = svc("POST", "subjects/bob/facts", json={"text": "Bob cycles to work"}).json()
    new = svc("PATCH", f"subjects/bob/facts/{old['id']}", json={"text": "Bob takes the tram to work"})
    assert new.status_code == 200, new.text
    plain = svc("POST", "subjects/bob/recall", json={"query": "how does bob get to work?", "k": 3}).json()
    assert "explain" not in plain and not any("explain" in h for h in plain["hits"])
    asked = {"query": "how does bob get to work?", "k": 3, "explain": True, "expect": [old["id"], "nope"]}
    body = svc("POST", "subjects/bob/recall", json=asked).json()
    assert [h["id"] for h in body["hits"]] == [new.json()["id"]]
    assert list(body["hits"][0]["explain"]["legs"]) == body["legs"]
    expected = {e["id"]: e for e in body["explain"]["expected"]}
    assert expected[old["id"]]["removed_by"] == "filter" and expected["nope"]["removed_by"] == "not found"
    too_many = svc("POST", "subjects/bob/recall", json={**asked, "expect": [f"m{n}" for n in range(21)]})
    assert _problem(too_many, 400)["errors"][0]["field"] == "expect"


def test_answers_name_the_subject_by_the_callers_id_never_the_internal_one(world) -> None:
    svc, alice = world["svc"], world["alice"]
    svc("POST", "catalog", json={"title": "Opening hours", "text": "Open 9 to 5 on weekdays"})
    fact = svc("POST", "subjects/alice/facts", json={"text": "Alice opens the shop on weekdays"})
    edited = svc("PATCH", f"subjects/alice/facts/{fact.json()['id']}", json={"text": "Alice opens it on Mondays"})
    answers = [
        fact,
        edited,
        svc("POST", "subjects/alice/episodes", json={"text": "I open the shop at 9"}),
        svc("POST", "subjects/alice/turn", json={"text": "when do we open?"}),
        svc("GET", f"subjects/alice/memories/{fact.json()['id']}"),
        svc("GET", "subjects/alice/memories?include_superseded=true"),
        svc("GET", f"subjects/alice/memories/{fact.json()['id']}/chain"),
        svc("POST", "subjects/alice/recall", json={"query": "opening hours weekdays", "k": 10}),
    ]
    for answer in answers:
        assert answer.status_code in (200, 201), answer.text
        assert str(alice.es_id) not in answer.text and '"user_id"' not in answer.text
    assert fact.json()["subject"] == "alice"
    hits = answers[-1].json()["hits"]
    assert {h.get("subject") for h in hits} == {"alice", None}  # the catalog entry has no owner
    assert all(("subject" in h) != h["shared"] for h in hits)


def test_playbook_steps_are_strings_or_objects_and_errors_name_the_step(world) -> None:
    svc = world["svc"]
    made = svc(
        "POST",
        "subjects/alice/playbooks",
        json={
            "name": "reset",
            "trigger_text": "internet down",
            "steps": ["unplug the router", {"instruction": "wait a minute", "tool": "timer"}, "plug it back in"],
        },
    )
    assert made.status_code == 201, made.text
    assert [(s["instruction"], s["tool"]) for s in made.json()["steps"]] == [
        ("unplug the router", None),
        ("wait a minute", "timer"),
        ("plug it back in", None),
    ]
    pid = made.json()["id"]
    refined = svc(
        "POST", f"subjects/alice/playbooks/{pid}/outcome", json={"success": True, "refined_steps": ["reboot"]}
    )
    assert refined.status_code == 200 and [s["instruction"] for s in refined.json()["steps"]] == ["reboot"]
    for steps, field in (
        (["fine", 7], "steps[1]"),
        (["fine", {"tool": "x"}], "steps[1].instruction"),
        (["fine", ""], "steps[1].instruction"),
        ([], "steps"),
    ):
        body = {"name": "n", "trigger_text": "t", "steps": steps}
        refused = svc("POST", "subjects/alice/playbooks", json=body)
        assert field in {e["field"] for e in _problem(refused, 400)["errors"]}, (steps, refused.text)


def test_one_name_per_filter_and_the_old_names_answer_with_a_deprecation_header(world) -> None:
    """types (the memory types: every memory names its own as type) and include_superseded, on the list as
    on recall and MCP; the old REST names work for one release, flagged as RFC 9745 says."""
    svc = world["svc"]
    old = svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Porto"}).json()
    svc("PATCH", f"subjects/alice/facts/{old['id']}", json={"text": "Alice lives in Lisbon"})
    svc("POST", "subjects/alice/episodes", json={"text": "we moved!"})
    new = svc("GET", "subjects/alice/memories", params={"types": "semantic", "include_superseded": "true"})
    assert new.status_code == 200 and "Deprecation" not in new.headers
    assert {m["text"] for m in new.json()["memories"]} == {"Alice lives in Porto", "Alice lives in Lisbon"}
    legacy = svc("GET", "subjects/alice/memories", params={"type": "semantic", "superseded": "true"})
    assert legacy.json() == new.json()
    assert legacy.headers["Deprecation"] == "@1796256000" and 'rel="deprecation"' in legacy.headers["Link"]
    assert legacy.headers["X-Atlas-Deprecated"] == "type, superseded"
    both = svc("GET", "subjects/alice/memories", params={"type": "semantic", "types": "semantic"})
    assert _problem(both, 400)["errors"][0]["field"] == "type"
    recall = svc("POST", "subjects/alice/recall", json={"query": "where does alice live", "types": ["semantic"]})
    assert recall.status_code == 200 and "Deprecation" not in recall.headers
    assert {h["type"] for h in recall.json()["hits"]} == {"semantic"}
    legacy = svc("POST", "subjects/alice/recall", json={"query": "where does alice live", "memory_types": ["semantic"]})
    assert legacy.json()["hits"] == recall.json()["hits"] and legacy.headers["X-Atlas-Deprecated"] == "memory_types"


def test_an_agents_recall_counts_as_use(world, settings, monkeypatch) -> None:
    from memory import tasks

    scheduled: list = []
    monkeypatch.setattr(tasks.memories_usage_record_task, "delay", lambda targets: scheduled.append(targets))
    settings.ATLAS_USAGE_RECORDING = "celery"
    fact = world["svc"]("POST", "subjects/bob/facts", json={"text": "Bob takes the 8:15 ferry"}).json()
    hits = world["svc"]("POST", "subjects/bob/recall", json={"query": "which ferry?", "k": 3}).json()["hits"]
    assert fact["id"] in {h["id"] for h in hits}
    assert [memory_id for _index, memory_id in scheduled[0]] == [h["id"] for h in hits if h["type"] != "episodic"]


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
    episodes = svc("GET", "subjects/alice/memories", params={"types": "episodic"}).json()["memories"]
    assert [e["text"] for e in episodes].count("retry me") == 1
    _problem(svc("POST", "subjects/alice/episodes", json={"text": "something else"}, headers=headers), 422)


def _slot(world, token_name: str, path: str, key: str) -> str:
    import hashlib

    token = ApiToken.objects.get(tenant=world["tenant"], name=token_name)
    return "idem:" + hashlib.sha256(f"{token.pk}:/api/v1/{path}:{key}".encode()).hexdigest()


def _texts(svc, kind: str) -> list[str]:
    return [m["text"] for m in svc("GET", "subjects/alice/memories", params={"types": kind}).json()["memories"]]


def test_idempotency_records_outlive_the_process_memory(world, settings) -> None:
    """Without REDIS_URL the records are in the database: a restart (the process's memory, caches
    included, gone) or another web worker still replays the first answer instead of storing again.
    With Redis they live there, outside every process."""
    from django.core.cache import cache

    from tenants.models import IdempotencyRecord

    svc = world["svc"]
    first = svc("POST", "subjects/alice/facts", json={"text": "Alice keeps bees"}, headers={"Idempotency-Key": "k1"})
    if not settings.REDIS_URL:
        cache.clear()  # all a restarted process would have lost
        [row] = IdempotencyRecord.objects.all()
        assert (row.running, row.subject, row.tenant_key) == (False, b"alice".hex(), str(world["tenant"].es_id))
    again = svc("POST", "subjects/alice/facts", json={"text": "Alice keeps bees"}, headers={"Idempotency-Key": "k1"})
    assert again.headers.get("Idempotent-Replayed") == "true" and again.json() == first.json()
    assert _texts(svc, "semantic") == ["Alice keeps bees"]


@pytest.mark.parametrize(
    ("path", "body", "kind"),
    [
        ("subjects/alice/episodes", {"text": "I moved to Lisbon", "session_id": "s1"}, "episodic"),
        ("subjects/alice/facts", {"text": "Alice lives in Lisbon"}, "semantic"),
        ("subjects/alice/playbooks", {"name": "move", "trigger_text": "moving house", "steps": ["pack"]}, "procedural"),
        ("subjects/alice/turn", {"text": "I moved to Lisbon", "session_id": "s1"}, "episodic"),
    ],
)
def test_a_retry_of_a_write_whose_fate_was_unknown_lands_on_the_same_memory(world, path, body, kind) -> None:
    """A 5xx releases the key, yet the write may have reached the engine (a stall, a killed gateway): the
    memory's id derives from the key, so the retry stores nothing twice."""
    from atlas_site.idempotency import idempotency_record_release

    def memory(answer: dict) -> dict:
        return answer.get("episode", answer)  # /turn answers the episode beside the recall

    svc = world["svc"]
    first = svc("POST", path, json=body, headers={"Idempotency-Key": "fate-unknown"})
    assert first.status_code == 201, first.text
    idempotency_record_release(slot=_slot(world, "svc", path, "fate-unknown"))  # as after a 5xx
    retry = svc("POST", path, json=body, headers={"Idempotency-Key": "fate-unknown"})
    assert retry.status_code == 201 and "Idempotent-Replayed" not in retry.headers  # it ran again
    assert memory(retry.json())["id"] == memory(first.json())["id"]
    stored = _texts(svc, kind)
    assert len(stored) == 1, stored
    if kind == "episodic":
        assert memory(retry.json()).get("previous_turn_id") is None  # not linked to its own first attempt
    other = svc("POST", path, json=body, headers={"Idempotency-Key": "another-request"})
    assert memory(other.json())["id"] != memory(first.json())["id"] and len(_texts(svc, kind)) == 2


def test_a_request_still_running_holds_its_key_as_long_as_it_runs_and_a_dead_ones_lapses(
    world, settings, monkeypatch
) -> None:
    """Issue 25 point 4: the "still running" lock no longer lapses after a fixed time while the first request
    works — its process renews the lease as long as it runs (here past three lease lengths); a process that
    died mid-request renews nothing, its lease lapses, and the retry runs (onto the same document)."""
    import hashlib
    import time

    from atlas_site import idempotency
    from atlas_site.idempotency import idempotency_lease_held, idempotency_record_claim

    monkeypatch.setattr(idempotency, "LEASE_SECONDS", 1)
    monkeypatch.setattr(idempotency, "LEASE_RENEW_SECONDS", 0.2)
    svc = world["svc"]
    body = b'{"text": "Alice keeps bees"}'
    headers = {"Idempotency-Key": "slow", "Content-Type": "application/json"}
    slot = _slot(world, "svc", "subjects/alice/facts", "slow")
    assert idempotency_record_claim(slot=slot, digest=hashlib.sha256(body).hexdigest())  # the first request
    with idempotency_lease_held(slot=slot):  # … still working, in a live process
        time.sleep(3.5)
        busy = svc("POST", "subjects/alice/facts", data=body, headers=headers)
        assert _problem(busy, 409)["type"].endswith("idempotency_running") and busy.headers["Retry-After"] == "2"
    assert _texts(svc, "semantic") == []
    # Its process dies: nothing renews the lease, which lapses; the retry then runs, once.
    time.sleep(1.5)
    done = svc("POST", "subjects/alice/facts", data=body, headers=headers)
    assert done.status_code == 201 and _texts(svc, "semantic") == ["Alice keeps bees"]
    again = svc("POST", "subjects/alice/facts", data=body, headers=headers)
    assert again.headers["Idempotent-Replayed"] == "true" and _texts(svc, "semantic") == ["Alice keeps bees"]


def test_forgetting_drops_the_stored_answers_that_hold_the_text(world) -> None:
    """A retry after forgetting is not answered from the stored first answer (the forgotten text) — for
    one memory, for the whole subject (with the subject's own token too), and for a deleted catalog entry."""
    svc, own = world["svc"], world["own"]

    def posted(api, path: str, body: dict, key: str) -> dict:
        response = api("POST", path, json=body, headers={"Idempotency-Key": key})
        assert response.status_code == 201, response.text
        return response.json()

    def replayed(api, path: str, body: dict, key: str) -> bool:
        return (
            api("POST", path, json=body, headers={"Idempotency-Key": key}).headers.get("Idempotent-Replayed") == "true"
        )

    secret = {"text": "Alice's door code is four-two-one"}
    kept = {"text": "Alice likes jazz"}
    fact = posted(svc, "subjects/alice/facts", secret, "f-1")
    posted(svc, "subjects/alice/facts", kept, "f-2")
    assert replayed(svc, "subjects/alice/facts", secret, "f-1")
    receipt = svc("DELETE", f"subjects/alice/memories/{fact['id']}").json()["receipt"]
    assert receipt["idempotency_records"]["count"] == 1
    assert replayed(svc, "subjects/alice/facts", kept, "f-2")  # another memory's answer stays
    assert not replayed(svc, "subjects/alice/facts", secret, "f-1")  # a retry writes it again, as new
    posted(own, "subjects/alice/episodes", {"text": "said through my own token"}, "e-1")
    receipt = svc("DELETE", "subjects/alice/memories", json={"confirm": "alice"}).json()["receipt"]
    assert receipt["idempotency_records"]["count"] == 3  # f-2, the second f-1 and the subject token's e-1
    assert not replayed(own, "subjects/alice/episodes", {"text": "said through my own token"}, "e-1")
    entry = posted(svc, "catalog", {"title": "Door", "text": "The shop's door code is 1234"}, "c-1")
    deleted = svc("DELETE", f"catalog/{entry['id']}").json()["receipt"]
    assert deleted["indices"] == {"catalog": {"count": 1, "ids": [entry["id"]], "truncated": False}}
    assert deleted["idempotency_records"]["count"] == 1
    assert not replayed(svc, "catalog", {"title": "Door", "text": "The shop's door code is 1234"}, "c-1")


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
    assert done.json()["receipt"]["indices"]["semantic"]["count"] == 1
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
        (
            "POST",
            "subjects/alice/recall",
            {"query": "x", "types": ["dreams"]},
            "types",
        ),  # one error naming every unknown type
        ("POST", "subjects/alice/recall", {"query": "x", "fact_type": "gossip"}, "fact_type"),
        (
            "POST",
            "subjects/alice/recall",
            {"query": "x", "fact_type": "world", "types": ["episodic"]},
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
    before = len(svc("GET", "subjects/alice/memories", params={"include_superseded": "true"}).json()["memories"])
    problem = _problem(svc(method, path, json=body), 400 if field != "supersedes" else 404)
    assert field in {e["field"] for e in problem.get("errors", [])}
    assert (
        len(svc("GET", "subjects/alice/memories", params={"include_superseded": "true"}).json()["memories"]) == before
    )


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
    assert forgotten.pop("receipt")["indices"]["semantic"]["ids"] == [fact["id"]]
    assert forgotten == {"id": fact["id"], "type": "semantic", "forgotten": True, "orphaned": []}
    _problem(world["own"]("GET", "subjects/bob/memories/f-3"), 404)


def test_writes_during_a_backups_write_block_are_a_503_and_reads_go_on(world) -> None:
    """While atlas_backup holds ``index.blocks.write`` (Elasticsearch answers 403 cluster_block_exception),
    an agent gets a 503 problem to retry, not a 500, on a write and a forget; recall still answers."""
    from django.conf import settings

    from memory.elastic.maintenance import indices_settings, indices_write_block_set

    svc = world["svc"]
    kept = svc("POST", "subjects/alice/facts", json={"text": "Alice keeps bees"}).json()
    names = sorted(n for n in indices_settings() if n.startswith(f"{settings.ATLAS_ES_INDEX_PREFIX}-"))
    indices_write_block_set(names=names, blocked=True)
    try:
        blocked = svc("POST", "subjects/alice/facts", json={"text": "Alice keeps goats"})
        refused = _problem(blocked, 503)
        assert "write block" in refused["detail"] and blocked.headers["Retry-After"] == "5"
        _problem(svc("DELETE", f"subjects/alice/memories/{kept['id']}"), 503)
        recall = svc("POST", "subjects/alice/recall", json={"query": "what does alice keep?", "k": 3})
        assert recall.status_code == 200 and kept["id"] in {h["id"] for h in recall.json()["hits"]}
    finally:
        indices_write_block_set(names=names, blocked=False)
    assert svc("DELETE", f"subjects/alice/memories/{kept['id']}").json()["forgotten"] is True
