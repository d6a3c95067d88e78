"""The review queue's services: review modes hold writes as pending; accept (as is or edited), reject
(remembered), concurrency (accept twice, accept against reject), and every decision audited."""

from __future__ import annotations

import threading

import pytest

from atlas_site.errors import Conflict, NotFound, PermissionDenied
from memory.models import RejectedProposal
from memory.recall import memory_recall
from memory.selectors import memory_chain_get, memory_counts, memory_get, memory_list, proposals_list
from memory.services.writes import fact_write, playbook_write
from tenants.models import AuditRecord, Tenant
from tests.memory.reviewing import AGENT_WRITER, accept, decide_all, reject

PERSON = {"authority": "person", "written_by": "person:maya@example.org"}
AGENT = {"authority": "agent", "written_by": "token:svc"}


def _mode(subject, mode: str) -> None:
    Tenant.objects.filter(pk=subject.tenant.pk).update(review_mode=mode)
    subject.tenant.refresh_from_db()


def _recalled(subject, query: str) -> list[str]:
    return [h["id"] for h in memory_recall(subject=subject, query=query, k=10).hits]


def test_review_modes_hold_what_they_name(maya) -> None:
    off = fact_write(subject=maya, text="Maya plays the cello", **AGENT)
    assert memory_get(subject=maya, memory_id=off["id"])["status"] == "current"
    _mode(maya, "consolidation")
    still = fact_write(subject=maya, text="Maya plays the violin", **AGENT)
    run = fact_write(subject=maya, text="Maya plays the piano", authority="consolidation", written_by="run:1")
    assert [memory_get(subject=maya, memory_id=m["id"])["status"] for m in (still, run)] == ["current", "pending"]
    _mode(maya, "agents")
    fact = fact_write(subject=maya, text="Maya plays the flute", **AGENT)
    playbook = playbook_write(subject=maya, name="practice", trigger_text="before a concert", steps=["scales"], **AGENT)
    mine = fact_write(subject=maya, text="Maya plays the drums", **PERSON)
    statuses = [memory_get(subject=maya, memory_id=m["id"])["status"] for m in (fact, playbook, mine)]
    assert statuses == ["pending", "pending", "current"]
    recalled = _recalled(maya, "which instrument does Maya play? practice before a concert")
    assert set(recalled) >= {off["id"], still["id"], mine["id"]}
    assert not set(recalled) & {run["id"], fact["id"], playbook["id"]}
    assert memory_counts(subject=maya)["pending"] == 3
    listed = proposals_list(subject=maya)["proposals"]
    assert [p["id"] for p in listed] == [playbook["id"], fact["id"], run["id"]]
    assert [p["id"] for p in proposals_list(subject=maya, written_by="run:1")["proposals"]] == [run["id"]]


def test_accept_makes_a_replacement_current_and_reject_is_remembered(maya) -> None:
    mine = fact_write(subject=maya, text="Maya lives in Lisbon", **PERSON)
    proposal = fact_write(subject=maya, text="Maya lives in Porto", supersedes=[mine["id"]], **AGENT)
    listed = proposals_list(subject=maya)["proposals"]
    assert [(p["id"], [r["id"] for r in p["replaces"]]) for p in listed] == [(proposal["id"], [mine["id"]])]
    assert listed[0]["replaces"][0]["text"] == "Maya lives in Lisbon"
    # An agent cannot accept its own proposal to replace the person's fact.
    with pytest.raises(PermissionDenied):
        accept(maya, proposal["id"], actor="token:x", reviewer=AGENT_WRITER)
    accepted = accept(maya, proposal["id"], actor="person:maya")
    assert accepted["supersedes"] == [mine["id"]] and "review_state" not in accepted
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=mine["id"])] == [mine["id"], proposal["id"]]
    assert memory_get(subject=maya, memory_id=proposal["id"])["status"] == "current"
    assert memory_get(subject=maya, memory_id=mine["id"])["status"] == "superseded"
    assert _recalled(maya, "where does Maya live? Porto") == [proposal["id"]]
    with pytest.raises(Conflict) as twice:
        accept(maya, proposal["id"], actor="person:maya")
    assert twice.value.message == f"proposal {proposal['id']} was already accepted"
    # Reject: deleted, remembered by a hash (no text), audited without text.
    _mode(maya, "agents")
    other = fact_write(subject=maya, text="Maya  hates   coffee!", **AGENT)
    assert reject(maya, other["id"], actor="person:maya")["status"] == "rejected"
    with pytest.raises(NotFound):
        memory_get(subject=maya, memory_id=other["id"])
    rejected = RejectedProposal.objects.get(subject=maya)
    assert rejected.memory_type == "semantic" and len(rejected.text_key) == 64 and "coffee" not in rejected.text_key
    actions = list(
        AuditRecord.objects.filter(tenant=maya.tenant, action__startswith="proposal.").values_list("action", "target")
    )
    assert sorted(actions) == [
        ("proposal.accept", f"{maya}:{proposal['id']}"),
        ("proposal.reject", f"{maya}:{other['id']}"),
    ]
    assert "coffee" not in str(AuditRecord.objects.filter(action="proposal.reject").values_list("detail"))


