"""The memory app's write paths announce their changes to webhooks (memory/services/announce.py), once
Elasticsearch has acknowledged them — delivered here to a real receiver — and forgetting leaves no text
in any event or delivery."""

from __future__ import annotations

import json

import pytest

from memory.services.forget import memory_forget, scoped_memories_forget, subject_memories_forget
from memory.services.writes import fact_edit, fact_write, playbook_outcome_record, playbook_write
from webhooks.delivery import deliveries_due, deliveries_run
from webhooks.events import EVENT_TYPES
from webhooks.models import WebhookEvent
from webhooks.services import endpoint_create

from ..webhooks.receiver import Receiver, receiver_start
from .reviewing import accept, reject


@pytest.fixture
def receiver(settings):
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = True
    started = receiver_start(Receiver())
    yield started
    started.server.shutdown()
    started.server.server_close()


@pytest.fixture
def hooked(tenant, receiver):
    endpoint, _ = endpoint_create(tenant=tenant, url=receiver.url, events=list(EVENT_TYPES), actor="test")
    return endpoint


def _deliver_all() -> None:
    for delivery_id in deliveries_due():
        deliveries_run(delivery_id=delivery_id)


def _received(receiver: Receiver) -> list[dict]:
    return [json.loads(r.body) for r in receiver.requests]


def test_a_fact_and_its_edit_announce_created_and_superseded_in_order(maya, hooked, receiver) -> None:
    first = fact_write(subject=maya, text="Maya lives in Porto", fact_type="identity")
    second = fact_edit(subject=maya, memory_id=first["id"], text="Maya lives in Lisbon")
    _deliver_all()
    got = _received(receiver)
    assert [(e["type"], e["subject"]) for e in got] == [
        ("memory.created", "maya"),
        ("memory.created", "maya"),
        ("memory.superseded", "maya"),
    ]
    assert got[0]["data"]["memory"]["id"] == first["id"]
    assert got[0]["data"]["memory"]["text"] == "Maya lives in Porto"
    assert "user_id" not in got[0]["data"]["memory"] and "embedding" not in got[0]["data"]["memory"]
    assert got[1]["data"]["memory"]["text"] == "Maya lives in Lisbon"
    assert got[2]["data"] == {"memory_id": first["id"], "superseded_by": second["id"], "contradiction": "natural"}


def test_the_same_write_again_announces_the_same_event_not_a_second(maya, hooked) -> None:
    fact_write(subject=maya, text="Maya likes tea", external_id="tea")
    again = fact_write(subject=maya, text="Maya likes tea", external_id="tea")
    (event,) = WebhookEvent.objects.filter(type="memory.created")
    assert event.memory_id == again["id"] and event.deliveries.count() == 1


def test_forgetting_leaves_no_text_in_events_or_deliveries(maya, hooked, receiver) -> None:
    fact = fact_write(subject=maya, text="Maya is allergic to peanuts")
    result = memory_forget(subject=maya, memory_id=fact["id"], actor="test")
    _deliver_all()  # the memory.created delivery was still waiting when the memory was forgotten
    got = _received(receiver)
    assert [e["type"] for e in got] == ["memory.created", "memory.forgotten"]
    assert got[0]["data"] == {"forgotten": True, "memory": {"id": fact["id"]}}
    assert got[1]["data"] == {"memory_id": fact["id"], "type": "semantic", "receipt": result["receipt"]}
    assert all(b"peanuts" not in r.body for r in receiver.requests)
    assert not any("peanuts" in json.dumps(e.data) for e in WebhookEvent.objects.all())


