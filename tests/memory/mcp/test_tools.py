"""Every MCP tool through the official client against the live server and the session's Elasticsearch:
what each returns, and each kind of error as an MCP tool error (isError) naming code, message and field."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from atlas_site.elastic.client import clients_reset
from memory.services import writes
from tests.memory.agent_turns import QUESTION, REQUEST, agent_turn_memories, distilled_first, request_served

from .conftest import mcp_session, payload, run, tenant_with_subjects, token_for, tool_error

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def acme():
    tenant, subjects = tenant_with_subjects("tools", "alice", "bob")
    return tenant, dict(zip(("alice", "bob"), subjects, strict=True))


def texts(answer: dict) -> list[str]:
    return [m["text"] for m in answer["memories"]]


def test_every_tool_with_a_subject_token(atlas_server, acme) -> None:
    tenant, people = acme
    token = token_for(tenant, people["alice"])

    async def go():
        async with mcp_session(atlas_server.url, token) as s:
            episode = payload(
                await s.call_tool(
                    "remember",
                    {
                        "type": "episodic",
                        "text": "I just adopted a greyhound called Comet",
                        "session_id": "s1",
                        "timestamp": "2026-03-11T09:00:00Z",
                    },
                )
            )
            assert (episode["type"], episode["session_id"], episode["role"]) == ("episodic", "s1", "user")
            assert episode["timestamp"].startswith("2026-03-11T09:00:00")
            fact = payload(
                await s.call_tool(
                    "remember",
                    {
                        "type": "semantic",
                        "kind": "fact",  # the old name too, meaning the same: accepted
                        "text": "Alice's dog is a greyhound called Comet",
                        "fact_type": "identity",
                        "confidence": 0.95,
                        "source_episodes": [episode["id"]],
                    },
                )
            )
            assert (fact["type"], fact["fact_type"], fact["confidence"]) == ("semantic", "identity", 0.95)
            assert fact["source_episodes"] == [episode["id"]] and "user_id" not in fact
            playbook = payload(
                await s.call_tool(
                    "remember",
                    {
                        "kind": "playbook",
                        "name": "Book the dog sitter",
                        "trigger_text": "Alice travels and needs someone to look after Comet",
                        "steps": [{"instruction": "Ask for the dates"}, {"instruction": "Email Sam", "tool": "email"}],
                    },
                )
            )
            assert (playbook["type"], playbook["version"], playbook["outcome_score"]) == ("procedural", 1, 0.5)
            assert [step["instruction"] for step in playbook["steps"]] == ["Ask for the dates", "Email Sam"]

            recalled = payload(await s.call_tool("recall_memory", {"query": "What is Alice's dog called?", "k": 3}))
            # The turn the fact cites is folded under it: two memories, the fact first with its evidence.
            # "hits", as REST names them; "memories", the old name, carries the same until it goes.
            assert [m["id"] for m in recalled["hits"]] == [fact["id"], playbook["id"]]
            assert recalled["memories"] == recalled["hits"]
            assert recalled["hits"][0]["evidence"] == [
                {"id": episode["id"], "timestamp": episode["timestamp"], "text": episode["text"]}
            ]
            assert [m["rank"] for m in recalled["hits"]] == [1, 2]
            apart = {"query": "What is Alice's dog called?", "k": 3, "fold_evidence": False}
            recalled = payload(await s.call_tool("recall_memory", apart))
            assert len(recalled["hits"]) == 3 and episode["id"] in [m["id"] for m in recalled["hits"]]
            assert [m["rank"] for m in recalled["hits"]] == [1, 2, 3]
            why = {"query": "What is Alice's dog called?", "k": 1, "explain": True, "expect": [playbook["id"]]}
            explained = payload(await s.call_tool("recall_memory", why))
            assert explained["hits"][0]["explain"]["folded"] == [episode["id"]]
            assert explained["explain"]["expected"][0]["removed_by"] == "rank"
            only_facts = payload(await s.call_tool("recall_memory", {"query": "dog", "types": ["semantic"]}))
            assert texts(only_facts) == ["Alice's dog is a greyhound called Comet"]

            listed = payload(await s.call_tool("list_memories", {"page_size": 2}))
            assert texts(listed) == ["Book the dog sitter", "Alice's dog is a greyhound called Comet"]
            rest = payload(await s.call_tool("list_memories", {"page_size": 2, "cursor": listed["next_cursor"]}))
            assert texts(rest) == ["I just adopted a greyhound called Comet"] and rest["next_cursor"] is None
            in_session = payload(await s.call_tool("list_memories", {"session_id": "s1"}))
            assert texts(in_session) == ["I just adopted a greyhound called Comet"]

            new = payload(
                await s.call_tool(
                    "update_fact", {"memory_id": fact["id"], "text": "Alice's dog is a whippet called Comet"}
                )
            )
            assert (new["fact_type"], new["supersedes"], new["contradiction"]) == ("identity", [fact["id"]], "natural")
            chain = payload(await s.call_tool("memory_chain", {"memory_id": new["id"]}))["chain"]
            assert [m["id"] for m in chain] == [fact["id"], new["id"]] and chain[0]["superseded_by"] == [new["id"]]
            facts_now = payload(await s.call_tool("list_memories", {"types": ["semantic"]}))
            assert texts(facts_now) == ["Alice's dog is a whippet called Comet"]
            history = payload(await s.call_tool("list_memories", {"types": ["semantic"], "include_superseded": True}))
            assert len(history["memories"]) == 2

            won = payload(await s.call_tool("record_outcome", {"playbook_id": playbook["id"], "success": True}))
            assert (won["success_count"], won["failure_count"], won["version"]) == (1, 0, 1)
            refined = payload(
                await s.call_tool(
                    "record_outcome",
                    {
                        "playbook_id": playbook["id"],
                        "success": False,
                        "refined_steps": [{"instruction": "Ask for the dates"}, {"instruction": "Call Sam"}],
                    },
                )
            )
            assert (refined["success_count"], refined["failure_count"], refined["version"]) == (1, 1, 2)
            assert [step["instruction"] for step in refined["steps"]] == ["Ask for the dates", "Call Sam"]

            forgotten = payload(await s.call_tool("forget_memory", {"memory_id": episode["id"]}))
            receipt = forgotten.pop("receipt")
            # The current version of the fact cites only this episode: the answer says it loses its evidence.
            assert forgotten == {"id": episode["id"], "type": "episodic", "forgotten": True, "orphaned": [new["id"]]}
            assert receipt["indices"] == {"episodic": {"count": 1, "ids": [episode["id"]], "truncated": False}}
            again = payload(await s.call_tool("forget_memory", {"memory_id": episode["id"]}))
            assert again == {
                "id": episode["id"],
                "forgotten": False,
                "detail": "no memory with this id: already forgotten, or never one of this user's",
            }
            left = payload(await s.call_tool("list_memories", {"types": ["episodic"]}))
            assert left["memories"] == []

    run(go)


def test_a_tenant_token_names_the_subject_and_a_subject_token_only_itself(atlas_server, acme) -> None:
    tenant, people = acme
    service, alices = token_for(tenant), token_for(tenant, people["alice"])

    async def go():
        async with mcp_session(atlas_server.url, service) as s:
            payload(
                await s.call_tool("remember", {"kind": "fact", "text": "Bob is allergic to nuts", "subject": "bob"})
            )
            missing = tool_error(await s.call_tool("recall_memory", {"query": "nuts"}))
            assert (missing["code"], missing["message"], missing["field"]) == (
                "invalid",
                "a subject id is required",
                "subject",
            )
            nobody = tool_error(await s.call_tool("recall_memory", {"query": "nuts", "subject": "nobody"}))
            assert (nobody["code"], nobody["message"]) == ("not_found", "no subject 'nobody'")
            assert texts(payload(await s.call_tool("recall_memory", {"query": "nuts", "subject": "bob"}))) == [
                "Bob is allergic to nuts"
            ]
            assert payload(await s.call_tool("list_memories", {"subject": "alice"}))["memories"] == []
        async with mcp_session(atlas_server.url, alices) as s:
            assert payload(await s.call_tool("list_memories", {"subject": "alice"}))["memories"] == []
            other = tool_error(await s.call_tool("list_memories", {"subject": "bob"}))
            assert (other["code"], other["message"], other["field"]) == ("not_found", "no subject 'bob'", "subject")

    run(go)


BAD_ARGUMENTS = [
    ("recall_memory", {}, "query", "'query' is a required property"),
    ("recall_memory", {"query": "x", "k": 0}, "k", "0 is less than the minimum of 1"),
    ("recall_memory", {"query": "x", "k": 51}, "k", "51 is greater than the maximum of 50"),
    ("recall_memory", {"query": "x", "k": "5"}, "k", "'5' is not of type 'integer'"),
    (
        "recall_memory",
        {"query": "x", "types": ["archive"]},
        "types.0",
        "types.0: unknown memory type(s) 'archive': use episodic, semantic, procedural, catalog",
    ),
    (
        "list_memories",
        {"types": ["semantic", "fact"]},
        "types.1",
        "invalid arguments for list_memories: types.1: unknown memory type(s) 'fact': use episodic, semantic, "
        "procedural, catalog (did you mean semantic?)",
    ),
    ("recall_memory", {"query": "x", "limit": 3}, "limit", "Additional properties are not allowed ('limit'"),
    ("recall_memory", {"query": "x", "as_of": "last tuesday"}, "as_of", "as_of must be an ISO 8601 date-time"),
    ("recall_memory", {"query": "x", "fact_type": "gossip"}, "fact_type", "'gossip' is not one of"),
    ("recall_memory", {"query": "x", "since": "last week"}, "since", "since must be an ISO 8601 date-time"),
    (
        "recall_memory",
        {"query": "x", "fact_type": "world", "types": ["episodic"]},
        "fact_type",
        "fact_type recalls facts only",
    ),
    (
        "remember",
        {"text": "x"},
        "type",
        "remember needs type: episodic (a user turn), semantic (a fact) or procedural (a playbook)",
    ),
    ("remember", {"type": "fact", "text": "x"}, "type", "'fact' is not one of ['episodic', 'semantic', 'procedural']"),
    ("remember", {"kind": "memo", "text": "x"}, "kind", "'memo' is not one of ['episode', 'fact', 'playbook']"),
    (
        "remember",
        {"kind": "fact", "type": "procedural", "text": "x"},
        "kind",
        "kind is the old name of type, and kind=fact means type=semantic, not procedural: give type only",
    ),
    (
        "remember",
        {"type": "episodic", "text": "x", "at": "2026-03-11T09:00:00Z", "timestamp": "2026-03-11T09:00:00Z"},
        "at",
        "at is the old name of timestamp: give timestamp only",
    ),
    (
        "remember",
        {"type": "semantic", "text": "x", "timestamp": "2026-03-11T09:00:00Z"},
        "timestamp",
        "timestamp does not apply to a fact",
    ),
    ("remember", {"kind": "episode"}, "text", "an episode needs text"),
    ("remember", {"kind": "fact", "text": "x", "name": "n"}, "name", "name does not apply to a fact"),
    ("remember", {"kind": "fact", "text": "x", "confidence": 2}, "confidence", "2 is greater than the maximum"),
    ("remember", {"kind": "fact", "text": "x", "fact_type": "opinion"}, "fact_type", "'opinion' is not one of"),
    ("remember", {"kind": "fact", "text": "   "}, "text", "text must not be empty"),
    ("remember", {"kind": "playbook", "name": "n", "trigger_text": "t", "steps": []}, "steps", "should be non-empty"),
    ("remember", {"kind": "playbook", "name": "n", "trigger_text": "t"}, "steps", "a playbook needs steps"),
    (
        "remember",
        {"kind": "playbook", "name": "n", "trigger_text": "t", "steps": [{"tool": "email"}]},
        "steps.0.instruction",
        "steps.0: 'instruction' is a required property",
    ),
    (
        "record_outcome",
        {"playbook_id": "x", "success": True, "refined_steps": [{"instruction": "a", "when": "now"}]},
        "refined_steps.0.when",
        "Additional properties are not allowed ('when' was unexpected)",
    ),
    ("update_fact", {"memory_id": "x"}, "text", "'text' is a required property"),
    ("update_fact", {"memory_id": "x", "text": "y", "contradiction": "mild"}, "contradiction", "is not one of"),
    ("list_memories", {"page_size": 0}, "page_size", "0 is less than the minimum of 1"),
    ("list_memories", {"cursor": "not-a-cursor"}, "cursor", "cursor is not one this service handed out"),
    ("record_outcome", {"playbook_id": "x", "success": "yes"}, "success", "'yes' is not of type 'boolean'"),
    ("forget_memory", {"memory_id": ""}, "memory_id", "should be non-empty"),
    ("memory_chain", {"memory_id": 42}, "memory_id", "42 is not of type 'string'"),
    ("remember", {"kind": "fact", "text": 1}, "text", "1 is not of type 'string'"),
    ("update_fact", {"memory_id": "x", "text": 1e300}, "text", "is not of type 'string'"),
    ("remember", {"kind": "playbook", "name": 7, "trigger_text": "t", "steps": ["a"]}, "name", "is not of type"),
]


def test_recall_memory_narrows_by_fact_type_and_when_a_memory_was_stored(atlas_server, acme) -> None:
    tenant, people = acme
    alice = people["alice"]
    writes.episode_write(subject=alice, text="I booked a seat on the night train", at="2026-03-11T09:00:00Z")
    for text, fact_type, at in (
        ("Prefers window seats on the night train", "preference", "2026-03-10T09:00:00Z"),
        ("Prefers aisle seats on the night train", "preference", "2026-05-10T09:00:00Z"),
        ("Never takes the night train after midnight", "constraint", "2026-03-12T09:00:00Z"),
    ):
        writes.fact_write(subject=alice, text=text, fact_type=fact_type, at=at)
    token = token_for(tenant, alice)
    march = {"since": "2026-03-01T00:00:00Z", "until": "2026-04-01T00:00:00Z"}

    async def go():
        async with mcp_session(atlas_server.url, token) as s:

            async def recalled(**filters) -> set[str]:
                return set(texts(payload(await s.call_tool("recall_memory", {"query": "night train seat", **filters}))))

            assert await recalled(fact_type="preference") == {
                "Prefers window seats on the night train",
                "Prefers aisle seats on the night train",
            }
            assert await recalled(**march) == {
                "I booked a seat on the night train",
                "Prefers window seats on the night train",
                "Never takes the night train after midnight",
            }
            assert await recalled(fact_type="preference", **march) == {"Prefers window seats on the night train"}

    run(go)


def test_an_agents_turn_gets_the_distilled_memory_first(atlas_server, acme) -> None:
    """Issue 26 through MCP: recall_memory ranks for the turn it is given, and explains the turn's prior."""
    tenant, people = acme
    memories = agent_turn_memories(people["bob"])
    token = token_for(tenant, people["bob"])

    async def go():
        async with mcp_session(atlas_server.url, token) as s:
            question = payload(await s.call_tool("recall_memory", {"query": QUESTION, "k": 5}))
            distilled_first(question["memories"], memories)
            asked = {"query": REQUEST, "k": 5, "explain": True, "expect": [memories["seat"]["id"]]}
            request = payload(await s.call_tool("recall_memory", asked))
            request_served(request["memories"], memories)
            assert request["explain"]["turn_kind"] == "request"
            assert request["memories"][0]["explain"]["turn_prior"] > 1
            [seat] = request["explain"]["expected"]
            assert (seat["id"], seat["removed_by"]) == (memories["seat"]["id"], "fold")

    run(go)


