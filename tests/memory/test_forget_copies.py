"""The copies of a memory's text outside the indices — consolidation run records, idempotency records —
go with it: for one memory (the records quoting it are scrubbed, the rest stay), for a subject and for a
tenant (theirs all go, nobody else's); and the receipt bounds its id lists."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from atlas_site.idempotency import idempotency_record_get, idempotency_record_store
from memory.consolidation.run import consolidation_run, consolidation_run_approve
from memory.models import ConsolidationRun
from memory.selectors import memory_get, memory_list
from memory.services import forget, writes
from memory.services.consolidation_lease import lease_holder
from tests.fake_llm import empty_plan, fact, llm_serving

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def llm(settings):
    with llm_serving(
        settings, ATLAS_LLM_API_KEY="sk-test-fake-key", ATLAS_LLM_RETRIES=1, ATLAS_USAGE_RECORDING="off"
    ) as fake:
        yield fake


def _said(subject, text: str, minutes: int = 0) -> str:
    return writes.episode_write(subject=subject, text=text, session_id="s1", at=T0 + timedelta(minutes=minutes))["id"]


def _answer(slot: str, subject, body: dict) -> None:
    """What the idempotent decorator stores for a POST answered 201."""
    record = {"state": "done", "digest": "d", "status": 201, "body": body, "content_type": "application/json"}
    idempotency_record_store(slot=slot, record=record, tenant_id=str(subject.tenant.es_id), subject=subject.external_id)


def test_forgetting_one_memory_scrubs_its_text_from_run_records_and_stored_answers(maya, llm) -> None:
    sailing = _said(maya, "I sail on the Tagus every Sunday")
    cello = _said(maya, "I started cello lessons", 1)
    llm.script(
        empty_plan(
            facts=[
                fact("Maya sails on the Tagus on Sundays", [sailing]),
                fact("Maya plays the cello", [cello]),
                fact("Maya might sail on the Tagus competitively", [sailing], confidence=0.2),
            ]
        )
    )
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done", outcome.error
    run = ConsolidationRun.objects.get(pk=outcome.run.pk)
    sails_id, cello_id = run.changes["facts"]
    assert memory_get(subject=maya, memory_id=sails_id)["text"] == "Maya sails on the Tagus on Sundays"
    _answer("idem:sails", maya, {"id": sails_id, "text": "Maya sails on the Tagus on Sundays"})
    _answer("idem:cello", maya, {"id": cello_id, "text": "Maya plays the cello"})
    _answer("idem:quoted", maya, {"id": "other", "steps": ['she said "Maya sails on the Tagus on Sundays"']})

    result = forget.memory_forget(subject=maya, memory_id=sails_id, actor="test")

    run.refresh_from_db()
    assert "Tagus on Sundays" not in json.dumps([run.plan, run.rejected, run.error])
    assert [f["text"] for f in run.plan["facts"]] == ["Maya plays the cello"]  # the item is gone, not marked
    # The dropped item quoted another text (not the forgotten one): it stays.
    assert run.rejected == [
        {"kind": "fact", "reason": run.rejected[0]["reason"], "text": "Maya might sail on the Tagus competitively"}
    ]
    assert run.changes["facts"] == [sails_id, cello_id]  # ids, not text
    assert idempotency_record_get(slot="idem:sails") is None and idempotency_record_get(slot="idem:quoted") is None
    assert idempotency_record_get(slot="idem:cello")["body"]["text"] == "Maya plays the cello"
    receipt = result["receipt"]
    assert receipt["run_records"] == {"count": 1, "ids": [str(run.pk)], "truncated": False}
    assert receipt["idempotency_records"] == {"count": 2, "ids": ["idem:sails", "idem:quoted"], "truncated": False}
    assert receipt["indices"] == {"semantic": {"count": 1, "ids": [sails_id], "truncated": False}}
    assert memory_get(subject=maya, memory_id=cello_id)["text"] == "Maya plays the cello"


def test_a_plan_waiting_for_review_cannot_bring_a_forgotten_fact_back(maya, llm, settings) -> None:
    settings.ATLAS_CONSOLIDATION_MAX_CHANGE_SHARE = 0.0
    settings.ATLAS_CONSOLIDATION_MAX_CHANGE_FREE = 0
    old = writes.fact_write(subject=maya, text="Maya lives in Porto near the river", fact_type="identity")
    moved = _said(maya, "I moved to Lisbon")
    llm.script(
        empty_plan(
            supersessions=[
                {
                    "target_fact_ids": [old["id"]],
                    "contradiction": "natural",
                    "fact": fact("Maya lives in Lisbon", [moved], fact_type="identity"),
                }
            ]
        )
    )
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "needs_review", outcome.error
    forget.memory_forget(subject=maya, memory_id=old["id"], actor="test")
    run = ConsolidationRun.objects.get(pk=outcome.run.pk)
    assert "Porto near the river" not in json.dumps([run.plan, run.rejected, run.error])
    assert run.plan["supersessions"] == []
    consolidation_run_approve(run=run, actor="test")
    run.refresh_from_db()
    assert run.changes.get("supersessions", []) == []


def test_forgetting_a_subject_or_a_tenant_deletes_their_run_records_and_stored_answers(
    maya, tom, other_tenant_subject, llm
) -> None:
    for n, subject in enumerate((maya, tom, other_tenant_subject)):
        said = _said(subject, f"{subject.external_id} likes sailing", n)
        llm.script(empty_plan(facts=[fact(f"{subject.external_id} likes sailing", [said])]))
        assert consolidation_run(subject=subject).status == "done"
        _answer(f"idem:{subject.pk}", subject, {"text": f"{subject.external_id} likes sailing"})
    catalog_answer = {"state": "done", "digest": "d", "status": 201, "body": {"text": "the shop opens at 9"}}
    idempotency_record_store(slot="idem:catalog", record=catalog_answer, tenant_id=str(maya.tenant.es_id), subject="")

    result = forget.subject_memories_forget(subject=maya, actor="test")
    assert not ConsolidationRun.objects.filter(subject=maya).exists()
    assert ConsolidationRun.objects.filter(subject=tom).count() == 1
    assert result["receipt"]["idempotency_records"]["ids"] == [f"idem:{maya.pk}"]
    assert idempotency_record_get(slot=f"idem:{tom.pk}") is not None

    result = forget.tenant_memories_forget(tenant=maya.tenant, actor="test")
    assert not ConsolidationRun.objects.filter(tenant=maya.tenant).exists()
    assert sorted(result["receipt"]["idempotency_records"]["ids"]) == sorted(["idem:catalog", f"idem:{tom.pk}"])
    assert result["receipt"]["run_records"]["count"] == 1
    # Another tenant's are not touched.
    assert ConsolidationRun.objects.filter(subject=other_tenant_subject).count() == 1
    assert idempotency_record_get(slot=f"idem:{other_tenant_subject.pk}") is not None


def test_a_receipt_lists_a_bounded_number_of_ids_and_says_so(maya, monkeypatch) -> None:
    monkeypatch.setattr(forget, "RECEIPT_MAX_IDS", 2)
    written = [writes.fact_write(subject=maya, text=f"Maya fact number {n}")["id"] for n in range(3)]
    receipt = forget.subject_memories_forget(subject=maya, actor="test")["receipt"]
    semantic = receipt["indices"]["semantic"]
    assert semantic["count"] == 3 and semantic["truncated"] is True
    assert len(semantic["ids"]) == 2 and set(semantic["ids"]) < set(written)
    assert receipt["indices"]["episodic"] == {"count": 0, "ids": [], "truncated": False}


@pytest.mark.django_db(transaction=True)
def test_a_consolidation_in_flight_neither_stores_nor_applies_the_plan_of_a_forgotten_subject(maya, llm) -> None:
    """The run asks the LLM about Maya's episodes; Maya is forgotten meanwhile. Its answer quotes them:
    the run must not store it (writing the deleted run record back) nor write its facts."""
    said = _said(maya, "I keep bees on the roof")
    llm.script(empty_plan(facts=[fact("Maya keeps bees on the roof", [said])]))
    llm.gate.clear()  # the LLM holds its answer
    outcome: dict = {}

    def consolidate() -> None:
        try:
            outcome["run"] = consolidation_run(subject=maya)
        except Exception as err:  # noqa: BLE001 — asserted below
            outcome["error"] = err
        finally:
            connection.close()

    thread = threading.Thread(target=consolidate)
    thread.start()
    deadline = time.monotonic() + 60
    while not llm.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm.requests, "the run never asked the LLM"
    forgotten = forget.subject_memories_forget(subject=maya, actor="test")
    assert forgotten["counts"] == {"episodic": 1}
    llm.gate.set()
    thread.join(timeout=120)
    assert "error" not in outcome, outcome
    assert outcome["run"].status == "busy"
    assert not ConsolidationRun.objects.filter(subject=maya).exists()
    assert memory_list(subject=maya, memory_types=["semantic"], page_size=10)["memories"] == []
    assert lease_holder(subject=maya) is None  # forgetting released the lease it took


def test_forgetting_a_playbook_takes_the_steps_proposed_for_it(maya) -> None:
    """A pending steps proposal is the playbook's next version: its name, trigger, description and text
    are the playbook's. Forgetting the playbook forgot them there too — the proposal goes with it (in the
    receipt, announced like the playbook), and no later playbook under the same id can receive those steps.
    The same by a filter."""
    from atlas_site.errors import NotFound
    from memory.elastic import store
    from memory.scope import SubjectScope

    def stored_texts() -> list[str]:
        scope = SubjectScope.of(maya)
        query = {"bool": {"filter": [{"term": {"user_id": scope.user_id}}]}}
        hits = store.memories_scan(scope.reader(), memory_types=("procedural",), query=query, every_generation=True)
        return [json.dumps(hit["_source"]) for hit in hits]

    def proposed_for(playbook: dict, steps: list[str]) -> dict:
        return writes.playbook_outcome_record(
            subject=maya, playbook_id=playbook["id"], success=True, refined_steps=steps, written_by="token:svc"
        )

    def person_playbook(name: str, **kwargs) -> dict:
        return writes.playbook_write(
            subject=maya, name=name, trigger_text=f"{name} trigger", steps=["Soak"], authority="person",
            written_by="person:1", **kwargs,
        )  # fmt: skip

    orchids = person_playbook("Water the orchids")
    proposal = proposed_for(orchids, ["Mist the orchids"])
    other = proposed_for(person_playbook("Feed the cat"), ["Open a tin"])
    result = forget.memory_forget(subject=maya, memory_id=orchids["id"], actor="test")
    assert sorted(result["receipt"]["indices"]["procedural"]["ids"]) == sorted([orchids["id"], proposal["id"]])
    with pytest.raises(NotFound):
        memory_get(subject=maya, memory_id=proposal["id"])
    assert memory_get(subject=maya, memory_id=other["id"])["review_state"] == "pending"  # not this playbook's
    assert not any("orchids" in text.lower() for text in stored_texts())
    # By a filter: the playbooks it takes take their proposals, whoever wrote those.
    chores = person_playbook("Sweep the porch", agent_id="chores")
    swept = proposed_for(chores, ["Sweep twice"])
    scoped = forget.scoped_memories_forget(subject=maya, filters={"agent_id": "chores"}, actor="test")
    assert (sorted(scoped["ids"]), scoped["counts"]) == (sorted([chores["id"], swept["id"]]), {"procedural": 2})
    with pytest.raises(NotFound):
        memory_get(subject=maya, memory_id=swept["id"])
    assert not any("porch" in text.lower() for text in stored_texts())


def test_a_plan_waiting_for_review_changes_no_forgotten_memory_nor_cites_a_forgotten_turn(maya, llm, settings) -> None:
    """A kept plan names memories by id: forgetting one takes the items about it (a confirmation of the
    fact, steps for the playbook) — approved later, they would change whatever memory has the id then (the
    same external id derives it for an unrelated one) — and a forgotten turn leaves each item's evidence;
    an item learnt from forgotten turns only goes."""
    settings.ATLAS_CONSOLIDATION_MAX_CHANGE_SHARE = 0.0
    settings.ATLAS_CONSOLIDATION_MAX_CHANGE_FREE = 0
    tea = writes.fact_write(subject=maya, text="Maya drinks green tea", fact_type="preference")
    coffee = writes.fact_write(subject=maya, text="Maya drinks coffee at work", fact_type="preference")
    home = writes.fact_write(subject=maya, text="Maya lives in Porto", fact_type="identity")
    brew = writes.playbook_write(subject=maya, name="Brew tea", trigger_text="tea time", steps=["Boil water"])
    said, also, only = _said(maya, "green tea again today"), _said(maya, "tea with lunch", 1), _said(maya, "I bake", 2)
    llm.script(
        empty_plan(
            supersessions=[
                {
                    "target_fact_ids": [home["id"]],
                    "contradiction": "natural",
                    "fact": fact("Maya lives in Lisbon", [also]),
                }
            ],
            confirmations=[
                {"fact_id": tea["id"], "source_episodes": [said]},
                {"fact_id": coffee["id"], "source_episodes": [said, also]},
            ],
            facts=[fact("Maya bakes bread", [only]), fact("Maya has tea with lunch", [also, said])],
            outcomes=[{"playbook_id": brew["id"], "success": True, "source_episodes": [also]}],
        )
    )
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "needs_review", outcome.error
    forget.memory_forget(subject=maya, memory_id=tea["id"], actor="test")
    forget.memory_forget(subject=maya, memory_id=said, actor="test")
    forget.memory_forget(subject=maya, memory_id=only, actor="test")
    assert ConsolidationRun.objects.get(pk=outcome.run.pk).plan["outcomes"][0]["playbook_id"] == brew["id"]
    forget.memory_forget(subject=maya, memory_id=brew["id"], actor="test")  # an item naming it by id alone
    plan = ConsolidationRun.objects.get(pk=outcome.run.pk).plan
    assert plan["outcomes"] == []
    assert [(c["fact_id"], c["source_episodes"]) for c in plan["confirmations"]] == [(coffee["id"], [also])]
    assert [(f["text"], f["source_episodes"]) for f in plan["facts"]] == [("Maya has tea with lunch", [also])]
    consolidation_run_approve(run=ConsolidationRun.objects.get(pk=outcome.run.pk), actor="test")
    assert memory_get(subject=maya, memory_id=coffee["id"])["source_episodes"] == [also]
    # The run's new facts waited as proposals since it stopped for review: stored memories, they cite the
    # forgotten turn as every memory does once it is forgotten.
    written = [m for m in memory_list(subject=maya)["memories"] if m["text"] == "Maya has tea with lunch"]
    assert [m["source_episodes"] for m in written] == [[also, "(forgotten)"]]


def test_a_plan_item_is_held_to_the_forgotten_ids_even_where_it_quotes_no_text() -> None:
    """Plan items quote their target's text today (so forgetting its text takes them); an item that names
    its target by id alone still goes, and one whose evidence was all forgotten."""
    plan = {
        "window_key": "w",
        "confirmations": [
            {"fact_id": "gone", "source_episodes": ["t1"]},
            {"fact_id": "kept", "source_episodes": ["t1"]},
        ],
        "supersessions": [{"targets": ["kept", "gone"], "source_episodes": []}],
        "outcomes": [{"playbook_id": "gone", "success": True}],
        "facts": [{"text": "x", "source_episodes": ["t0"]}, {"text": "y", "source_episodes": ["t0", "t1"]}],
    }
    assert forget._plan_scrubbed(plan, [], {"gone", "t0"}) == {
        "window_key": "w",
        "confirmations": [{"fact_id": "kept", "source_episodes": ["t1"]}],
        "supersessions": [],
        "outcomes": [],
        "facts": [{"text": "y", "source_episodes": ["t1"]}],
    }
