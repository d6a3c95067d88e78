"""The **To review** tab's words (Django test client): each card quotes the turns its proposal was learnt
from (escaped), and a consolidation run's group says how the run was started, not "Nightly" for every run."""

from __future__ import annotations

import pytest

from memory.consolidation.run import consolidation_run
from memory.models import ConsolidationRun
from memory.services import writes
from memory.tasks import consolidation_subject_task
from tenants.models import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser_client(client, maya_person):
    client.force_login(maya_person)
    return client


def test_a_card_quotes_the_turn_it_came_from_and_a_run_is_named_by_how_it_started(browser_client, maya) -> None:
    Tenant.objects.filter(pk=maya.tenant.pk).update(review_mode="agents")
    maya.tenant.refresh_from_db()
    said = writes.episode_write(subject=maya, text="I <b>love</b> Lisbon & its trams", at="2026-03-11T09:00:00Z")
    manual = ConsolidationRun.objects.create(tenant=maya.tenant, subject=maya, started_by="manual")
    nightly = ConsolidationRun.objects.create(tenant=maya.tenant, subject=maya, started_by="nightly")
    early = ConsolidationRun.objects.create(tenant=maya.tenant, subject=maya, started_by="early")
    for run, text in ((manual, "Maya loves Lisbon"), (nightly, "Maya rides trams"), (early, "Maya likes cities")):
        writes.fact_write(
            subject=maya,
            text=text,
            authority="consolidation",
            written_by=f"run:{run.pk}",
            source_episodes=[said["id"]],
        )
    writes.fact_write(subject=maya, text="Maya reads", authority="consolidation", written_by="run:999")
    html = browser_client.get("/review/").content.decode()
    assert f"Consolidation started by hand (run {manual.pk})" in html
    assert f"Nightly consolidation (run {nightly.pk})" in html
    assert f"Consolidation of many new turns (run {early.pk})" in html
    assert "Consolidation (run 999)" in html  # no record says how it started: no guess
    quote = (
        '<blockquote class="cited-turn"><p>I &lt;b&gt;love&lt;/b&gt; Lisbon &amp; its trams</p>'
        "<footer>2026-03-11 09:00 UTC</footer></blockquote>"
    )
    assert html.count(quote) == 3 and "<b>love</b>" not in html
    assert html.count("Learnt from what you said") == 3  # not on the proposal that cites nothing


def test_a_run_records_how_it_was_started(maya, settings) -> None:
    settings.ATLAS_LLM_BASE_URL = ""  # no LLM: each run is recorded as skipped, which is enough here
    assert consolidation_run(subject=maya).run.started_by == "manual"  # atlas_consolidate's call
    consolidation_subject_task.apply(args=[maya.pk, "early"])
    consolidation_subject_task.apply(args=[maya.pk])
    runs = ConsolidationRun.objects.filter(subject=maya).order_by("pk")
    assert list(runs.values_list("started_by", flat=True)) == ["manual", "early", "nightly"]
