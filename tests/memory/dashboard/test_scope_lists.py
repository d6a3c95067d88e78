"""The Scope facet on the plain memory list (the person's own) and on the tenant support pages (a tenant admin
looking at a subject's memories): it narrows the list, stays in the page links, refuses what the search
refuses with the search's own words — and never widens what the page shows. Every test runs with the
code-level subject filter switched off: the subject's own Elasticsearch key is the only guard left, and Tom's
memories under the very same agent, app, run and metadata stay out."""

from __future__ import annotations

import re
from html import unescape

import pytest

from memory import on_behalf
from memory.dashboard import views
from memory.services import writes
from tenants import services
from tests.browser import person_create, person_login
from tests.memory.scoping.table import scoped_memories_write

from .conftest import PASSWORD, linked_person

MAYA_PLANNER_FACT = "Maya leads the zeus launch checklist"
MAYA_PLANNER_TURN = "Maya asked the planner about the apollo launch checklist"
TOM_PLANNER_FACT = "Tom's planner fact"
BAD_KEY = "A metadata key starts with a lower-case letter: a-z, 0-9 and _ only."
HALF = "Give a metadata key and the value it equals, or neither."


@pytest.fixture
def scoped(maya, tom, settings) -> dict[str, str]:
    settings.ATLAS_CODE_FILTER = False
    settings.ATLAS_USAGE_RECORDING = "off"
    settings.ATLAS_RECALL_FLOOR = 0.0  # the scope decides what a search shows here, not how well it fits
    ids = scoped_memories_write(maya=maya, tom=tom)
    ids["tom"] = writes.fact_write(subject=tom, text=TOM_PLANNER_FACT, agent_id="planner", app_id="mobile")["id"]
    return ids


def _support_admin(tenant) -> object:
    person = person_create("support@example.org", PASSWORD)
    services.membership_add(tenant=tenant, email=person.email, role="admin", actor="test")
    return person


#: The memories a page lists, as links: the dashboard's list items, the support view's table rows.
DASHBOARD_ITEM = r'<p class="memory-text"><a href="/memory/[^"]+/">([^<]+)</a>'
SUPPORT_ROW = r'<td><a href="[^"]+/memories/[^"]+/">([^<]+)</a></td>'


def _shown(client, path: str, item: str) -> tuple[list[str], str]:
    """The texts ``path`` lists (newest first) and its HTML; the page must be a 200."""
    response = client.get(path)
    page = response.content.decode()
    assert response.status_code == 200, page
    return [unescape(text) for text in re.findall(item, page)], page


# --------------------------------------------------------------------------------- the person's own list
def _listed(client, path: str) -> tuple[list[str], str]:
    return _shown(client, path, DASHBOARD_ITEM)


@pytest.mark.django_db
def test_the_scope_facet_narrows_the_list(client, maya, scoped):
    client.force_login(linked_person("maya@example.org", maya))
    everything, _ = _listed(client, "/memories/facts/")
    assert sorted(everything) == ["Maya keeps her launch checklist in a notebook", MAYA_PLANNER_FACT]
    assert _listed(client, "/memories/facts/?agent_id=planner")[0] == [MAYA_PLANNER_FACT]
    assert _listed(client, "/memories/facts/?app_id=mobile&run_id=r2")[0] == [MAYA_PLANNER_FACT]
    assert _listed(client, "/memories/episodes/?app_id=web")[0] == [MAYA_PLANNER_TURN]
    assert _listed(client, "/memories/playbooks/?agent_id=planner")[0] == []
    # Typed in a form, 10 is text: it also matches the number 10, true the boolean (as the search does).
    assert _listed(client, "/memories/facts/?metadata_key=priority&metadata_value=10")[0] == [MAYA_PLANNER_FACT]
    assert _listed(client, "/memories/episodes/?metadata_key=urgent&metadata_value=true")[0] == [MAYA_PLANNER_TURN]
    shown, page = _listed(client, "/memories/facts/?agent_id=nobody")
    assert shown == [] and 'name="agent_id" value="nobody"' in page  # the filter form keeps what was asked