def test_bad_arguments_are_tool_errors_naming_the_field(atlas_server, acme) -> None:
    tenant, people = acme
    token = token_for(tenant, people["alice"])

    async def go():
        async with mcp_session(atlas_server.url, token) as s:
            for tool, arguments, field, message in BAD_ARGUMENTS:
                error = tool_error(await s.call_tool(tool, arguments))
                assert (error["code"], error["field"]) == ("invalid", field), (tool, arguments, error)
                assert message in error["message"], (tool, arguments, error)
            assert payload(await s.call_tool("list_memories", {}))["memories"] == []  # nothing half-written

    run(go)


def test_updating_a_replaced_fact_is_a_conflict_giving_the_newest_version(atlas_server, acme) -> None:
    """The tool error carries the newest version as REST's 409 does (``newest``: id and external id)."""
    tenant, people = acme
    alice = people["alice"]
    old = writes.fact_write(subject=alice, text="Alice lives in Berlin", external_id="home-1")
    new = writes.fact_write(subject=alice, text="Alice lives in Lisbon", supersedes=["home-1"], external_id="home-2")
    token = token_for(tenant, alice)

    async def go():
        async with mcp_session(atlas_server.url, token) as s:
            return tool_error(await s.call_tool("update_fact", {"memory_id": old["id"], "text": "Alice lives in Faro"}))

    error = run(go)
    assert (error["code"], error["field"]) == ("conflict", "memory_id")
    assert error["newest"] == {"id": new["id"], "external_id": "home-2"}
    assert error["message"].startswith(
        f"fact home-1 (id {old['id']}) was already replaced; its newest version is home-2 (id {new['id']})."
    )


