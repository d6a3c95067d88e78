"""atlas_consolidate and the run records' admin pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from memory.consolidation.run import NO_LLM
from memory.models import ConsolidationRun, ConsolidationState
from memory.selectors import memory_list, proposals_list
from memory.services import writes
from tenants.models import Person
from tests.fake_llm import empty_plan, fact, llm_serving

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def llm(settings):
    with llm_serving(settings, ATLAS_LLM_RETRIES=0, ATLAS_USAGE_RECORDING="off") as fake:
        yield fake


def run_cli(*args: str) -> str:
    out = StringIO()
    call_command("atlas_consolidate", *args, stdout=out)
    return out.getvalue()


def facts_of(subject) -> list[str]:
    return sorted(m["text"] for m in memory_list(subject=subject, memory_types=["semantic"], page_size=200)["memories"])


def test_dry_run_prints_a_diff_then_the_real_run_writes_it(maya, llm) -> None:
    old = writes.fact_write(subject=maya, text="Maya has a cat named Miso", fact_type="identity")
    episode = writes.episode_write(subject=maya, text="Miso passed away; we adopted a dog, Rex", at=T0)["id"]
    llm.script(
        empty_plan(
            supersessions=[
                {
                    "target_fact_ids": [old["id"]],
                    "contradiction": "natural",
                    "fact": fact("Maya has a dog named Rex", [episode], fact_type="identity"),
                }
            ],
            facts=[fact("Maya is grieving", [episode], confidence=0.3)],
        )
    )
    tenant = maya.tenant.slug
    dry = run_cli("--tenant", tenant, "--subject", "maya", "--dry-run")
    assert dry.splitlines() == [
        f"--- {maya} (dry run: nothing written)",
        f"- fact {old['id']} 'Maya has a cat named Miso'  (supersede)",
        f"+ fact [identity 0.90] 'Maya has a dog named Rex'  (replaces {old['id']}, natural; episodes {episode})",
        "! dropped fact: confidence 0.3 below the floor 0.6  'Maya is grieving'",
    ]
    assert not ConsolidationRun.objects.exists() and not ConsolidationState.objects.exists()
    assert facts_of(maya) == ["Maya has a cat named Miso"]
    real = run_cli("--tenant", tenant)  # every subject with new episodes: maya
    run = ConsolidationRun.objects.get(subject=maya)
    assert real.splitlines() == [
        f"{maya}: done (run {run.pk}): 1 supersessions, 1 superseded",
        "  dropped fact: confidence 0.3 below the floor 0.6",
    ]
    assert facts_of(maya) == ["Maya has a dog named Rex"]
    assert run_cli("--tenant", tenant) == f"no subject of {tenant} has new episodes\n"
    # --since goes over the same window again: the same documents, nothing twice; the watermark stays.
    mark = ConsolidationState.objects.get(subject=maya).watermark_at
    again = run_cli("--tenant", tenant, "--subject", "maya", "--since", (T0 - timedelta(hours=1)).isoformat())
    assert "done" in again and facts_of(maya) == ["Maya has a dog named Rex"]
    assert ConsolidationState.objects.get(subject=maya).watermark_at == mark


def test_cli_errors_are_one_line(maya, llm) -> None:
    with pytest.raises(CommandError, match="no subject 'nobody' in tenant"):
        run_cli("--tenant", maya.tenant.slug, "--subject", "nobody")
    with pytest.raises(CommandError, match="--since must be an ISO 8601 date-time"):
        run_cli("--tenant", maya.tenant.slug, "--since", "yesterday")
    with pytest.raises(CommandError, match="no consolidation run 999"):
        run_cli("--tenant", maya.tenant.slug, "--approve", "999")


def test_without_llm_the_cli_records_skipped_runs(maya, settings) -> None:
    settings.ATLAS_LLM_BASE_URL = ""
    writes.episode_write(subject=maya, text="hello", at=T0)
    run = ConsolidationRun.objects.filter(subject=maya)
    assert run_cli("--tenant", maya.tenant.slug).splitlines()[0] == (
        f"{maya}: skipped (run {run.get().pk}): no LLM configured: set ATLAS_LLM_BASE_URL and ATLAS_LLM_MODEL"
        " (and ATLAS_LLM_API_KEY if it needs one)"
    )
    assert run.get().error == NO_LLM


def test_run_records_are_read_only_in_the_admin(client, maya, llm) -> None:
    episode = writes.episode_write(subject=maya, text="I play the cello", at=T0)["id"]
    llm.script(empty_plan(facts=[fact("Maya plays the cello", [episode])]))
    run_cli("--tenant", maya.tenant.slug)
    run = ConsolidationRun.objects.get(subject=maya)
    staff = Person.objects.create_superuser(email="ops@example.com", password="ops-password-123")
    client.force_login(staff)
    listing = client.get(reverse("admin:memory_consolidationrun_changelist") + "?status__exact=done")
    assert listing.status_code == 200 and "1 facts" in listing.content.decode()
    page = client.get(reverse("admin:memory_consolidationrun_change", args=[run.pk]))
    assert page.status_code == 200 and "Maya plays the cello" in page.content.decode()
    assert (
        client.post(reverse("admin:memory_consolidationrun_change", args=[run.pk]), {"status": "failed"}).status_code
        == 403
    )
    assert client.get(reverse("admin:memory_consolidationrun_add")).status_code == 403
    assert client.get(reverse("admin:memory_consolidationstate_changelist")).status_code == 200
    run.refresh_from_db()
    assert run.status == "done"


def test_a_run_waiting_for_review_can_be_discarded(maya, llm, settings) -> None:
    settings.ATLAS_CONSOLIDATION_MAX_CHANGE_FREE = 0
    old = writes.fact_write(subject=maya, text="Maya lives in Porto", fact_type="identity")
    episode = writes.episode_write(subject=maya, text="Moved to Lisbon", at=T0)["id"]
    replace = {
        "target_fact_ids": [old["id"]],
        "contradiction": "natural",
        "fact": fact("Maya lives in Lisbon", [episode]),
    }
    llm.script(empty_plan(supersessions=[replace]))
    settings.ATLAS_CONSOLIDATION_MAX_CHANGE_SHARE = 0.5
    tenant = maya.tenant.slug
    assert "needs_review" in run_cli("--tenant", tenant)
    run = ConsolidationRun.objects.get(subject=maya)
    assert "waits for review" in run_cli("--tenant", tenant)  # not asked again
    assert (
        run_cli("--tenant", tenant, "--discard", str(run.pk))
        == f"{maya}: run {run.pk} discarded; the next run asks the LLM again\n"
    )
    assert proposals_list(subject=maya)["proposals"] == []  # the held run's proposals went with its plan
    settings.ATLAS_CONSOLIDATION_MAX_CHANGE_SHARE = 1.0
    assert ": done" in run_cli("--tenant", tenant)
    assert facts_of(maya) == ["Maya lives in Lisbon"] and len(llm.requests) == 2
    with pytest.raises(CommandError, match="not waiting for review"):
        run_cli("--tenant", tenant, "--discard", str(run.pk))
