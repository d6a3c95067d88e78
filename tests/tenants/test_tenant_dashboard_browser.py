"""A tenant owner manages subjects, catalog and tokens in a real browser; another tenant's URLs are 404.
Every page axe-clean (no serious/critical violation) and screenshotted."""

from __future__ import annotations

import re
import uuid

import pytest

from memory import selectors
from memory.services import writes
from tenants import services
from tenants.models import ApiKeyCredential, ApiToken, MemorySubject
from tests.browser import person_create, person_login

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a long enough password 1"


@pytest.fixture
def tenants(atlas_es):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    run = uuid.uuid4().hex[:6]
    mine = services.tenant_create(slug=f"acme-{run}", name="Acme", actor="test")
    theirs = services.tenant_create(slug=f"globex-{run}", name="Globex", actor="test")
    alice = services.subject_create(tenant=mine, external_id="alice", display_name="Alice", actor="test")
    fact = writes.fact_write(subject=alice, text="Alice lives in Berlin", fact_type="identity")
    writes.fact_edit(subject=alice, memory_id=fact["id"], text="Alice lives in Lisbon")
    zed = services.subject_create(tenant=theirs, external_id="zed", actor="test")
    zed_fact = writes.fact_write(subject=zed, text="Zed's private fact")
    person_create("owner@acme.test", PASSWORD)
    services.membership_add(tenant=mine, email="owner@acme.test", role="owner", actor="test")
    return {"mine": mine, "theirs": theirs, "zed_fact": zed_fact["id"]}


def _look(page, axe_clean, screenshot, name: str) -> None:
    page.wait_for_load_state()
    axe_clean(page)
    screenshot(page, name)


def test_a_tenant_owner_manages_subjects_catalog_and_tokens(page, axe_clean, screenshot, tenants):
    mine = tenants["mine"]
    person_create("carol@acme.test", PASSWORD)
    person_login(page, "owner@acme.test", PASSWORD)
    page.get_by_role("link", name="Manage Acme").click()
    _look(page, axe_clean, screenshot, "tenant-subjects")

    page.get_by_label("External id").fill("carol")
    page.get_by_label("Display name").fill("Carol")
    page.get_by_label("Person's email (optional)").fill("carol@acme.test")
    page.get_by_role("button", name="Create subject").click()
    _look(page, axe_clean, screenshot, "tenant-subject")
    assert "created, with its own Elasticsearch key" in page.content()
    carol = MemorySubject.objects.get(tenant=mine, external_id="carol")
    assert carol.person.email == "carol@acme.test"

    page.get_by_role("link", name="Deactivate carol…").click()
    _look(page, axe_clean, screenshot, "tenant-subject-deactivate")
    page.get_by_role("button", name="Deactivate").click()
    page.wait_for_load_state()
    assert not MemorySubject.objects.get(pk=carol.pk).is_active

    page.goto(f"/tenant/{mine.slug}/subjects/alice/")
    page.get_by_role("link", name="Open their memories (support)").click()
    _look(page, axe_clean, screenshot, "tenant-subject-memories")
    page.get_by_role("link", name="Alice lives in Lisbon").click()
    _look(page, axe_clean, screenshot, "tenant-subject-memory")
    page.get_by_role("link", name="Supersession chain").click()
    _look(page, axe_clean, screenshot, "tenant-subject-chain")
    assert page.locator("ol.memory-chain > li").count() == 2

    page.get_by_role("navigation", name="Tenant sections").get_by_role("link", name="Catalog").click()
    page.get_by_label("Title").fill("Return policy")
    page.get_by_label("Text").fill("Returns within 30 days.")
    page.get_by_label("Tags").fill("policy, returns")
    page.get_by_role("button", name="Add entry").click()
    _look(page, axe_clean, screenshot, "tenant-catalog")
    page.get_by_role("link", name="Edit Return policy").click()
    _look(page, axe_clean, screenshot, "tenant-catalog-edit")
    page.get_by_label("Text").fill("Returns within 60 days.")
    page.get_by_role("button", name="Save").click()
    page.wait_for_load_state()
    assert [e["text"] for e in selectors.catalog_list(tenant=mine)["memories"]] == ["Returns within 60 days."]
    page.get_by_role("link", name="Delete Return policy").click()
    _look(page, axe_clean, screenshot, "tenant-catalog-delete")
    page.get_by_role("button", name="Delete it").click()
    page.wait_for_load_state()
    assert selectors.catalog_list(tenant=mine)["memories"] == []

    page.get_by_role("navigation", name="Tenant sections").get_by_role("link", name="Tokens").click()
    page.get_by_label("Name").fill("support agent")
    page.get_by_label("forget — delete memories").check()
    page.get_by_role("button", name="Create token").click()
    _look(page, axe_clean, screenshot, "tenant-tokens")
    secret = re.search(r"atlas_[a-z0-9]{12}_[A-Za-z0-9_-]{43}", page.locator("pre").inner_text()).group(0)
    token = ApiToken.objects.get(tenant=mine, name="support agent")
    assert token.scopes == ["read", "write", "forget"] and secret.startswith(f"atlas_{token.prefix}_")
    page.goto(f"/tenant/{mine.slug}/tokens/")
    assert secret not in page.content()
    page.get_by_role("button", name="Revoke support agent").click()
    page.wait_for_load_state()
    assert not ApiToken.objects.get(pk=token.pk).is_active

    page.get_by_role("navigation", name="Tenant sections").get_by_role("link", name="Members").click()
    _look(page, axe_clean, screenshot, "tenant-members")
    page.get_by_role("navigation", name="Tenant sections").get_by_role("link", name="Audit trail").click()
    _look(page, axe_clean, screenshot, "tenant-audit")
    assert "token.revoke" in page.content() and "memory.view" in page.content()

    from memory.models import ConsolidationRun

    subject = MemorySubject.objects.filter(tenant=mine).first()
    ConsolidationRun.objects.create(
        tenant=mine, subject=subject, status="done", episodes=4, changes={"facts": ["f1"]}, llm_model="gpt-x"
    )
    page.get_by_role("navigation", name="Tenant sections").get_by_role("link", name="Job runs").click()
    assert page.get_by_role("cell", name="facts 1").is_visible()
    page.get_by_label("Status").select_option("done")
    page.get_by_role("button", name="Filter").click()
    _look(page, axe_clean, screenshot, "tenant-jobs")


def test_another_tenants_pages_are_404(page, axe_clean, screenshot, tenants, settings):
    settings.ATLAS_CODE_FILTER = False
    mine, theirs = tenants["mine"], tenants["theirs"]
    person_login(page, "owner@acme.test", PASSWORD)
    for url in (
        f"/tenant/{theirs.slug}/subjects/",
        f"/tenant/{theirs.slug}/subjects/zed/memories/",
        f"/tenant/{mine.slug}/subjects/zed/memories/",
        f"/tenant/{mine.slug}/subjects/alice/memories/{tenants['zed_fact']}/",
        f"/tenant/{theirs.slug}/audit/",
    ):
        response = page.goto(url)
        assert response.status == 404, url
        assert "private" not in page.content()
    axe_clean(page)
    screenshot(page, "tenant-not-found")