def test_unknown_ids_are_not_found(atlas_server, acme) -> None:
    tenant, people = acme
    token = token_for(tenant, people["alice"])
    unknown = "0" * 32
    calls = [
        ("memory_chain", {"memory_id": unknown}, "memory_id", f"no fact {unknown} for this user"),
        ("update_fact", {"memory_id": unknown, "text": "t"}, "memory_id", f"no fact {unknown} for this user"),
        ("record_outcome", {"playbook_id": unknown, "success": True}, "playbook_id", f"no playbook {unknown}"),
        (
            "remember",
            {"kind": "fact", "text": "t", "source_episodes": [unknown]},
            "source_episodes",
            f"no episode {unknown} for this user",
        ),
    ]

    async def go():
        async with mcp_session(atlas_server.url, token) as s:
            for tool, arguments, field, message in calls:
                result = await s.call_tool(tool, arguments)
                assert result.content[0].text.startswith(f"not_found: {message}")
                error = tool_error(result)
                assert (error["code"], error["field"]) == ("not_found", field)
            assert payload(await s.call_tool("list_memories", {}))["memories"] == []
            gone = payload(await s.call_tool("forget_memory", {"memory_id": unknown}))  # idempotent: no error
            assert (gone["id"], gone["forgotten"]) == (unknown, False)

    run(go)


