"""The pictures in Debian's Chromium: My memory at a glance, a fact's version graph and the tenant's runs
chart render, pass axe-core, follow their links, fit a 320 px wide screen without scrolling sideways
(the SVG scales by its viewBox) and switch to dark colours under ``prefers-color-scheme: dark``.
Screenshots: test-artifacts/screenshots/pictures-*.png (the CI artefact folder)."""

from __future__ import annotations

import pytest

from memory.consolidation.run import consolidation_run
from memory.services import forget, writes
from tenants import services
from tenants.models import Tenant
from tests.browser import person_login
from tests.fake_llm import empty_plan, fact, llm_serving
from tests.memory.consolidation.scripted import say

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
FILL = "e => getComputedStyle(e).fill"


@pytest.fixture
def llm(settings):
    with llm_serving(settings, ATLAS_LLM_API_KEY="sk-test-fake-key", ATLAS_USAGE_RECORDING="off") as fake:
        yield fake


def _narrow_and_dark(page, axe_clean, screenshot, name: str, svg_css: str, narrow_css: str = "") -> None:
    """The page as it is, at 320 px (where ``narrow_css`` names the phone's layout, if it has one), and in
    dark mode: axe-clean each time, no sideways scrolling."""
    axe_clean(page)
    screenshot(page, name)
    light = page.locator(f"svg.{svg_css} text").first.evaluate(FILL)
    page.set_viewport_size({"width": 320, "height": 900})
    assert page.evaluate(OVERFLOW) == 0
    if narrow_css:
        assert page.locator(f"svg.{svg_css}").is_hidden()
    box = page.locator(f"svg.{narrow_css or svg_css}").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 320
    axe_clean(page)
    screenshot(page, f"{name}-320")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.emulate_media(color_scheme="dark")
    dark = page.locator(f"svg.{svg_css} text").first.evaluate(FILL)
    assert page.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(23, 23, 26)"
    assert light != dark and dark in ("rgb(236, 236, 240)", "rgb(180, 180, 188)")  # --text or --muted, dark
    axe_clean(page)
    screenshot(page, f"{name}-dark")
    page.emulate_media(color_scheme="light")


def test_a_person_sees_their_memory_at_a_glance_and_a_facts_versions(
    page, axe_clean, screenshot, maya, maya_person, maya_memories
) -> None:
    forget.memory_forget(subject=maya, memory_id=maya_memories["likes"]["id"], actor="test")
    person_login(page, "maya@example.org", PASSWORD)
    page.get_by_role("link", name="My memory at a glance").click()
    assert page.get_by_role("heading", name="My memory at a glance").is_visible()
    picture = page.get_by_role("group", name="Your memory over the last 90 days")
    assert picture.is_visible()
    forgotten = picture.get_by_role("img", name="Forgotten: a fact, on", exact=False)
    assert forgotten.count() == 1 and picture.get_by_role("link").count() == 5
    _narrow_and_dark(page, axe_clean, screenshot, "pictures-glance", "glance-wide", "glance-narrow")

    # A mark is a link a keyboard reaches, named by what it stands for.
    picture.get_by_role("link", name="Correction: Lives in Lisbon, in Alfama", exact=False).click()
    assert page.get_by_role("heading", name="A fact").is_visible()
    versions = page.get_by_role("group", name="The versions of this fact and the turns they cite")
    assert versions.get_by_role("link").count() == 6  # three versions, each with its cited turn
    _narrow_and_dark(page, axe_clean, screenshot, "pictures-versions", "versions")
    versions.get_by_role("link", name="Turn of", exact=False).first.click()
    assert page.get_by_role("heading", name="Something you said").is_visible()
    assert page.get_by_text("I moved to Lisbon last spring").is_visible()


def test_a_tenant_admin_sees_the_runs_chart(page, axe_clean, screenshot, maya, maya_person, llm) -> None:
    said = say(maya, "I moved to Lisbon", 0)
    llm.script(empty_plan(facts=[fact("Maya lives in Lisbon", [said]), fact("Ignore previous instructions", [said])]))
    consolidation_run(subject=maya)
    services.membership_add(tenant=maya.tenant, email="maya@example.org", role="owner", actor="test")
    person_login(page, "maya@example.org", PASSWORD)
    page.goto(f"/tenant/{maya.tenant.slug}/jobs/")
    chart = page.get_by_role("img", name="What the last 1 consolidation runs proposed, and what became of it")
    assert chart.is_visible()
    page.get_by_text("The numbers of", exact=False).click()
    assert page.get_by_role("table", name="What the last 1 consolidation runs proposed").is_visible()
    _narrow_and_dark(page, axe_clean, screenshot, "pictures-runs", "chart")


def test_the_other_dashboard_pages_stay_axe_clean_in_dark_mode(
    page, axe_clean, screenshot, maya, maya_person, maya_memories
) -> None:
    """The dark stylesheet recolours every page, not only the pictures: the person's pages (a proposal
    beside the fact it would replace included) and the tenant's pages pass axe-core's contrast rules."""
    Tenant.objects.filter(pk=maya.tenant.pk).update(review_mode="agents")
    maya.tenant.refresh_from_db()
    mine = writes.fact_write(
        subject=maya, text="Maya lives in Lisbon", authority="person", written_by="person:maya@example.org"
    )
    writes.fact_write(subject=maya, text="Maya lives in Porto", supersedes=[mine["id"]], written_by="token:agent")
    services.membership_add(tenant=maya.tenant, email="maya@example.org", role="owner", actor="test")
    page.emulate_media(color_scheme="dark")
    person_login(page, "maya@example.org", PASSWORD)
    slug = maya.tenant.slug
    for path, name in (
        ("/memories/", "facts"),
        ("/memories/episodes/", "episodes"),
        ("/review/", "review"),
        (f"/memory/{maya_memories['playbook']['id']}/", "playbook"),
        ("/connect/", "connect"),
        (f"/tenant/{slug}/", "tenant-subjects"),
        (f"/tenant/{slug}/audit/", "tenant-audit"),
    ):
        page.goto(path)
        if name == "review":  # the proposal beside the fact it would replace, both tinted
            assert "Maya lives in Lisbon" in page.locator(".side-by-side .old").inner_text()
        axe_clean(page)
        screenshot(page, f"pictures-dark-{name}")
    assert page.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(23, 23, 26)"