def test_edit_then_accept_is_the_persons_and_is_re_embedded(maya) -> None:
    _mode(maya, "agents")
    proposal = fact_write(subject=maya, text="Maya owns a bicycle", **AGENT)
    accepted = accept(maya, proposal["id"], text="Maya owns a red cargo bike", actor="p")
    shaped = memory_get(subject=maya, memory_id=accepted["id"])
    assert (shaped["text"], shaped["authority"], shaped["written_by"]) == (
        "Maya owns a red cargo bike",
        "person",
        "person:1",
    )
    assert _recalled(maya, "red cargo bike")[0] == proposal["id"]


@pytest.mark.django_db(transaction=True)
def test_accept_twice_at_once_never_forks_and_accept_against_reject_has_one_winner(maya) -> None:
    for round_ in range(3):
        mine = fact_write(subject=maya, text=f"Maya's locker is number {round_}", **PERSON)
        a = fact_write(subject=maya, text=f"Maya's locker is number {round_ + 10}", supersedes=[mine["id"]], **AGENT)
        outcomes: list[str] = []

        def decide(kind: str, proposal_id: str = a["id"], outcomes: list[str] = outcomes) -> None:
            try:
                if kind == "accept":
                    accept(maya, proposal_id, actor="p")
                else:
                    reject(maya, proposal_id, actor="p")
                outcomes.append(kind)
            except Conflict:
                outcomes.append("409")

        kinds = ["accept", "accept"] if round_ == 0 else ["accept", "reject"]
        threads = [threading.Thread(target=decide, args=(k,)) for k in kinds]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) in (["409", "accept"], ["409", "reject"]), outcomes
        chain = memory_chain_get(subject=maya, memory_id=mine["id"])
        old = memory_get(subject=maya, memory_id=mine["id"])
        if "accept" in outcomes:
            assert [m["id"] for m in chain] == [mine["id"], a["id"]] and old["superseded_by"] == [a["id"]]
        else:
            assert [m["id"] for m in chain] == [mine["id"]] and old["status"] == "current"
            assert "superseded_by" not in old


def test_bulk_decisions_per_writer(maya) -> None:
    _mode(maya, "consolidation")
    run1 = [
        fact_write(subject=maya, text=f"Maya visited city {n}", authority="consolidation", written_by="run:1")
        for n in range(3)
    ]
    run2 = fact_write(subject=maya, text="Maya visited Rome", authority="consolidation", written_by="run:2")
    done = decide_all(maya, "reject", "run:1", actor="p")
    assert sorted(done["rejected"]) == sorted(m["id"] for m in run1) and done["refused"] == []
    assert [p["id"] for p in proposals_list(subject=maya)["proposals"]] == [run2["id"]]
    done = decide_all(maya, "accept", "run:2", actor="p")
    assert done == {"accepted": [run2["id"]], "refused": []}
    assert [m["id"] for m in memory_list(subject=maya, memory_types=["semantic"])["memories"]] == [run2["id"]]


def test_forgetting_everything_takes_the_proposals_and_the_remembered_rejections(maya, tom) -> None:
    from memory.services.forget import subject_memories_forget

    _mode(maya, "agents")
    tom.tenant.refresh_from_db()
    waiting = fact_write(subject=maya, text="Maya likes opera", **AGENT)
    rejected = fact_write(subject=maya, text="Maya likes jazz", **AGENT)
    theirs = fact_write(subject=tom, text="Tom likes jazz", **AGENT)
    reject(maya, rejected["id"], actor="p")
    reject(tom, theirs["id"], actor="p")
    assert memory_counts(subject=maya)["pending"] == 1
    result = subject_memories_forget(subject=maya, actor="person:maya")
    assert result["counts"] == {"semantic": 1}
    with pytest.raises(NotFound):
        memory_get(subject=maya, memory_id=waiting["id"])
    assert list(RejectedProposal.objects.values_list("subject__external_id", flat=True)) == ["tom"]
    detail = AuditRecord.objects.get(action="memory.forget_subject").detail
    assert detail["rejected_proposals"] == 1


def test_accepting_after_the_fact_was_replaced_meanwhile_is_a_conflict_and_keeps_waiting(maya) -> None:
    from memory.services.writes import fact_edit

    mine = fact_write(subject=maya, text="Maya works in Lisbon", **PERSON)
    proposal = fact_write(subject=maya, text="Maya works in Porto", supersedes=[mine["id"]], **AGENT)
    newer = fact_edit(subject=maya, memory_id=mine["id"], text="Maya works from home", **PERSON)
    with pytest.raises(Conflict) as refused:
        accept(maya, proposal["id"], actor="p")
    assert f"its newest version is {newer['id']}" in refused.value.message
    assert memory_get(subject=maya, memory_id=proposal["id"])["status"] == "pending"
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=mine["id"])] == [mine["id"], newer["id"]]