def test_a_missing_scope_is_a_tool_error_and_changes_nothing(atlas_server, acme) -> None:
    tenant, people = acme
    full, read_only = token_for(tenant, people["alice"]), token_for(tenant, people["alice"], ["read"])
    write_only, service_read = token_for(tenant, people["alice"], ["write"]), token_for(tenant, None, ["read"])

    async def go():
        async with mcp_session(atlas_server.url, full) as s:
            fact = payload(await s.call_tool("remember", {"kind": "fact", "text": "Alice likes jazz"}))
        denied = {
            read_only: [
                ("remember", {"kind": "fact", "text": "Alice likes metal"}, "write"),
                ("update_fact", {"memory_id": fact["id"], "text": "Alice likes metal"}, "write"),
                ("record_outcome", {"playbook_id": fact["id"], "success": True}, "write"),
                ("forget_memory", {"memory_id": fact["id"]}, "forget"),
            ],
            write_only: [
                ("recall_memory", {"query": "jazz"}, "read"),
                ("list_memories", {}, "read"),
                ("memory_chain", {"memory_id": fact["id"]}, "read"),
                ("forget_memory", {"memory_id": fact["id"]}, "forget"),
            ],
            service_read: [("remember", {"kind": "fact", "text": "Alice likes metal", "subject": "alice"}, "write")],
        }
        for token, calls in denied.items():
            async with mcp_session(atlas_server.url, token) as s:
                for tool, arguments, scope in calls:
                    error = tool_error(await s.call_tool(tool, arguments))
                    assert (error["code"], error["message"]) == ("forbidden", f"this token lacks the '{scope}' scope")
                # The scope is checked first: naming someone else's subject tells nothing either.
                error = tool_error(await s.call_tool(*calls[0][:1], {**calls[0][1], "subject": "nobody"}))
                assert error["code"] == "forbidden"
        async with mcp_session(atlas_server.url, full) as s:
            assert texts(payload(await s.call_tool("list_memories", {}))) == ["Alice likes jazz"]

    run(go)


