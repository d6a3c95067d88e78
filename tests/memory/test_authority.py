"""Authority on the service paths: stamped from the path, inferred for old documents, and the rule that
a lower authority's replacement of a person's fact waits as a proposal (import and consolidation here;
REST, MCP and the dashboard in their own test packages)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from atlas_site.errors import Conflict, ValidationFailed
from memory.authority import memory_authority
from memory.consolidation.apply import plan_apply
from memory.elastic import store
from memory.portable.lines import memories_import
from memory.recall import memory_recall
from memory.scope import SubjectScope
from memory.selectors import memory_chain_get, memory_counts, memory_get, memory_list
from memory.services.writes import fact_edit, fact_write, playbook_write

PERSON = {"authority": "person", "written_by": "person:maya@example.org"}


def _ids(page: dict) -> list[str]:
    return [m["id"] for m in page["memories"]]


def test_old_documents_without_authority_read_as_agent_or_consolidation(maya) -> None:
    assert memory_authority({}) == "agent"
    assert memory_authority({"applied_events": ["w:confirm"]}) == "consolidation"
    assert memory_authority({"authority": "person", "applied_events": ["w:confirm"]}) == "person"
    assert memory_authority({"authority": "bogus"}) == "agent"
    scope = SubjectScope.of(maya)
    base = {"tenant_id": scope.tenant_id, "user_id": scope.user_id, "memory_type": "semantic", "use_count": 0}
    for memory_id, extra in (("old-agent", {}), ("old-run", {"applied_events": ["w1:confirm"]})):
        source = {**base, "memory_id": memory_id, "text": f"an old fact {memory_id}", **extra}
        store.memory_index(scope.writer(), memory_type="semantic", memory_id=memory_id, source=source, refresh=True)
    stamped = fact_write(subject=maya, text="Maya likes tea", **PERSON)
    assert memory_get(subject=maya, memory_id="old-agent")["authority"] == "agent"
    assert memory_get(subject=maya, memory_id="old-run")["authority"] == "consolidation"
    assert _ids(memory_list(subject=maya, authority="agent")) == ["old-agent"]
    assert _ids(memory_list(subject=maya, authority="consolidation")) == ["old-run"]
    assert _ids(memory_list(subject=maya, authority="person")) == [stamped["id"]]
    assert _ids(memory_list(subject=maya, authority="import")) == []
    with pytest.raises(ValidationFailed) as refused:
        memory_list(subject=maya, authority="admin")
    assert refused.value.message == "authority must be one of person, agent, consolidation, import, operator"


def test_services_stamp_authority_and_writer_and_default_to_agent(maya) -> None:
    fact = fact_write(subject=maya, text="Maya is vegetarian", written_by="token:svc")
    playbook = playbook_write(
        subject=maya, name="book a table", trigger_text="dinner out", steps=["ask for the veggie menu"], **PERSON
    )
    assert (fact["authority"], fact["written_by"]) == ("agent", "token:svc")
    shaped = memory_get(subject=maya, memory_id=playbook["id"])
    assert (shaped["authority"], shaped["written_by"], shaped["status"]) == ("person", PERSON["written_by"], "current")
    assert memory_get(subject=maya, memory_id=fact["id"])["status"] == "current"


def test_an_agent_cannot_replace_a_persons_fact_it_becomes_a_pending_proposal(maya) -> None:
    mine = fact_write(subject=maya, text="Maya lives in Lisbon", fact_type="identity", **PERSON)
    by_write = fact_write(subject=maya, text="Maya lives in Porto", supersedes=[mine["id"]], written_by="token:svc")
    by_edit = fact_edit(subject=maya, memory_id=mine["id"], text="Maya lives in Faro", written_by="token:svc")
    for proposal in (by_write, by_edit):
        shaped = memory_get(subject=maya, memory_id=proposal["id"])
        assert (shaped["status"], shaped["review_state"], shaped["proposal_for"]) == (
            "pending",
            "pending",
            [mine["id"]],
        )
        assert shaped["supersedes"] == []
    # The person's fact is untouched and alone in its chain; recall and counts never see the proposals.
    assert memory_get(subject=maya, memory_id=mine["id"])["status"] == "current"
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=mine["id"])] == [mine["id"]]
    hits = memory_recall(subject=maya, query="where does Maya live? Porto Faro Lisbon", k=10).hits
    assert [h["id"] for h in hits if h["type"] == "semantic"] == [mine["id"]]
    assert _ids(memory_list(subject=maya, memory_types=["semantic"], include_superseded=True)) == [mine["id"]]
    counts = memory_counts(subject=maya)
    assert (counts["semantic"], counts["replaced"], counts["pending"]) == (1, 0, 2)
    # A proposal is no fact yet: nothing can replace it before it is reviewed.
    with pytest.raises(Conflict) as waiting:
        fact_write(subject=maya, text="Maya lives in Braga", supersedes=[by_write["id"]], **PERSON)
    assert waiting.value.message.endswith("is a proposal waiting for review: accept or reject it first")


def test_a_persons_and_an_operators_corrections_replace_anything(maya) -> None:
    agents = fact_write(subject=maya, text="Maya lives in Lisbon", written_by="token:svc")
    corrected = fact_edit(subject=maya, memory_id=agents["id"], text="Maya lives in Porto", **PERSON)
    assert corrected["authority"] == "person" and "review_state" not in corrected
    operator = fact_edit(
        subject=maya,
        memory_id=corrected["id"],
        text="Maya lives in Faro",
        authority="operator",
        written_by="operator:o",
    )
    assert memory_get(subject=maya, memory_id=corrected["id"])["superseded_by"] == [operator["id"]]
    assert [m["authority"] for m in memory_chain_get(subject=maya, memory_id=operator["id"])] == [
        "agent",
        "person",
        "operator",
    ]


def test_an_import_replacing_a_persons_fact_waits_and_its_facts_say_import(maya) -> None:
    mine = fact_write(subject=maya, text="Maya's dentist is Dr Silva", external_id="dentist", **PERSON)
    lines = [
        json.dumps({"memory_type": "semantic", "user_id": "maya", "id": "tea", "text": "Maya drinks green tea"}),
        json.dumps(
            {
                "memory_type": "semantic",
                "user_id": "maya",
                "id": "dentist-2",
                "text": "Maya's dentist is Dr Costa",
                "supersedes": ["dentist"],
            }
        ),
    ]
    report = memories_import(tenant=maya.tenant, lines=lines, create_subjects=False, actor="ops")
    assert report.errors == [] and report.supersessions == 0
    imported = {m["text"]: m for m in memory_list(subject=maya, authority="import")["memories"]}
    assert list(imported) == ["Maya drinks green tea"]
    assert imported["Maya drinks green tea"]["written_by"] == "import:ops"
    pending = [m for m in _all_facts(maya) if m.get("review_state") == "pending"]
    assert [(m["text"], m["proposal_for"], m["authority"]) for m in pending] == [
        ("Maya's dentist is Dr Costa", [mine["id"]], "import")
    ]
    assert memory_get(subject=maya, memory_id=mine["id"])["status"] == "current"


def test_our_own_format_may_carry_authority_per_record_and_only_known_values(maya) -> None:
    line = {"memory_type": "semantic", "user_id": "maya", "id": "x", "text": "Maya cycles", "authority": "person"}
    refused = memories_import(tenant=maya.tenant, lines=[json.dumps(line)], create_subjects=False, actor="ops")
    assert refused.errors == [(1, "unknown field(s) for semantic: authority")]
    kept = memories_import(
        tenant=maya.tenant, lines=[json.dumps(line)], create_subjects=False, actor="ops", authority_per_record=True
    )
    assert kept.errors == []
    assert [m["authority"] for m in memory_list(subject=maya, authority="person")["memories"]] == ["person"]
    bad = memories_import(
        tenant=maya.tenant,
        lines=[json.dumps({**line, "authority": "root"})],
        create_subjects=False,
        actor="ops",
        authority_per_record=True,
    )
    assert bad.errors == [(1, "authority must be one of person, agent, consolidation, import, operator")]


def test_consolidation_proposes_instead_of_replacing_a_persons_fact(maya) -> None:
    mine = fact_write(subject=maya, text="Maya lives in Porto", fact_type="identity", **PERSON)
    agents = fact_write(subject=maya, text="Maya works at a bakery", fact_type="identity", written_by="token:svc")
    item = {"fact_type": "identity", "confidence": 0.9, "source_episodes": []}
    plan = {
        "window_key": "w1",
        "planned_at": datetime.now(UTC).isoformat(),
        "facts": [],
        "supersessions": [
            {
                **item,
                "key": "w1:s:lisbon",
                "text": "Maya lives in Lisbon",
                "targets": [mine["id"]],
                "contradiction": "natural",
            },
            {
                **item,
                "key": "w1:s:cafe",
                "text": "Maya works at a cafe",
                "targets": [agents["id"]],
                "contradiction": "natural",
            },
        ],
        "confirmations": [],
        "playbooks": [],
        "refinements": [],
        "outcomes": [],
    }
    changes = plan_apply(subject=maya, plan=plan, run_id=7)
    assert changes["superseded"] == [agents["id"]] and len(changes["pending"]) == 1
    proposal = memory_get(subject=maya, memory_id=changes["pending"][0])
    assert (proposal["text"], proposal["authority"], proposal["written_by"]) == (
        "Maya lives in Lisbon",
        "consolidation",
        "run:7",
    )
    assert proposal["proposal_for"] == [mine["id"]]
    assert memory_get(subject=maya, memory_id=mine["id"])["status"] == "current"


def _all_facts(subject) -> list[dict]:
    scope = SubjectScope.of(subject)
    body = {"query": {"bool": {"filter": scope.read_filters()}}, "size": 100}
    hits = store.memories_search(scope.reader(), memory_types=("semantic",), body=body)["hits"]["hits"]
    from memory.selectors import memory_shape

    return [memory_shape(h) for h in hits]