@pytest.mark.django_db
def test_the_lists_page_links_keep_the_scope(client, maya, scoped, monkeypatch):
    monkeypatch.setattr(views, "PAGE_SIZE", 1)
    second = writes.fact_write(subject=maya, text="Maya plans the hera launch", agent_id="planner")
    client.force_login(linked_person("maya@example.org", maya))
    first_page, page = _listed(client, "/memories/facts/?agent_id=planner")
    assert first_page == [second["text"]]  # newest first
    following = re.search(r'<a href="\?([^"]+)" rel="next">', page).group(1).replace("&amp;", "&")
    assert "agent_id=planner" in following
    next_page, page = _listed(client, f"/memories/facts/?{following}")
    assert next_page == [MAYA_PLANNER_FACT]  # not her unscoped fact, not Tom's planner fact
    assert 'rel="next"' not in page
    back = re.search(r'<a href="\?([^"]+)">First page</a>', page).group(1).replace("&amp;", "&")
    assert "agent_id=planner" in back and "cursor" not in back


#: The person's type tabs: (tab, its link's query string).
TAB_LINK = r'<li><a href="/memories/(\w+)/(?:\?([^"]*))?"'


@pytest.mark.django_db
def test_the_lists_tabs_keep_the_filters_and_drop_the_cursor(client, maya, scoped, monkeypatch):
    monkeypatch.setattr(views, "PAGE_SIZE", 1)
    writes.fact_write(subject=maya, text="Maya plans the hera launch", agent_id="planner", app_id="web")
    client.force_login(linked_person("maya@example.org", maya))
    filtered = "agent_id=planner&since=2000-01-01&authority=agent"
    _, page = _listed(client, f"/memories/facts/?{filtered}")
    following = re.search(r'<a href="\?([^"]+)" rel="next">', page).group(1).replace("&amp;", "&")
    assert "cursor=" in following
    _, page = _listed(client, f"/memories/facts/?{following}")  # the second page: the cursor is in its query
    tabs = {tab: unescape(query or "") for tab, query in re.findall(TAB_LINK, page)}
    assert sorted(tabs) == ["catalog", "episodes", "facts", "playbooks"]
    for tab, query in tabs.items():
        if tab == "catalog":  # no filter form there (no scope either): a carried filter could not be cleared
            assert query == ""
            continue
        assert sorted(query.split("&")) == sorted(filtered.split("&")), (tab, query)
    assert _listed(client, f"/memories/episodes/?{tabs['episodes']}")[0] == [MAYA_PLANNER_TURN]
    # A refused filter is not carried on: the tabs link to the plain lists.
    listed = client.get("/memories/facts/?metadata_key=priority")
    assert listed.status_code == 400
    assert {query for _, query in re.findall(TAB_LINK, listed.content.decode())} == {""}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("metadata_key=Bad-Key&metadata_value=1", BAD_KEY),
        ("metadata_key=priority", HALF),
        ("metadata_value=10", HALF),
        ("agent_id=" + "a" * 129, "Ensure this value has at most 128 characters (it has 129)."),
    ],
)
def test_a_refused_scope_lists_nothing_and_says_why_as_the_search_does(client, maya, scoped, query, message):
    client.force_login(linked_person("maya@example.org", maya))
    listed = client.get(f"/memories/facts/?{query}")
    searched = client.get(f"/memories/?q=launch&{query}")
    assert (listed.status_code, searched.status_code) == (400, 400)
    page = listed.content.decode()
    assert message in page and message in searched.content.decode()
    assert 'href="/memory/' not in page