def test_updating_a_superseded_version_is_a_conflict(atlas_server, acme) -> None:
    tenant, people = acme
    token = token_for(tenant, people["alice"])

    async def go():
        async with mcp_session(atlas_server.url, token) as s:
            old = payload(await s.call_tool("remember", {"kind": "fact", "text": "Alice drives a Fiat"}))
            new = payload(await s.call_tool("update_fact", {"memory_id": old["id"], "text": "Alice drives a Kia"}))
            stale = tool_error(await s.call_tool("update_fact", {"memory_id": old["id"], "text": "Alice cycles"}))
            assert (stale["code"], stale["field"]) == ("conflict", "memory_id") and new["id"] in stale["message"]
            # The same rule as REST's: the error names the chain's newest version, however far along it is.
            newest = await sync_to_async(writes.fact_write)(
                subject=people["alice"], text="Alice drives a Tesla", supersedes=[new["id"]]
            )
            stale = tool_error(await s.call_tool("update_fact", {"memory_id": old["id"], "text": "Alice walks"}))
            assert stale["code"] == "conflict" and f"newest version is {newest['id']}" in stale["message"]
            listed = payload(await s.call_tool("list_memories", {"types": ["semantic"]}))
            assert texts(listed) == ["Alice drives a Tesla"]

    run(go)


