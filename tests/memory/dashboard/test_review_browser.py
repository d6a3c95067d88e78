"""The **To review** tab in Debian's Chromium against the live server: old beside new for a replacement,
accept, edit then accept, reject, accept all and reject all per writer — each page axe-checked and kept
as a screenshot (test-artifacts/screenshots/review-*.png)."""

from __future__ import annotations

import pytest

from memory import selectors
from memory.models import ConsolidationRun, RejectedProposal
from memory.services import writes
from tenants.models import AuditRecord, Tenant
from tests.browser import person_login

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

PERSON = {"authority": "person", "written_by": "person:maya@example.org"}
RUN = {"authority": "consolidation", "written_by": "run:41"}


def _check(page, axe_clean, screenshot, name: str) -> None:
    axe_clean(page)
    screenshot(page, name)


def _pending_texts(subject) -> list[str]:
    return sorted(p["text"] for p in selectors.proposals_list(subject=subject)["proposals"])


def test_the_person_reviews_one_by_one_and_in_bulk(page, axe_clean, screenshot, maya, maya_person) -> None:
    Tenant.objects.filter(pk=maya.tenant.pk).update(review_mode="agents")
    maya.tenant.refresh_from_db()
    mine = writes.fact_write(subject=maya, text="Maya lives in Lisbon", fact_type="identity", **PERSON)
    replacement = writes.fact_write(
        subject=maya, text="Maya lives in Porto", supersedes=[mine["id"]], written_by="token:travel-agent"
    )
    cat = writes.fact_write(subject=maya, text="Maya has a cat", written_by="token:travel-agent")
    # Run 41 was the nightly job's, run 42 an operator's atlas_consolidate: each group says which.
    ConsolidationRun.objects.create(pk=41, tenant=maya.tenant, subject=maya, started_by="nightly")
    ConsolidationRun.objects.create(pk=42, tenant=maya.tenant, subject=maya, started_by="manual")
    said = writes.episode_write(subject=maya, text="I went to the <Gulbenkian> museum twice")
    run_facts = [
        writes.fact_write(subject=maya, text=f"Maya visited museum {n}", source_episodes=[said["id"]], **RUN)
        for n in range(2)
    ]
    run_other = [
        writes.fact_write(subject=maya, text=f"Maya read book {n}", authority="consolidation", written_by="run:42")
        for n in range(2)
    ]

    person_login(page, "maya@example.org", PASSWORD)
    page.get_by_role("navigation", name="Kinds of memory").get_by_role("link", name="To review").click()
    assert page.get_by_role("heading", name="To review").is_visible()
    item = page.locator(f"#proposal-{replacement['id']}")
    assert "Maya lives in Lisbon" in item.locator(".old").inner_text()
    assert "Maya lives in Porto" in item.locator(".new").inner_text()
    assert "by you" in item.locator(".old").inner_text()
    cited = page.locator(f"#proposal-{run_facts[0]['id']} .cited-turn")
    assert cited.locator("p").inner_text() == "I went to the <Gulbenkian> museum twice"  # as text, escaped
    _check(page, axe_clean, screenshot, "review-queue")

    # Accept the replacement: the person's fact is replaced, the chain has two versions.
    item.get_by_role("button", name="Accept", exact=True).click()
    assert page.get_by_text("Accepted: agents now use it.").is_visible()
    assert selectors.memory_get(subject=maya, memory_id=mine["id"])["superseded_by"] == [replacement["id"]]

    # Edit, then accept: the person's words, and their authority.
    cat_item = page.locator(f"#proposal-{cat['id']}")
    cat_item.get_by_text("Edit, then accept").click()
    cat_item.get_by_label("Your version").fill("Maya has a grey cat called Miso")
    _check(page, axe_clean, screenshot, "review-edit")
    cat_item.get_by_role("button", name="Save and accept").click()
    assert page.get_by_text("Accepted, with your correction: agents now use it.").is_visible()
    edited = selectors.memory_get(subject=maya, memory_id=cat["id"])
    assert (edited["text"], edited["authority"], edited["status"]) == (
        "Maya has a grey cat called Miso",
        "person",
        "current",
    )

    # Reject one of run 41's, then accept all that is left of run 41 and reject all of run 42.
    page.locator(f"#proposal-{run_facts[0]['id']}").get_by_role("button", name="Reject").click()
    assert page.get_by_text("Rejected: it is deleted").is_visible()
    assert _pending_texts(maya) == ["Maya read book 0", "Maya read book 1", "Maya visited museum 1"]
    page.get_by_role("region", name="Nightly consolidation (run 41) · 1 proposal").get_by_role(
        "button", name="Accept all 1"
    ).click()
    assert page.get_by_text("Accepted 1 proposal from Nightly consolidation (run 41).").is_visible()
    page.get_by_role("region", name="Consolidation started by hand (run 42) · 2 proposals").get_by_role(
        "button", name="Reject all 2"
    ).click()
    assert page.get_by_text("Rejected 2 proposals from Consolidation started by hand (run 42).").is_visible()
    assert page.get_by_text("Nothing waits for your review.").is_visible()
    _check(page, axe_clean, screenshot, "review-done")

    assert _pending_texts(maya) == []
    assert selectors.memory_get(subject=maya, memory_id=run_facts[1]["id"])["status"] == "current"
    assert RejectedProposal.objects.filter(subject=maya).count() == 3
    actions = AuditRecord.objects.filter(action__startswith="proposal.", actor="person:maya@example.org")
    assert sorted(actions.values_list("action", flat=True)) == ["proposal.accept"] * 3 + ["proposal.reject"] * 3
    recalled = [h["id"] for h in selectors_recall(maya, "which books did Maya read")]
    assert not set(recalled) & {m["id"] for m in run_other}


def selectors_recall(subject, query: str) -> list[dict]:
    from memory.recall import memory_recall

    return memory_recall(subject=subject, query=query, k=10).hits
