"""The dashboard search's Scope facet (docs/scoping.md): agent, app, run and one metadata key narrow the
person's search as ``filters`` narrow recall on every other interface — in Chromium against the live
server, and through the test client for the refusals."""

from __future__ import annotations

import re

import pytest

from memory.services import writes
from tests.browser import person_login
from tests.memory.scoping.table import scoped_memories_write

from .conftest import PASSWORD, linked_person


def _found(client, query: str) -> list[str]:
    response = client.get("/memories/?q=launch+checklist&" + query)
    assert response.status_code == 200, response.content.decode()
    return sorted(re.findall(r'<a href="/memory/[^"]+/">([^<]+)</a>', response.content.decode()))


@pytest.mark.django_db
def test_the_scope_facet_narrows_the_search(client, maya, tom, settings):
    settings.ATLAS_RECALL_FLOOR = 0.0  # the scope decides here, not how well each memory fits
    scoped_memories_write(maya=maya, tom=tom)
    client.force_login(linked_person("maya@example.org", maya))
    assert _found(client, "agent_id=planner") == [
        "Maya asked the planner about the apollo launch checklist",
        "Maya leads the zeus launch checklist",
    ]
    assert _found(client, "app_id=web&run_id=r1") == ["Maya asked the planner about the apollo launch checklist"]
    # A value typed in a form is text: 10 also matches the number 10, true the boolean.
    assert _found(client, "metadata_key=priority&metadata_value=10") == ["Maya leads the zeus launch checklist"]
    assert _found(client, "metadata_key=urgent&metadata_value=true") == [
        "Maya asked the planner about the apollo launch checklist"
    ]
    assert _found(client, "agent_id=nobody") == []
    page = client.get("/memories/?q=launch+checklist&agent_id=planner").content.decode()
    assert 'name="agent_id" value="planner"' in page and '<details class="search-options" open>' in page
    bad_key = client.get("/memories/?q=launch&metadata_key=Bad-Key&metadata_value=1")
    assert bad_key.status_code == 400 and "A metadata key starts with a lower-case letter" in bad_key.content.decode()
    half = client.get("/memories/?q=launch&metadata_key=project")
    assert (
        half.status_code == 400 and "Give a metadata key and the value it equals, or neither." in half.content.decode()
    )


@pytest.mark.django_db(transaction=True)
def test_a_person_narrows_a_search_to_one_agent_in_the_browser(page, axe_clean, screenshot, maya, tom, settings):
    settings.ATLAS_RECALL_FLOOR = 0.0
    scoped_memories_write(maya=maya, tom=tom)
    writes.fact_write(subject=tom, text="Tom's planner checklist", agent_id="planner")
    linked_person("maya@example.org", maya)
    page.goto("/accounts/login/")
    person_login(page, "maya@example.org", PASSWORD)
    search = page.get_by_role("search")
    search.get_by_label("Search your memories").fill("launch checklist")
    search.get_by_text("Search options").click()
    scope = search.get_by_role("group", name="Scope")
    scope.get_by_label("Agent").fill("planner")
    scope.get_by_label("Metadata key").fill("priority")
    scope.get_by_label("equals").fill("9")
    search.get_by_role("button", name="Search").click()
    results = page.get_by_role("list", name="Search results")
    assert results.get_by_role("link").all_inner_texts() == ["Maya asked the planner about the apollo launch checklist"]
    axe_clean(page)
    screenshot(page, "dashboard-search-scope")