@pytest.fixture
def reset_clients():
    yield
    clients_reset()  # the next request builds its clients from the restored settings


def test_elasticsearch_down_is_an_unavailable_tool_error(atlas_server, acme, settings, reset_clients) -> None:
    from embedded_es.engine import free_port

    tenant, people = acme
    token = token_for(tenant, people["alice"])
    settings.ATLAS_ES_URL = f"http://127.0.0.1:{free_port()}"
    clients_reset()

    async def go():
        async with mcp_session(atlas_server.url, token) as s:
            return await s.call_tool("list_memories", {})

    assert tool_error(run(go)) == {
        "code": "unavailable",
        "message": "Elasticsearch is unreachable while trying to search memories",
        "field": None,
    }


def test_provenance_and_orphaned_through_the_official_client(atlas_server) -> None:
    """``memory_provenance`` answers where a memory came from; ``forget_memory`` reports what an episode
    was the last evidence of."""
    from memory.services.writes import episode_write, fact_write

    tenant, (alice,) = tenant_with_subjects("prov", "alice")
    said = episode_write(subject=alice, text="I am allergic to peanuts", at="2026-02-01T10:00:00Z")
    fact = fact_write(subject=alice, text="Alice is allergic to peanuts", source_episodes=[said["id"]])
    token = token_for(tenant, alice)

    async def go():
        async with mcp_session(atlas_server.url, token) as s:
            where = payload(await s.call_tool("memory_provenance", {"memory_id": fact["id"]}))
            forgotten = payload(await s.call_tool("forget_memory", {"memory_id": said["id"]}))
            after = payload(await s.call_tool("memory_provenance", {"memory_id": fact["id"]}))
            return where, forgotten, after

    where, forgotten, after = run(go)
    assert where["memory"]["text"] == "Alice is allergic to peanuts" and "user_id" not in where["memory"]
    assert where["provenance"]["episodes"] == [
        {"id": said["id"], "gone": False, "timestamp": "2026-02-01T10:00:00+00:00", "text": "I am allergic to peanuts"}
    ]
    assert where["provenance"]["run"] is None
    assert forgotten["forgotten"] is True and forgotten["orphaned"] == [fact["id"]]
    assert after["provenance"]["episodes"] == [{"id": "(forgotten)", "gone": True}]  # the id is free again
