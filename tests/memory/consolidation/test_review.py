"""Consolidation under review (the fake LLM server): with review_mode=consolidation the run's facts wait
as proposals, never recalled until accepted; a rejected proposal is not proposed again; a run the
mass-change guard held appears in the queue and is finished by the person's last decision — which the
decision reports, and the caller approves (the review service never calls back into consolidation)."""

from __future__ import annotations

import pytest

from memory.consolidation.run import consolidation_run, consolidation_runs_settle
from memory.models import ConsolidationRun
from memory.recall import memory_recall
from memory.selectors import memory_get, proposals_list
from memory.services.review import proposal_accept, proposal_reject, proposals_decide
from tenants.models import Tenant
from tests.fake_llm import empty_plan, fact
from tests.memory.consolidation.scripted import held_run, mass_change_scripted, say, watermark
from tests.memory.reviewing import PERSON_REVIEWER, accept, decide_all, reject, version_of

PERSON = {"authority": "person", "written_by": "person:maya@example.org"}


@pytest.fixture
def reviewed(maya):
    Tenant.objects.filter(pk=maya.tenant.pk).update(review_mode="consolidation")
    maya.tenant.refresh_from_db()
    return maya


def _recalled(subject, query: str) -> list[str]:
    return [h["text"] for h in memory_recall(subject=subject, query=query, k=10, memory_types=["semantic"]).hits]


def test_a_run_under_review_writes_proposals_recall_never_sees_until_accepted(reviewed, llm) -> None:
    maya = reviewed
    seats = say(maya, "On flights I always take a window seat", 0)
    cat = say(maya, "My cat is called Miso", 1)
    llm.script(
        empty_plan(facts=[fact("Maya prefers window seats on flights", [seats]), fact("Maya's cat is Miso", [cat])])
    )
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done" and sorted(outcome.changes) == ["pending"] and len(outcome.changes["pending"]) == 2
    assert watermark(maya) is not None  # the run is done: what it proposed waits in the queue
    proposals = proposals_list(subject=maya)["proposals"]
    assert {(p["text"], p["authority"], p["written_by"]) for p in proposals} == {
        ("Maya prefers window seats on flights", "consolidation", f"run:{outcome.run.pk}"),
        ("Maya's cat is Miso", "consolidation", f"run:{outcome.run.pk}"),
    }
    assert _recalled(maya, "window seat on flights, cat Miso") == []
    seat_id = next(p["id"] for p in proposals if "window" in p["text"])
    accept(maya, seat_id, actor="person:maya")
    assert _recalled(maya, "window seat on flights") == ["Maya prefers window seats on flights"]


def test_a_rejected_proposal_is_not_proposed_again(reviewed, llm) -> None:
    maya = reviewed
    first = say(maya, "I sometimes drink coffee", 0)
    llm.script(empty_plan(facts=[fact("Maya is a coffee addict", [first])]))
    run1 = consolidation_run(subject=maya)
    (proposal,) = run1.changes["pending"]
    reject(maya, proposal, actor="person:maya")
    second = say(maya, "Had a coffee with Ana", 5)
    llm.script(empty_plan(facts=[fact("Maya is a Coffee addict!", [second]), fact("Maya has a friend Ana", [second])]))
    run2 = consolidation_run(subject=maya)
    assert [r["reason"] for r in run2.rejected] == ["the person rejected this proposal before"]
    assert [p["text"] for p in proposals_list(subject=maya)["proposals"]] == ["Maya has a friend Ana"]
    # A proposal still waiting is not asked a second time either.
    third = say(maya, "Ana and I went hiking", 9)
    llm.script(empty_plan(facts=[fact("Maya has a friend Ana", [third])]))
    run3 = consolidation_run(subject=maya)
    assert [r["reason"] for r in run3.rejected] == ["the same proposal already waits for the person's review"]
    assert len(proposals_list(subject=maya)["proposals"]) == 1


def test_a_held_mass_change_is_finished_by_the_persons_last_decision(maya, llm, settings) -> None:
    facts = mass_change_scripted(maya, llm, settings, facts=4, replaced=2, free=1)
    outcome = consolidation_run(subject=maya)
    run = ConsolidationRun.objects.get(pk=outcome.run.pk)
    assert run.status == "needs_review" and len(run.changes["pending"]) == 2
    listed = proposals_list(subject=maya, written_by=f"run:{run.pk}")["proposals"]
    assert sorted((p["text"], p["replaces"][0]["text"]) for p in listed) == [
        ("Maya dislikes colour 0", "Maya's fact number 0: likes colour 0"),
        ("Maya dislikes colour 1", "Maya's fact number 1: likes colour 1"),
    ]
    keep, drop = sorted(listed, key=lambda p: p["text"])
    reject(maya, drop["id"], actor="person:maya")
    run.refresh_from_db()
    assert run.status == "needs_review"  # one still waits
    decided = decide_all(maya, "accept", f"run:{run.pk}", actor="person:maya")
    assert decided == {"accepted": [keep["id"]], "refused": []}
    run.refresh_from_db()
    assert run.status == "done" and watermark(maya) is not None
    assert run.changes["refused"] == [s["key"] for s in run.plan["supersessions"] if s["text"] == drop["text"]]
    assert memory_get(subject=maya, memory_id=facts[0]["id"])["superseded_by"] == [keep["id"]]
    assert memory_get(subject=maya, memory_id=facts[1]["id"])["status"] == "current"


def test_the_last_decision_reports_the_held_run_and_the_caller_approves_it(maya) -> None:
    run, (first, second) = held_run(maya, "Maya plays the cello", "Maya sings in a choir")
    person = {"actor": "person:maya", "reviewer": PERSON_REVIEWER}
    one = proposal_reject(subject=maya, proposal_id=first, version=version_of(maya, first), **person)
    assert (one.shown["status"], one.runs_complete) == ("rejected", [])  # the other one still waits
    nothing = proposals_decide(subject=maya, decision="accept", written_by=f"run:{run.pk}", shown={}, **person)
    assert (nothing.shown, nothing.runs_complete) == ({"accepted": [], "refused": []}, [])  # decided none
    last = proposal_accept(subject=maya, proposal_id=second, version=version_of(maya, second), **person)
    assert (last.shown["text"], last.runs_complete) == ("Maya sings in a choir", [run.pk])
    run.refresh_from_db()
    assert run.status == "needs_review"  # reported, not approved: approving is the caller's
    consolidation_runs_settle(subject=maya, run_ids=last.runs_complete, actor="person:maya")
    run.refresh_from_db()
    assert run.status == "done" and run.changes["refused"] == [run.plan["facts"][0]["key"]]
    assert memory_get(subject=maya, memory_id=second)["status"] == "current"
    # Settling again (a retried request) finds no run waiting: nothing happens twice.
    consolidation_runs_settle(subject=maya, run_ids=last.runs_complete, actor="person:maya")
    assert ConsolidationRun.objects.get(pk=run.pk).attempts == run.attempts
