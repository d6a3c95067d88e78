"""The review queue over REST (live server, real tokens): list with old beside new, accept (as is and
edited), reject, scopes, idempotency, a second decision 409, and an agent refused its own override."""

from __future__ import annotations

import pytest

from memory import selectors
from memory.models import ConsolidationRun
from memory.services import writes
from tenants import tokens
from tenants.models import AuditRecord, Tenant
from tests.browser import person_create
from tests.memory.api.test_rest import Api, _problem, world  # noqa: F401 — the live-server fixture
from tests.memory.consolidation.scripted import held_run

pytestmark = pytest.mark.django_db(transaction=True)

PERSON = {"authority": "person", "written_by": "person:alice@example.org"}


def _agents_mode(tenant) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(review_mode="agents")


def test_agents_mode_answers_202_and_the_queue_decides(world) -> None:  # noqa: F811
    svc, ro = world["svc"], world["ro"]
    _agents_mode(world["tenant"])
    written = svc("POST", "subjects/alice/facts", json={"text": "Alice collects stamps"})
    assert written.status_code == 202 and written.json()["status"] == "pending"
    playbook = svc("POST", "subjects/alice/playbooks", json={"name": "n", "trigger_text": "t", "steps": ["s"]})
    assert playbook.status_code == 202 and playbook.json()["status"] == "pending"
    hits = svc("POST", "subjects/alice/recall", json={"query": "stamps collection", "k": 10}).json()["hits"]
    assert hits == []
    listed = ro("GET", "subjects/alice/proposals")
    assert listed.status_code == 200
    assert [p["id"] for p in listed.json()["proposals"]] == [playbook.json()["id"], written.json()["id"]]
    # Scopes: listing needs read, deciding needs review (never implied by write).
    fact_id = written.json()["id"]
    versions = {p["id"]: p["version"] for p in listed.json()["proposals"]}
    for token in (ro, svc):
        refused = token("POST", f"subjects/alice/proposals/{fact_id}/accept", json={"version": versions[fact_id]})
        assert _problem(refused, 403)["detail"] == "this token lacks the 'review' scope"
    svc = Api(
        svc.base.removesuffix("/api/v1/"),
        tokens.token_create(tenant=world["tenant"], name="reviewer", scopes="read,review", actor="t").secret,
    )
    decide = {"version": versions[fact_id]}
    accepted = svc("POST", f"subjects/alice/proposals/{fact_id}/accept", json=decide, headers={"Idempotency-Key": "k1"})
    assert accepted.status_code == 200, accepted.text
    assert (accepted.json()["status"], accepted.json()["authority"]) == ("current", "agent")
    replay = svc("POST", f"subjects/alice/proposals/{fact_id}/accept", json=decide, headers={"Idempotency-Key": "k1"})
    assert replay.status_code == 200 and replay.headers["Idempotent-Replayed"] == "true"
    again = svc("POST", f"subjects/alice/proposals/{fact_id}/accept", json=decide)
    assert _problem(again, 409)["detail"] == f"proposal {fact_id} was already accepted"
    rejected = svc(
        "POST",
        f"subjects/alice/proposals/{playbook.json()['id']}/reject",
        json={"version": versions[playbook.json()["id"]]},
    )
    assert rejected.status_code == 200 and rejected.json() == {
        "id": playbook.json()["id"],
        "type": "procedural",
        "status": "rejected",
    }
    # Deciding a rejected proposal again (a retry without a key, a racing accept) is a 409, not a 404.
    gone = svc("POST", f"subjects/alice/proposals/{playbook.json()['id']}/accept", json=decide)
    assert _problem(gone, 409)["detail"] == f"proposal {playbook.json()['id']} was rejected"
    never = svc("POST", "subjects/alice/proposals/no-such-proposal/reject", json=decide)
    assert _problem(never, 404)["errors"][0]["field"] == "proposal_id"
    hits = svc("POST", "subjects/alice/recall", json={"query": "stamps collection", "k": 10}).json()["hits"]
    assert [h["id"] for h in hits] == [fact_id]
    assert svc("GET", "subjects/alice/proposals").json() == {"proposals": [], "next_cursor": None}
    actions = sorted(AuditRecord.objects.filter(action__startswith="proposal.").values_list("action", flat=True))
    assert actions == ["proposal.accept", "proposal.reject"]


def test_a_replacement_of_the_persons_fact_is_theirs_to_accept(world, atlas_server) -> None:  # noqa: F811
    svc, alice = world["svc"], world["alice"]
    mine = writes.fact_write(subject=alice, text="Alice lives in Lisbon", **PERSON)
    proposal = svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Porto", "supersedes": [mine["id"]]})
    assert proposal.status_code == 202
    pid = proposal.json()["id"]
    listed = svc("GET", "subjects/alice/proposals").json()["proposals"]
    assert [(p["id"], [r["text"] for r in p["replaces"]]) for p in listed] == [(pid, ["Alice lives in Lisbon"])]
    version = listed[0]["version"]
    # The agent's service token cannot accept its own override of the person's fact.
    refused = svc("POST", f"subjects/alice/proposals/{pid}/accept", json={"version": version})
    assert _problem(refused, 403)["detail"] == "this token lacks the 'review' scope"
    assert selectors.memory_get(subject=alice, memory_id=mine["id"])["status"] == "current"
    # The person's own (personal) token may, once they granted it review — here with the text corrected,
    # which is then the agent's word, not the person's (only the dashboard stamps person).
    person = person_create("alice@example.org", "a long enough password 1")
    alice.person = person
    alice.save(update_fields=["person"])
    personal = tokens.token_create(
        tenant=alice.tenant, subject=alice, person=person, name="mine", scopes="read,review", actor="t"
    ).secret
    own = Api(atlas_server.url, personal)
    accepted = own(
        "POST",
        f"subjects/alice/proposals/{pid}/accept",
        json={"text": "Alice lives in Porto, Ribeira", "version": version},
    )
    assert accepted.status_code == 200, accepted.text
    body = accepted.json()
    assert (body["text"], body["authority"], body["supersedes"]) == (
        "Alice lives in Porto, Ribeira",
        "agent",
        [mine["id"]],
    )
    chain = svc("GET", f"subjects/alice/memories/{mine['id']}/chain").json()["chain"]
    assert [m["id"] for m in chain] == [mine["id"], pid]


def test_the_last_decision_over_rest_finishes_a_run_held_for_review(world) -> None:  # noqa: F811
    """The decision reports the run complete; the view approves it (the rest of its plan, the watermark)."""
    run, (first, second) = held_run(world["alice"], "Alice plays the cello", "Alice sings in a choir")
    reviewer = Api(
        world["svc"].base.removesuffix("/api/v1/"),
        tokens.token_create(tenant=world["tenant"], name="reviewer", scopes="read,review", actor="t").secret,
    )
    versions = {p["id"]: p["version"] for p in reviewer("GET", "subjects/alice/proposals").json()["proposals"]}
    rejected = reviewer("POST", f"subjects/alice/proposals/{first}/reject", json={"version": versions[first]})
    assert rejected.json() == {"id": first, "type": "semantic", "status": "rejected"}
    assert ConsolidationRun.objects.get(pk=run.pk).status == "needs_review"  # one still waits
    accepted = reviewer("POST", f"subjects/alice/proposals/{second}/accept", json={"version": versions[second]})
    assert accepted.status_code == 200 and accepted.json()["status"] == "current"
    run.refresh_from_db()
    assert run.status == "done" and run.changes["refused"] == [run.plan["facts"][0]["key"]]
