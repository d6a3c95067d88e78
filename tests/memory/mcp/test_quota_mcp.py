"""The daily write quota and the usage ledger through MCP (the official client, the live server): a write
past the quota is a tool error with the REST problem's code, message and retry_after; an agent's
recall_memory is counted as a recall, its remember as a write."""

from __future__ import annotations

import pytest

from tenants.models import UsageDay
from tenants.usage import tenant_budgets_set, usage_today

from .conftest import mcp_session, payload, run, tenant_with_subjects, token_for, tool_error

pytestmark = pytest.mark.django_db(transaction=True)


def test_remember_past_the_quota_is_a_tool_error_and_recall_is_counted(atlas_server) -> None:
    tenant, (alice,) = tenant_with_subjects("quota", "alice")
    tenant_budgets_set(tenant=tenant, actor="test", daily_write_quota=1)
    token = token_for(tenant, alice)

    async def go():
        async with mcp_session(atlas_server.url, token) as s:
            first = await s.call_tool("remember", {"type": "semantic", "text": "Alice keeps bees"})
            second = await s.call_tool("remember", {"type": "semantic", "text": "Alice keeps goats"})
            recalled = await s.call_tool("recall_memory", {"query": "what does Alice keep?", "k": 3})
            return first, second, recalled

    first, second, recalled = run(go)
    assert payload(first)["text"] == "Alice keeps bees"
    error = tool_error(second)
    assert error["code"] == "quota_exceeded"
    assert error["message"] == (
        f"tenant {tenant.slug} has used its daily write quota (1 writes per UTC day); "
        "writes are accepted again after midnight UTC"
    )
    assert 1 <= error["retry_after"] <= 86400
    assert [h["text"] for h in payload(recalled)["hits"]] == ["Alice keeps bees"]
    row = UsageDay.objects.get(tenant=tenant, day=usage_today())
    assert (row.writes, row.recalls) == (1, 1)
