"""An operator uses the admin's memory pages in a real browser: from the subject's admin page to its memories,
a search, a fact, a correction, the chain both ways, and forgetting — every page axe-clean and screenshotted."""

from __future__ import annotations

import re
import uuid

import pytest

from memory import selectors
from memory.services import writes
from tenants import services
from tenants.models import ApiKeyCredential
from tests.browser import person_create, person_login

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a long enough password 1"


@pytest.fixture
def maya(atlas_es):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"b-{uuid.uuid4().hex[:8]}", name="Browser tenant", actor="test")
    subject = services.subject_create(tenant=tenant, external_id="maya", actor="test")
    for n in range(3):
        writes.episode_write(subject=subject, text=f"turn {n} about my move", session_id="move")
    writes.playbook_write(
        subject=subject, name="pack boxes", trigger_text="moving house", steps=[{"instruction": "tape"}]
    )
    writes.fact_write(subject=subject, text="Maya lives in Lisbon", fact_type="identity")
    return subject


def test_an_operator_browses_searches_edits_follows_the_chain_and_forgets(page, axe_clean, screenshot, maya):
    operator = person_create("operator@example.org", PASSWORD)
    operator.is_staff = operator.is_superuser = True
    operator.save()
    person_login(page, "operator@example.org", PASSWORD)

    page.goto(f"/admin/tenants/memorysubject/{maya.pk}/change/")
    assert page.get_by_role("link", name="Memories of maya").is_visible()
    screenshot(page, "admin-subject-change")
    # The person field is a raw id input (tenants/admin.py): select2's autocomplete failed axe-core
    # (aria-input-field-name) and the CSP (inline styles).
    axe_clean(page)
    page.goto("/admin/tenants/memorysubject/")
    axe_clean(page)
    # The way into the memory pages is the list's first column, inside a 1,280-px window (a last column
    # was cut off there).
    memories_link = page.get_by_role("link", name="Memories of maya")
    box = memories_link.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280
    screenshot(page, "admin-subjects-list")
    memories_link.click()
    page.wait_for_load_state()
    assert page.get_by_role("link", name="Maya lives in Lisbon").is_visible()
    axe_clean(page)
    screenshot(page, "admin-memory-browse")

    page.get_by_role("link", name="Episodes").click()
    assert page.get_by_role("link", name="turn 2 about my move").is_visible()

    page.get_by_label("Search (recall)").fill("where does Maya live?")
    page.get_by_role("button", name="Search").click()
    page.wait_for_load_state()
    assert page.locator("table.memory-table tbody tr").first.get_by_role("link").inner_text() == "Maya lives in Lisbon"
    axe_clean(page)
    screenshot(page, "admin-memory-search")

    page.get_by_role("link", name="Maya lives in Lisbon").first.click()
    page.wait_for_load_state()
    # Labels and words, not the stored keys, type names or Python's list text.
    fields = page.locator("dl.memory-fields").first  # (the second is "Where it came from")
    labels = fields.locator("dt").all_inner_texts()
    assert labels[:2] == ["Id", "Kind"] and "Fact type" in labels and "Stored" in labels
    assert fields.locator("dd").nth(1).inner_text() == "Fact"
    shown = fields.inner_text()
    assert "semantic" not in shown and "fact_type" not in shown and "['" not in shown
    stored = fields.locator("dt", has_text="Stored").locator("xpath=following-sibling::dd[1]").inner_text()
    assert re.fullmatch(r"\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC", stored), stored
    axe_clean(page)
    screenshot(page, "admin-memory-detail")
    page.get_by_label("Corrected text").fill("Maya lives in Porto")
    page.get_by_role("button", name="Save as a new version").click()
    page.wait_for_load_state()
    assert page.locator("blockquote.memory-quote").inner_text() == "Maya lives in Porto"
    assert "Saved as a new version" in page.content()

    page.get_by_role("link", name="Supersession chain").click()
    page.wait_for_load_state()
    steps = page.locator("ol.memory-chain > li")
    assert steps.count() == 2 and "natural" in steps.nth(0).inner_text()
    axe_clean(page)
    screenshot(page, "admin-memory-chain")
    page.get_by_role("link", name="Maya lives in Lisbon").click()  # back along the chain: the older version
    page.wait_for_load_state()
    assert "This version was replaced" in page.content()
    replaced_by = page.locator("dl.memory-fields dt", has_text="Replaced by").locator("xpath=following-sibling::dd[1]")
    assert replaced_by.get_by_role("link").count() == 1  # a link to the newer version, not ['…'] text
    screenshot(page, "admin-memory-replaced")
    page.get_by_role("link", name="Supersession chain").click()
    page.get_by_role("link", name="Maya lives in Porto").click()  # and forward again
    page.wait_for_load_state()

    page.get_by_role("link", name="Forget…").click()
    page.wait_for_load_state()
    assert "cannot be restored" in page.content()
    axe_clean(page)
    screenshot(page, "admin-memory-forget")
    page.get_by_role("button", name="Yes, forget it").click()
    page.wait_for_load_state()
    assert re.search(r"/memories/$", page.url)
    assert "is forgotten" in page.content()
    texts = [m["text"] for m in selectors.memory_list(subject=maya, memory_types=["semantic"])["memories"]]
    assert texts == []  # Porto forgotten; Lisbon is superseded, so hidden


def test_another_subjects_memory_through_this_subjects_url_is_404(page, axe_clean, screenshot, maya, settings):
    other = services.subject_create(tenant=maya.tenant, external_id="tom", actor="test")
    toms = writes.fact_write(subject=other, text="Tom's secret fact")
    operator = person_create("operator2@example.org", PASSWORD)
    operator.is_staff = operator.is_superuser = True
    operator.save()
    person_login(page, "operator2@example.org", PASSWORD)
    settings.ATLAS_CODE_FILTER = False
    response = page.goto(f"/admin/tenants/memorysubject/{maya.pk}/memories/{toms['id']}/")
    assert response.status == 404
    assert "secret" not in page.content()
    axe_clean(page)
    screenshot(page, "admin-memory-not-found")
