"""Authority over MCP (official client, live server): stamped from the token, filterable in
list_memories, and update_fact of a person's fact answered as a pending proposal."""

from __future__ import annotations

import pytest

from memory.selectors import memory_get
from memory.services import writes

from .conftest import call, payload, tenant_with_subjects, token_for, tool_error

pytestmark = pytest.mark.django_db(transaction=True)


def test_mcp_writes_say_agent_and_cannot_replace_the_persons_fact(atlas_server) -> None:
    tenant, (alice,) = tenant_with_subjects("auth", "alice")
    token = token_for(tenant, alice)
    name = alice.api_tokens.get().name
    mine = writes.fact_write(subject=alice, text="Alice is allergic to nuts", authority="person", written_by="person:a")
    fact = payload(call(atlas_server.url, token, "remember", {"kind": "fact", "text": "Alice likes hiking"}))
    assert (fact["authority"], fact["written_by"], fact["status"]) == ("agent", f"token:{name}", "current")
    proposal = payload(
        call(atlas_server.url, token, "update_fact", {"memory_id": mine["id"], "text": "Alice is not allergic"})
    )
    assert (proposal["status"], proposal["proposal_for"]) == ("pending", [mine["id"]])
    assert memory_get(subject=alice, memory_id=mine["id"])["status"] == "current"
    listed = payload(call(atlas_server.url, token, "list_memories", {"authority": "person"}))
    assert [m["id"] for m in listed["memories"]] == [mine["id"]]
    agents = payload(call(atlas_server.url, token, "list_memories", {"authority": "agent"}))
    assert [m["id"] for m in agents["memories"]] == [fact["id"]]
    refused = tool_error(call(atlas_server.url, token, "list_memories", {"authority": "root"}))
    assert refused["field"] == "authority"