@pytest.mark.django_db
def test_no_scope_widens_the_list_past_the_subjects_key(client, maya, tom, scoped):
    client.force_login(linked_person("maya@example.org", maya))
    for query in ("agent_id=planner", "app_id=mobile", "metadata_key=project&metadata_value=apollo", ""):
        for tab in ("facts", "episodes", "playbooks"):
            shown, _ = _listed(client, f"/memories/{tab}/?{query}")
            assert TOM_PLANNER_FACT not in shown


# ---------------------------------------------------------------------------------- the support pages
def _support_rows(client, path: str) -> tuple[list[str], str]:
    return _shown(client, path, SUPPORT_ROW)


@pytest.mark.django_db
def test_the_support_pages_narrow_by_scope_and_keep_it_in_their_links(client, maya, tom, scoped, monkeypatch):
    client.force_login(_support_admin(maya.tenant))
    base = f"/tenant/{maya.tenant.slug}/subjects/maya/memories/"
    assert _support_rows(client, f"{base}?types=semantic&agent_id=planner")[0] == [MAYA_PLANNER_FACT]
    assert _support_rows(client, f"{base}?types=episodic&app_id=web&run_id=r1")[0] == [MAYA_PLANNER_TURN]
    assert _support_rows(client, f"{base}?types=semantic&metadata_key=priority&metadata_value=10")[0] == [
        MAYA_PLANNER_FACT
    ]
    # The catalog has no scope: a scoped read leaves it out (docs/scoping.md).
    assert _support_rows(client, f"{base}?types=catalog&agent_id=planner")[0] == []
    # Tom's page with the same scope: his own, never Maya's.
    assert _support_rows(client, f"/tenant/{maya.tenant.slug}/subjects/tom/memories/?agent_id=planner")[0] == [
        TOM_PLANNER_FACT,
        MAYA_PLANNER_FACT,  # Tom's look-alike of Maya's fact (the same text, his own memory)
    ]
    shown, page = _support_rows(client, f"{base}?q=launch+checklist&agent_id=planner")
    assert sorted(shown) == [MAYA_PLANNER_TURN, MAYA_PLANNER_FACT]  # a search recalls every kind
    assert 'name="agent_id" value="planner"' in page  # the form keeps what was asked

    monkeypatch.setattr(on_behalf, "PAGE_SIZE", 1)
    writes.fact_write(subject=maya, text="Maya plans the hera launch", agent_id="planner")
    shown, page = _support_rows(client, f"{base}?types=semantic&agent_id=planner")
    assert shown == ["Maya plans the hera launch"]
    following = re.search(r'<a href="([^"]+)" rel="next">', page).group(1).replace("&amp;", "&")
    assert "agent_id=planner" in following and following.startswith(base)
    shown, page = _support_rows(client, following)
    assert shown == [MAYA_PLANNER_FACT] and 'rel="next"' not in page
    back = re.search(r'<a href="([^"]+)">First page</a>', page).group(1).replace("&amp;", "&")
    assert back == f"{base}?types=semantic&agent_id=planner"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "message"),
    [("metadata_key=Bad-Key&metadata_value=1", BAD_KEY), ("metadata_key=priority", HALF)],
)
def test_the_support_pages_refuse_a_bad_scope_with_the_searchs_words(client, maya, scoped, query, message):
    client.force_login(_support_admin(maya.tenant))
    base = f"/tenant/{maya.tenant.slug}/subjects/maya/memories/"
    for path in (f"{base}?{query}", f"{base}?q=launch&{query}"):
        response = client.get(path)
        page = response.content.decode()
        assert response.status_code == 400 and message in page, page
        assert "/memories/" + scoped["f1"] not in page


@pytest.mark.django_db
def test_no_scope_widens_the_support_page_past_the_subjects_key(client, maya, scoped):
    client.force_login(_support_admin(maya.tenant))
    base = f"/tenant/{maya.tenant.slug}/subjects/maya/memories/"
    for query in ("agent_id=planner", "app_id=mobile", "q=planner+fact&agent_id=planner", ""):
        for types in ("semantic", "episodic", "procedural", "archive"):
            shown, page = _support_rows(client, f"{base}?types={types}&{query}")
            assert TOM_PLANNER_FACT not in shown and scoped["tom"] not in page


