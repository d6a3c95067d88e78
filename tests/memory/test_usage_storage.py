"""The usage ledger's storage sample against the embedded engine (memory/services/usage_storage.py, its
daily task and ``atlas_usage``): only the tenant's own documents are counted, read with its own key; the
bytes are its share of each index's size."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.elastic.storage import indices_store_sizes
from memory.services import catalog, writes
from memory.services.usage_storage import usage_storage_sample
from memory.tasks import usage_storage_sample_task
from tenants.models import UsageDay
from tenants.usage import tenant_budgets_set, usage_llm_record, usage_today


def _cli(*args: str) -> str:
    out = StringIO()
    call_command("atlas_usage", *args, stdout=out)
    return out.getvalue()


def test_a_sample_counts_only_the_tenants_documents(maya, tom, other_tenant_subject) -> None:
    writes.episode_write(subject=maya, text="I moved to Lisbon", session_id="s")
    writes.fact_write(subject=maya, text="Maya lives in Lisbon")
    writes.fact_write(subject=tom, text="Tom plays chess")
    catalog.catalog_entry_write(tenant=maya.tenant, actor="test", title="Opening hours", text="9 to 5")
    for n in range(4):
        writes.fact_write(subject=other_tenant_subject, text=f"Another tenant's fact {n}")
    row = usage_storage_sample(tenant=maya.tenant)
    other = usage_storage_sample(tenant=other_tenant_subject.tenant)
    assert (row.day, row.documents, other.documents) == (usage_today(), 4, 4)
    sizes = indices_store_sizes()
    total = sum(size for _, size in sizes.values())
    assert 0 < row.bytes_stored and 0 < other.bytes_stored
    assert row.bytes_stored + other.bytes_stored <= total + 2  # each a share of the same indices (rounded)
    assert row.sampled_at is not None
    # The daily task samples every active tenant, and the day's last sample wins.
    writes.fact_write(subject=tom, text="Tom plays go")
    assert usage_storage_sample_task.apply().get()[maya.tenant.slug] == 5
    assert UsageDay.objects.get(tenant=maya.tenant, day=usage_today()).documents == 5


def test_atlas_usage_prints_rows_and_budgets(maya) -> None:
    tenant = maya.tenant
    writes.fact_write(subject=maya, text="Maya lives in Lisbon")
    usage_llm_record(tenant_id=tenant.pk, prompt_tokens=700, completion_tokens=300, requests=1, cost=0.002)
    tenant_budgets_set(tenant=tenant, actor="test", llm_token_budget=1000, daily_write_quota=10)
    answer = json.loads(_cli("--tenant", tenant.slug, "--days", "2", "--sample", "--json"))
    today = usage_today().isoformat()
    assert answer["tenant"] == tenant.slug
    assert [d["day"] for d in answer["days"]][-1] == today and len(answer["days"]) == 2
    last = answer["days"][-1]
    assert (last["writes"], last["documents"], last["llm_tokens"], last["llm_cost"]) == (1, 1, 1000, 0.002)
    assert answer["budgets"] == {
        "llm_token_budget": 1000,
        "llm_tokens_this_month": 1000,
        "llm_tokens_remaining": 0,
        "resumes_on": answer["budgets"]["resumes_on"],
        "daily_write_quota": 10,
    }
    table = _cli("--tenant", tenant.slug, "--days", "1").splitlines()
    assert table[0].split() == [
        "day", "writes", "recalls", "documents", "bytes_stored", "llm_prompt_tokens", "llm_completion_tokens",
        "llm_cost",
    ]  # fmt: skip
    assert table[1].split()[:4] == [today, "1", "0", "1"]
    resumes = answer["budgets"]["resumes_on"]
    assert table[2] == f"LLM tokens this month: 1000 of 1000 — budget reached, resumes on {resumes}"
    assert table[3] == "daily write quota: 10"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tenant", "nobody"], "no tenant 'nobody'"),
        (["--tenant", "t", "--days", "0"], "--days must be 1 to 366"),
    ],
)
def test_atlas_usage_refuses_clearly(maya, args, message) -> None:
    with pytest.raises(CommandError, match=message):
        _cli(*args)
