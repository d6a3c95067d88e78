"""The review queue over MCP (official client, live server): list_proposals and review_proposal, listed
only for the scopes that allow them, decisions with their errors as tool errors."""

from __future__ import annotations

import pytest

from memory.models import ConsolidationRun
from memory.selectors import memory_get
from memory.services import writes
from tenants.models import Tenant
from tests.memory.consolidation.scripted import held_run

from .conftest import call, mcp_session, payload, run, tenant_with_subjects, token_for, tool_error

pytestmark = pytest.mark.django_db(transaction=True)


def test_list_and_review_proposals(atlas_server) -> None:
    tenant, (alice,) = tenant_with_subjects("prop", "alice")
    Tenant.objects.filter(pk=tenant.pk).update(review_mode="agents")
    token = token_for(tenant, alice, scopes=["read", "write"])
    reviewer = token_for(tenant, alice, scopes=["read", "review"])  # whoever proposed never decides
    first = payload(call(atlas_server.url, token, "remember", {"kind": "fact", "text": "Alice rows on Sundays"}))
    second = payload(call(atlas_server.url, token, "remember", {"kind": "fact", "text": "Alice hates rain"}))
    assert (first["status"], second["status"]) == ("pending", "pending")
    listed = payload(call(atlas_server.url, token, "list_proposals", {}))
    assert [p["id"] for p in listed["proposals"]] == [second["id"], first["id"]]
    assert all("user_id" not in p for p in listed["proposals"])
    version = {p["id"]: p["version"] for p in listed["proposals"]}
    edited = payload(
        call(
            atlas_server.url,
            reviewer,
            "review_proposal",
            {
                "proposal_id": first["id"],
                "decision": "accept",
                "text": "Alice rows on Sunday mornings",
                "version": version[first["id"]],
            },
        )
    )
    assert (edited["status"], edited["text"]) == ("current", "Alice rows on Sunday mornings")
    twice = tool_error(
        call(
            atlas_server.url,
            reviewer,
            "review_proposal",
            {"proposal_id": first["id"], "decision": "reject", "version": version[first["id"]]},
        )
    )
    assert (twice["code"], twice["message"]) == ("conflict", f"proposal {first['id']} was already accepted")
    bad = tool_error(
        call(
            atlas_server.url,
            reviewer,
            "review_proposal",
            {"proposal_id": second["id"], "decision": "reject", "text": "x", "version": version[second["id"]]},
        )
    )
    assert bad["field"] == "text"
    rejected = payload(
        call(
            atlas_server.url,
            reviewer,
            "review_proposal",
            {"proposal_id": second["id"], "decision": "reject", "version": version[second["id"]]},
        )
    )
    assert rejected == {"id": second["id"], "type": "semantic", "status": "rejected"}
    assert memory_get(subject=alice, memory_id=first["id"])["status"] == "current"
    assert payload(call(atlas_server.url, token, "list_proposals", {})) == {"proposals": [], "next_cursor": None}


def test_review_tools_follow_the_tokens_scopes(atlas_server) -> None:
    tenant, (alice,) = tenant_with_subjects("propscope", "alice")
    reader = token_for(tenant, alice, scopes=["read"])

    async def names():
        async with mcp_session(atlas_server.url, reader) as s:
            return {t.name for t in (await s.list_tools()).tools}

    listed = run(names)
    assert "list_proposals" in listed and "review_proposal" not in listed
    mine = writes.fact_write(subject=alice, text="Alice is a nurse", authority="person", written_by="person:a")
    agent = token_for(tenant, alice)
    proposal = payload(
        call(atlas_server.url, agent, "update_fact", {"memory_id": mine["id"], "text": "Alice is a doctor"})
    )
    refused = tool_error(
        call(
            atlas_server.url,
            agent,
            "review_proposal",
            {"proposal_id": proposal["id"], "decision": "accept", "version": proposal["version"]},
        )
    )
    assert (refused["code"], refused["message"]) == (
        "forbidden",
        f"proposal {proposal['id']} is this writer's own: whoever proposed never decides",
    )
    assert memory_get(subject=alice, memory_id=mine["id"])["status"] == "current"


def test_the_last_decision_over_mcp_finishes_a_run_held_for_review(atlas_server) -> None:
    tenant, (alice,) = tenant_with_subjects("held", "alice")
    run, (first, second) = held_run(alice, "Alice plays the cello", "Alice sings in a choir")
    reviewer = token_for(tenant, alice, scopes=["read", "review"])
    listed = payload(call(atlas_server.url, reviewer, "list_proposals", {}))["proposals"]
    version = {p["id"]: p["version"] for p in listed}
    decide = {"decision": "reject", "proposal_id": first, "version": version[first]}
    assert payload(call(atlas_server.url, reviewer, "review_proposal", decide))["status"] == "rejected"
    assert ConsolidationRun.objects.get(pk=run.pk).status == "needs_review"  # one still waits
    decide = {"decision": "accept", "proposal_id": second, "version": version[second]}
    assert payload(call(atlas_server.url, reviewer, "review_proposal", decide))["status"] == "current"
    run.refresh_from_db()
    assert run.status == "done" and run.changes["refused"] == [run.plan["facts"][0]["key"]]