# ------------------------------------------------------------------------------------------- browsers
@pytest.mark.django_db(transaction=True)
def test_a_person_narrows_their_list_to_one_agent_in_the_browser(page, axe_clean, screenshot, maya, scoped):
    linked_person("maya@example.org", maya)
    page.goto("/accounts/login/")
    person_login(page, "maya@example.org", PASSWORD)
    page.goto("/memories/facts/")
    filters = page.get_by_role("form", name="Filters")
    scope = filters.get_by_role("group", name="Scope")
    scope.get_by_label("Agent").fill("planner")
    filters.get_by_role("button", name="Filter").click()
    page.wait_for_load_state()
    assert page.locator("ul.memory-list p.memory-text").all_inner_texts() == [MAYA_PLANNER_FACT]
    assert filters.get_by_role("group", name="Scope").get_by_label("Agent").input_value() == "planner"
    axe_clean(page)
    screenshot(page, "dashboard-list-scope")
    scope.get_by_label("Metadata key").fill("Bad-Key")
    scope.get_by_label("equals").fill("1")
    filters.get_by_role("button", name="Filter").click()
    page.wait_for_load_state()
    assert BAD_KEY in page.content()
    assert page.locator("ul.memory-list p.memory-text").count() == 0
    axe_clean(page)


@pytest.mark.django_db(transaction=True)
def test_a_persons_tabs_keep_the_narrowing_in_the_browser(page, maya, scoped):
    linked_person("maya@example.org", maya)
    page.goto("/accounts/login/")
    person_login(page, "maya@example.org", PASSWORD)
    page.goto("/memories/facts/")
    filters = page.get_by_role("form", name="Filters")
    filters.get_by_role("group", name="Scope").get_by_label("App").fill("web")
    filters.get_by_role("button", name="Filter").click()
    page.wait_for_load_state()
    tabs = page.get_by_role("navigation", name="Kinds of memory")
    tabs.get_by_role("link", name="Conversations").click()
    page.wait_for_load_state()
    assert page.locator("ul.memory-list p.memory-text").all_inner_texts() == [MAYA_PLANNER_TURN]
    assert filters.get_by_role("group", name="Scope").get_by_label("App").input_value() == "web"
    tabs.get_by_role("link", name="Facts").click()
    page.wait_for_load_state()
    assert filters.get_by_role("group", name="Scope").get_by_label("App").input_value() == "web"
    assert "app_id=web" in page.url


@pytest.mark.django_db(transaction=True)
def test_a_tenant_admin_narrows_a_subjects_memories_to_one_agent_in_the_browser(
    page, axe_clean, screenshot, maya, scoped
):
    writes.episode_write(subject=maya, text="Maya said hello to nobody in particular")
    _support_admin(maya.tenant)
    page.goto("/accounts/login/")
    person_login(page, "support@example.org", PASSWORD)
    page.goto(f"/tenant/{maya.tenant.slug}/subjects/maya/memories/")
    assert sorted(page.locator("table.memory-table td a").all_inner_texts()) == [
        "Maya keeps her launch checklist in a notebook",
        MAYA_PLANNER_FACT,
    ]
    search = page.get_by_role("search")
    search.get_by_role("group", name="Scope").get_by_label("Agent").fill("planner")
    search.get_by_role("button", name="Search").click()
    page.wait_for_load_state()
    assert page.locator("table.memory-table td a").all_inner_texts() == [MAYA_PLANNER_FACT]
    axe_clean(page)
    screenshot(page, "tenant-subject-memories-scope")
    page.get_by_role("link", name="Episodes").click()  # another tab keeps the scope
    page.wait_for_load_state()
    assert page.locator("table.memory-table td a").all_inner_texts() == [MAYA_PLANNER_TURN]
    axe_clean(page)