def test_forgetting_by_filter_announces_each_memory_and_scrubs_its_events(maya, hooked, receiver) -> None:
    """Found by the invariant machine: forgetting what an agent wrote left each memory's text in its
    memory.created event and announced nothing."""
    planner = fact_write(subject=maya, text="Maya hides a spare key under the mat", agent_id="planner")
    coder = fact_write(subject=maya, text="Maya codes in Rust", agent_id="coder")
    result = scoped_memories_forget(subject=maya, filters={"agent_id": "planner"}, actor="test")
    assert result["ids"] == [planner["id"]]
    _deliver_all()
    got = [(e["type"], e["data"]) for e in _received(receiver)]
    assert got == [
        ("memory.created", {"forgotten": True, "memory": {"id": planner["id"]}}),
        ("memory.created", got[1][1]),
        ("memory.forgotten", {"memory_id": planner["id"], "type": "semantic", "receipt": result["receipt"]}),
    ]
    assert got[1][1]["memory"]["id"] == coder["id"]  # the other agent's memory keeps its event
    assert all(b"spare key" not in r.body for r in receiver.requests)
    assert not any("spare key" in json.dumps(e.data) for e in WebhookEvent.objects.all())


def _steps_proposed(maya, step: str) -> tuple[dict, dict]:
    """The person's playbook "Water the orchids", and an agent's steps waiting for it (a proposal)."""
    mine = playbook_write(
        subject=maya, name="Water the orchids", trigger_text="a dry week", steps=["Soak"], authority="person",
        written_by="person:1",
    )  # fmt: skip
    proposed = playbook_outcome_record(
        subject=maya, playbook_id=mine["id"], success=True, refined_steps=[step], written_by="token:svc"
    )
    return mine, proposed


def test_forgetting_a_playbook_scrubs_the_steps_proposals_merged_into_it(maya, hooked) -> None:
    """Found by the invariant machine: an accepted steps proposal is merged into its playbook and removed,
    and its proposal.created event — the playbook's name and the steps — outlived forgetting the playbook."""
    mine, proposed = _steps_proposed(maya, "Mist the orchids")
    assert proposed["review_state"] == "pending"
    accept(maya, proposed["id"])
    (created,) = WebhookEvent.objects.filter(type="proposal.created")
    assert created.data == {"forgotten": True, "memory": {"id": proposed["id"]}}  # merged: the proposal is gone
    (updated,) = WebhookEvent.objects.filter(type="memory.updated")
    assert [s["instruction"] for s in updated.data["memory"]["steps"]] == ["Mist the orchids"]  # the steps live on
    memory_forget(subject=maya, memory_id=mine["id"], actor="test")
    assert not any("orchids" in json.dumps(e.data) for e in WebhookEvent.objects.all())


def test_forgetting_a_playbook_announces_and_scrubs_the_steps_still_waiting_for_it(maya, hooked) -> None:
    """A pending steps proposal holds the playbook's name and trigger: forgotten with it, announced as
    forgotten, and its proposal.created event keeps nothing of either."""
    mine, proposed = _steps_proposed(maya, "Mist the leaves")
    result = memory_forget(subject=maya, memory_id=mine["id"], actor="test")
    forgotten = WebhookEvent.objects.filter(type="memory.forgotten")
    assert sorted(
        (e.data["memory_id"], e.data["type"], e.data["receipt"] == result["receipt"]) for e in forgotten
    ) == sorted([(mine["id"], "procedural", True), (proposed["id"], "procedural", True)])
    assert not any(word in json.dumps(e.data) for e in WebhookEvent.objects.all() for word in ("orchids", "leaves"))


def test_a_turn_s_event_never_carries_the_turn_before_it(maya, hooked, settings) -> None:
    """Found by the invariant machine: a turn's memory.created event carried the previous turn's text (its
    embedding context), so forgetting that previous turn left its text in the next turn's event."""
    from memory.services.writes import episode_write

    settings.ATLAS_CONTEXTUAL_EPISODES = True
    first = episode_write(subject=maya, text="my PIN is under the lamp", session_id="s1")
    later = episode_write(subject=maya, text="and the spare key?", session_id="s1")
    (event,) = WebhookEvent.objects.filter(type="memory.created", memory_id=later["id"])
    assert "embedding_context" not in event.data["memory"] and "lamp" not in json.dumps(event.data)
    memory_forget(subject=maya, memory_id=first["id"], actor="test")
    assert not any("lamp" in json.dumps(e.data) for e in WebhookEvent.objects.all())


def test_forgetting_a_subject_announces_counts_and_scrubs_every_event_of_theirs(maya, tom, hooked, receiver) -> None:
    fact_write(subject=maya, text="Maya sings in a choir")
    fact_write(subject=tom, text="Tom plays the cello")
    result = subject_memories_forget(subject=maya, actor="test")
    _deliver_all()
    by_subject = {(e["subject"], e["type"]): e["data"] for e in _received(receiver)}
    assert by_subject[("maya", "subject.forgotten")] == {"counts": result["counts"], "receipt": result["receipt"]}
    assert by_subject[("maya", "memory.created")]["forgotten"] is True
    assert by_subject[("tom", "memory.created")]["memory"]["text"] == "Tom plays the cello"  # not Maya's
    assert all(b"choir" not in r.body for r in receiver.requests)


def test_proposals_announce_their_creation_and_decision(maya, hooked, receiver) -> None:
    mine = fact_write(subject=maya, text="Maya prefers window seats", authority="person", written_by="person:1")
    proposed = fact_write(
        subject=maya, text="Maya prefers aisle seats", supersedes=[mine["id"]], written_by="token:svc"
    )
    assert proposed["review_state"] == "pending"
    accept(maya, proposed["id"])
    playbook = playbook_write(
        subject=maya, name="Book", trigger_text="a trip", steps=["Search"], review=True, written_by="token:svc"
    )
    reject(maya, playbook["id"])
    _deliver_all()
    got = [(e["type"], e["data"]) for e in _received(receiver)]
    kinds = [kind for kind, _ in got]
    assert kinds == [
        "memory.created",
        "proposal.created",
        "memory.superseded",
        "proposal.decided",
        "proposal.created",
        "proposal.decided",
    ]
    assert got[1][1]["proposal"]["text"] == "Maya prefers aisle seats"
    assert got[2][1] == {"memory_id": mine["id"], "superseded_by": proposed["id"], "contradiction": "natural"}
    assert got[3][1] == {
        "proposal_id": proposed["id"],
        "type": "semantic",
        "decision": "accepted",
        "replaces": [mine["id"]],
    }
    assert got[4][1] == {"forgotten": True, "memory": {"id": playbook["id"]}}  # rejected: its text is gone
    assert got[5][1] == {"proposal_id": playbook["id"], "type": "procedural", "decision": "rejected", "replaces": []}


@pytest.mark.parametrize("kind", ["episode", "fact", "fact-by-external-id"])
def test_a_retried_write_records_the_event_its_first_attempt_missed_under_the_same_id(maya, hooked, kind) -> None:
    """The first attempt stored the memory but its event was not recorded (the database refused it: the
    caller got a 503). The retry — the same Idempotency-Key, hence the same derived id, or the same external
    id — lands on the stored memory and records the very event, once."""
    from memory.services.writes import episode_write

    def write():
        if kind == "episode":
            return episode_write(subject=maya, text="I moved to Lisbon", derived_key="request:k1")
        if kind == "fact":
            return fact_write(subject=maya, text="Maya lives in Lisbon", derived_key="request:k2")
        return fact_write(subject=maya, text="Maya lives in Lisbon", external_id="home")

    first = write()
    (event,) = WebhookEvent.objects.filter(type="memory.created")
    WebhookEvent.objects.all().delete()  # as if recording it had failed
    again = write()
    assert again["id"] == first["id"]
    (recorded,) = WebhookEvent.objects.filter(type="memory.created")
    assert recorded.id == event.id and recorded.memory_id == first["id"]
    write()
    assert WebhookEvent.objects.filter(type="memory.created").count() == 1  # never a second


def test_forgetting_a_tenant_scrubs_every_event_of_it(tenant, maya, hooked) -> None:
    from memory.services.forget import tenant_memories_forget

    fact_write(subject=maya, text="Maya keeps bees")
    tenant_memories_forget(tenant=tenant, actor="test")
    (event,) = WebhookEvent.objects.filter(tenant=tenant)
    assert event.data == {"forgotten": True, "memory": {"id": event.memory_id}}
