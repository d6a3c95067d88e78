"""The dashboard through Django's test client: who may see and do what, and what each answer says.

The browser tests (test_browser.py) walk the pages as a person does; these pin the edge cases a
browser adds nothing to — tampered ids with the code-level filter off, stale edits, CSRF, a
dependency outage, the download and the token pages.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlencode

import pytest
from django.test import Client

from atlas_site.elastic.client import clients_reset
from memory import selectors
from memory.services import writes
from tenants import tokens
from tenants.models import ApiToken, AuditRecord
from tests.memory.agent_turns import QUESTION, REQUEST, agent_turn_memories, distilled_first, request_served

from .conftest import linked_person

pytestmark = pytest.mark.django_db


@pytest.fixture
def dls_only(settings):
    """Only Elasticsearch's document level security keeps subjects apart (tests/memory/test_isolation.py)."""
    settings.ATLAS_CODE_FILTER = False


@pytest.fixture
def browser_client(client, maya_person):
    client.force_login(maya_person)
    return client


def test_a_visitor_gets_the_landing_page_and_the_dashboard_asks_to_log_in(client) -> None:
    landing = client.get("/")
    assert landing.status_code == 200 and b"Sign in" in landing.content
    for path in ("/memories/", "/memory/x/", "/connect/", "/export.json", "/forget-everything/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path


def test_every_page_carries_the_policy_and_no_inline_script(browser_client, maya_memories) -> None:
    pages = ["/", "/memories/playbooks/", "/memories/episodes/", "/memories/catalog/", "/connect/",
             f"/memory/{maya_memories['second']['id']}/", f"/memory/{maya_memories['third']['id']}/forget/",
             "/forget-everything/", "/memories/?q=where+do+I+live"]  # fmt: skip
    for path in pages:
        response = browser_client.get(path)
        assert response.status_code == 200, path
        policy = response["Content-Security-Policy"]
        assert "script-src 'self';" in policy and "unsafe-inline" not in policy, path
        assert not re.search(rb"<script(?![^>]*\bsrc=)", response.content), path
        html = response.content.decode()
        assert html.count('method="post"') == html.count('name="csrfmiddlewaretoken"'), path


def test_the_facts_tab_lists_current_facts_and_the_filter_shows_replaced_ones(browser_client, maya_memories) -> None:
    page = browser_client.get("/").content.decode()
    assert "Lives in Lisbon, in Alfama" in page and "Prefers window seats" in page
    assert "Lives in Porto" not in page
    page = browser_client.get("/memories/?include_superseded=on").content.decode()
    assert "Lives in Porto" in page and "Lives in Lisbon</a>" in page
    # The name it had before REST's became every interface's: sent on, for one release.
    old = browser_client.get("/memories/?superseded=on&fact_type=identity")
    assert (old.status_code, old["Location"]) == (301, "/memories/?include_superseded=on&fact_type=identity")
    page = browser_client.get("/memories/?fact_type=preference").content.decode()
    assert "Prefers window seats" in page and "Alfama" not in page
    assert browser_client.get("/memories/?since=2030-01-02&until=2030-01-01").status_code == 400
    assert browser_client.get("/memories/?cursor=not-a-cursor").status_code == 400
    assert browser_client.get("/memories/nonsense/").status_code == 404


def test_cursor_pages_hold_every_fact_once(browser_client, maya) -> None:
    texts = {f"fact number {n}" for n in range(30)}
    for text in sorted(texts):
        writes.fact_write(subject=maya, text=text, refresh=False)
    writes.fact_write(subject=maya, text="fact number 30")  # refreshes the index for all
    texts.add("fact number 30")
    seen, query = [], ""
    while True:
        page = browser_client.get("/memories/?" + query).content.decode()
        seen += re.findall(r"fact number \d+", page)
        found = re.search(r'href="\?([^"]*)" rel="next"', page)
        if not found:
            break
        query = found.group(1).replace("&amp;", "&")
    assert sorted(seen) == sorted(texts)


def test_search_runs_recall_and_shows_rank_and_legs(browser_client, maya_memories) -> None:
    page = browser_client.get("/memories/?q=where+does+she+live").content.decode()
    assert "#1" in page and "bm25" in page and "dense" in page  # the legs' names in "Why this result"
    assert "Why this result" in page and "similar meaning" in page and "found by" not in page
    assert "Alfama" in page
    assert browser_client.get("/memories/?q=").status_code == 400


def test_a_persons_own_search_is_not_agent_use(browser_client, maya_memories, settings, monkeypatch) -> None:
    """use_count feeds recall's ranking boost: only what an agent was given counts, never a person's look."""
    from memory import tasks

    scheduled: list = []
    monkeypatch.setattr(tasks.memories_usage_record_task, "delay", lambda targets: scheduled.append(targets))
    settings.ATLAS_USAGE_RECORDING = "celery"
    assert browser_client.get("/memories/?q=where+does+she+live").status_code == 200
    assert "Alfama" in browser_client.get("/?q=where+does+she+live").content.decode()
    assert scheduled == []


def test_search_shows_a_facts_evidence_under_it_and_can_list_it_apart(browser_client, maya_memories) -> None:
    said = maya_memories["said"]  # "I moved to Lisbon last spring", cited by the chain's first version
    page = browser_client.get("/memories/?q=Lisbon+Alfama").content.decode()
    assert "Learnt from 1 thing you said" in page and f'href="/memory/{said["id"]}/"' in page
    apart = browser_client.get("/memories/?q=Lisbon+Alfama&turns_apart=on").content.decode()
    assert "Learnt from" not in apart and f'href="/memory/{said["id"]}/"' in apart


def test_search_ranks_for_the_turn_and_says_why(browser_client, maya) -> None:
    """Issue 26 in the dashboard: a person's question gets the fact first with its evidence, a request the
    playbook and the preference, and "Why this result" names the weight the kind of search gave."""
    memories = agent_turn_memories(maya)

    def searched(text: str) -> tuple[list[dict], str]:
        response = browser_client.get("/memories/?" + urlencode({"q": text}))
        assert response.status_code == 200, response.content.decode()
        page = response.content.decode()
        hits = []  # each hit's block: its own link first, then its evidence's links
        for block in page.split('aria-label="Search results"')[1].split('<p class="memory-text">')[1:]:
            [memory_id] = re.findall(r'^<a href="/memory/([^/"]+)/">', block)
            evidence = re.findall(r'<li><a href="/memory/([^/"]+)/">', block)
            hits.append({"id": memory_id, "evidence": [{"id": e} for e in evidence]})
        return hits, page

    hits, page = searched(QUESTION)
    distilled_first(hits, memories)
    assert "Learnt from 1 thing you said" in page
    hits, page = searched(REQUEST)
    request_served(hits, memories)
    assert "your search reads as a request, and this kind of memory serves one." in page


def test_a_harsh_correction_does_not_claim_the_wrong_versions_source(browser_client, maya) -> None:
    said = writes.episode_write(subject=maya, text="Book window seats for me on the Lisbon train")
    wrong = writes.fact_write(subject=maya, text="Prefers window seats", source_episodes=[said["id"]])
    right = writes.fact_edit(subject=maya, memory_id=wrong["id"], text="Prefers aisle seats", contradiction="harsh")
    assert right["source_episodes"] == []
    page = browser_client.get(f"/memory/{right['id']}/").content.decode()
    assert "Book window seats" not in page and "the version before it was wrong" in page
    changed = writes.fact_edit(subject=maya, memory_id=right["id"], text="Prefers aisle seats, front half")
    assert changed["source_episodes"] == []  # a natural change keeps what its version had: nothing here
    kept = writes.fact_write(subject=maya, text="Takes the train to Lisbon", source_episodes=[said["id"]])
    assert writes.fact_edit(subject=maya, memory_id=kept["id"], text="Takes the 8:15 train to Lisbon")[
        "source_episodes"
    ] == [said["id"]]


def test_one_memory_is_named_in_the_singular_and_every_page_has_an_icon(browser_client, client, maya_memories) -> None:
    fact, playbook = maya_memories["third"], maya_memories["playbook"]
    page = browser_client.get(f"/memory/{fact['id']}/").content.decode()
    assert "<dt>Kind</dt><dd>Fact</dd>" in page and "<title>Fact · Atlas Memory</title>" in page
    assert 'rel="icon" href="/static/atlas/favicon.svg"' in page
    forget = browser_client.get(f"/memory/{playbook['id']}/forget/").content.decode()
    assert "this playbook (" in forget and "this playbooks" not in forget
    icon = client.get("/favicon.ico")
    assert icon.status_code == 301 and icon["Location"] == "/static/atlas/favicon.svg"
    assert client.get(icon["Location"]).status_code == 200


def test_search_honours_the_fact_type_and_the_days(browser_client, maya, maya_memories, settings) -> None:
    settings.ATLAS_RECALL_FLOOR = 0.0  # the filters decide here, not how well "Lisbon" fits each memory
    writes.episode_write(subject=maya, text="Lisbon was rainy all March", at="2025-03-10T23:30:00Z")
    writes.fact_write(subject=maya, text="Visits Lisbon every March", fact_type="preference", at="2025-03-11T00:00:00Z")

    def found(query: str) -> list[str]:
        response = browser_client.get("/memories/?q=Lisbon&" + query)
        assert response.status_code == 200, response.content.decode()
        return re.findall(r'<a href="/memory/[^"]+/">([^<]+)</a>', response.content.decode())

    everything = found("")
    assert {"Lives in Lisbon, in Alfama", "Prefers window seats on trains", "I moved to Lisbon last spring"} <= set(
        everything
    )
    assert sorted(found("fact_type=preference")) == ["Prefers window seats on trains", "Visits Lisbon every March"]
    # Days in UTC, the last one included whole: the 10th's late episode is in, the fact of the 11th is not.
    assert found("since=2025-03-01&until=2025-03-10") == ["Lisbon was rainy all March"]
    assert found("since=2025-03-11&until=2025-03-11&fact_type=preference") == ["Visits Lisbon every March"]
    assert found("since=2025-03-01&until=2025-03-31&fact_type=identity") == []
    page = browser_client.get("/memories/?q=Lisbon&fact_type=preference&since=2025-03-01").content.decode()
    assert 'value="preference" selected' in page and 'value="2025-03-01"' in page  # the filters stay as chosen
    refused = browser_client.get("/memories/?q=Lisbon&fact_type=preference&types=episodic")
    assert refused.status_code == 400
    assert "A fact type searches facts only: tick Facts too, or no kind at all." in refused.content.decode()
    backwards = browser_client.get("/memories/?q=Lisbon&since=2025-03-02&until=2025-03-01")
    assert backwards.status_code == 400 and "The start date is after the end date." in backwards.content.decode()
    assert browser_client.get("/memories/?q=Lisbon&fact_type=gossip").status_code == 400


def test_a_memory_page_shows_provenance_use_and_the_chain_both_ways(browser_client, maya_memories) -> None:
    page = browser_client.get(f"/memory/{maya_memories['second']['id']}/").content.decode()
    assert "I moved to Lisbon last spring" in page  # its source episode, linked
    assert f"/memory/{maya_memories['said']['id']}/" in page
    assert f'href="/memory/{maya_memories["first"]["id"]}/" rel="prev"' in page
    assert f'href="/memory/{maya_memories["third"]["id"]}/" rel="next"' in page
    assert "Used by agents" in page and "never yet" in page
    assert "Correct this fact" not in page  # only the newest version can be edited


def test_a_memory_page_shows_the_dates_its_text_names(browser_client, maya) -> None:
    from memory.services import writes

    said = writes.episode_write(
        subject=maya, text="My sister visits on the 28th, <b>finally</b>", at="2026-03-18T19:30:00+00:00"
    )
    page = browser_client.get(f"/memory/{said['id']}/").content.decode()
    assert "Dates it names" in page
    assert "“the 28th”: 2026-03-28" in page
    assert "<b>finally</b>" not in page  # the text stays escaped


def test_search_puts_a_newer_turn_next_to_the_fact_it_may_change(browser_client, maya) -> None:
    from memory.services import writes

    writes.fact_write(subject=maya, text="Maya lives in Berlin", fact_type="identity", at="2025-01-10T10:00:00+00:00")
    writes.episode_write(subject=maya, text="I moved to Lisbon last month, loving the light here")
    page = browser_client.get("/memories/?q=Where+does+Maya+live%3F").content.decode()
    berlin, lisbon = page.index("Maya lives in Berlin"), page.index("I moved to Lisbon last month")
    note = page.index("Said after the fact above was stored")
    assert berlin < lisbon < note


def test_an_edit_is_a_natural_supersession_and_a_stale_one_is_refused(browser_client, maya, maya_memories) -> None:
    current = maya_memories["third"]["id"]
    etag = writes.memory_etag(selectors.memory_hit(subject=maya, memory_id=current)["_source"])
    response = browser_client.post(f"/memory/{current}/", {"text": "Lives in Lisbon, in Graça", "etag": etag})
    assert response.status_code == 302
    new_id = response["Location"].strip("/").split("/")[-1]
    chain = selectors.memory_chain_get(subject=maya, memory_id=new_id)
    assert [m["text"] for m in chain][-2:] == ["Lives in Lisbon, in Alfama", "Lives in Lisbon, in Graça"]
    assert chain[-2]["superseded_by"] == [new_id] and not chain[-2].get("retracted")
    # The same form sent again (a second tab): the version it read is gone, nothing is written.
    again = browser_client.post(f"/memory/{current}/", {"text": "Lives somewhere else", "etag": etag})
    # HTTP checks the precondition first (412), and the page names the newest version to edit instead.
    assert again.status_code == 412 and "Nothing was saved" in again.content.decode()
    assert f"newest version is {new_id}" in again.content.decode()
    stale = browser_client.post(f"/memory/{new_id}/", {"text": "Lives somewhere else", "etag": etag})
    assert stale.status_code == 412
    assert len(selectors.memory_chain_get(subject=maya, memory_id=new_id)) == 4


def test_an_edit_can_say_the_old_version_was_wrong_a_harsh_supersession(browser_client, maya, maya_memories) -> None:
    current = maya_memories["third"]["id"]
    form = browser_client.get(f"/memory/{current}/").content.decode()
    assert "What happened to the old version?" in form
    assert re.search(r'<input type="radio" name="contradiction" value="natural"[^>]* checked', form)
    assert "It was wrong: the old version was never true" in form
    etag = writes.memory_etag(selectors.memory_hit(subject=maya, memory_id=current)["_source"])
    sent = {"text": "Lives in Lisbon, in Belém", "etag": etag}
    refused = browser_client.post(f"/memory/{current}/", {**sent, "contradiction": "mild"})
    assert refused.status_code == 400 and "Select a valid choice." in refused.content.decode()
    stale = browser_client.post(f"/memory/{current}/", {**sent, "etag": '"stale"', "contradiction": "harsh"})
    assert stale.status_code == 412
    assert len(selectors.memory_chain_get(subject=maya, memory_id=current)) == 3  # neither wrote anything
    response = browser_client.post(f"/memory/{current}/", {**sent, "contradiction": "harsh"}, follow=True)
    new_id = response.redirect_chain[-1][0].strip("/").split("/")[-1]
    page = response.content.decode()
    assert "Saved. The earlier version stays in this fact&#x27;s history, marked as wrong." in page
    chain = selectors.memory_chain_get(subject=maya, memory_id=new_id)
    old, new = chain[-2], chain[-1]
    assert (old["id"], old["superseded_by"], old["retracted"]) == (current, [new_id], True)
    assert (new["text"], new["contradiction"], new["confidence"]) == ("Lives in Lisbon, in Belém", "harsh", 0.7)
    # The timeline: natural, natural, then the harsh step; the old version's page says it was wrong.
    assert re.findall(r'<span class="badge (natural|harsh)">', page) == ["natural", "natural", "harsh"]
    assert (
        "This version was replaced because it was wrong (harsh)"
        in browser_client.get(f"/memory/{current}/").content.decode()
    )


def test_another_subjects_or_tenants_memory_is_404_and_untouched(
    dls_only, browser_client, maya_memories, tom, other_tenant_subject
) -> None:
    foreign = [
        writes.fact_write(subject=tom, text="Tom's secret fact"),
        writes.fact_write(subject=other_tenant_subject, text="Other tenant's maya fact"),
        writes.episode_write(subject=tom, text="Tom said something"),
    ]
    for memory in foreign:
        mid = memory["id"]
        for response in (
            browser_client.get(f"/memory/{mid}/"),
            browser_client.get(f"/memory/{mid}/forget/"),
            browser_client.post(f"/memory/{mid}/forget/"),
            browser_client.post(f"/memory/{mid}/", {"text": "hijacked", "etag": '"*"'}),
        ):
            assert response.status_code == 404
            assert b"secret" not in response.content and b"Other tenant" not in response.content
    assert selectors.memory_get(subject=tom, memory_id=foreign[0]["id"])["text"] == "Tom's secret fact"
    assert selectors.memory_chain_get(subject=tom, memory_id=foreign[0]["id"])[0].get("superseded_by") is None
    assert "superseded_by" not in selectors.memory_get(subject=other_tenant_subject, memory_id=foreign[1]["id"])
    assert not AuditRecord.objects.filter(action="memory.forget").exists()
    page = browser_client.get("/memories/?q=secret+fact").content.decode()
    assert "Tom" not in page and "Other tenant" not in page


def test_a_catalog_entry_is_read_only(browser_client, tenant, maya_memories) -> None:
    from memory.services import catalog

    entry = catalog.catalog_entry_write(tenant=tenant, title="Vet hours", text="The vet opens at nine", actor="test")
    page = browser_client.get("/memories/catalog/").content.decode()
    assert "The vet opens at nine" in page
    assert "Forget this memory" not in browser_client.get(f"/memory/{entry['id']}/").content.decode()
    assert browser_client.post(f"/memory/{entry['id']}/forget/").status_code == 404


def test_forms_need_the_csrf_token(maya_person, maya, maya_memories) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(maya_person)
    mid = maya_memories["likes"]["id"]
    assert strict.post(f"/memory/{mid}/forget/").status_code == 403
    assert strict.post("/forget-everything/", {"confirm": "maya"}).status_code == 403
    assert strict.post("/connect/", {"name": "x", "scopes": ["read"]}).status_code == 403
    assert selectors.memory_get(subject=maya, memory_id=mid)["text"] == "Prefers window seats on trains"
    assert not ApiToken.objects.exists()


def test_forget_one_memory_after_a_confirmation(browser_client, maya, maya_memories) -> None:
    mid = maya_memories["likes"]["id"]
    confirm = browser_client.get(f"/memory/{mid}/forget/").content.decode()
    assert "What will be lost" in confirm and "Prefers window seats" in confirm
    forgotten = browser_client.post(f"/memory/{mid}/forget/", follow=True)
    shown = [str(m) for m in forgotten.context["messages"]]
    assert len(shown) == 1 and shown[0].startswith("Forgotten: that memory is deleted, with every copy of its text.")
    assert "Removed — documents deleted: semantic 1; run records: 0; idempotency records: 0;" in shown[0]
    assert browser_client.get(f"/memory/{mid}/").status_code == 404
    assert AuditRecord.objects.filter(action="memory.forget", actor="person:maya@example.org").count() == 1


def test_forget_everything_needs_the_typed_id_and_leaves_only_the_audit_line(
    browser_client, maya, maya_memories
) -> None:
    page = browser_client.get("/forget-everything/").content.decode()
    assert "7 in all" in page and "2 facts and 2 older versions of them" in page and "2 things you said" in page
    counts = selectors.memory_counts(subject=maya)
    assert counts == {"episodic": 2, "semantic": 2, "replaced": 2, "procedural": 1, "archive": 0, "pending": 0}
    wrong = browser_client.post("/forget-everything/", {"confirm": "yes"})
    assert wrong.status_code == 400 and selectors.memory_counts(subject=maya) == counts
    done = browser_client.post("/forget-everything/", {"confirm": "maya"})
    assert done.status_code == 200 and "7 memories deleted" in done.content.decode()
    assert "Every other copy of their text went too: 0 consolidation records, 0 stored agent answers" in (
        done.content.decode()
    )
    assert selectors.memory_counts(subject=maya) == {
        "episodic": 0, "semantic": 0, "replaced": 0, "procedural": 0, "archive": 0, "pending": 0
    }  # fmt: skip
    record = AuditRecord.objects.get(action="memory.forget_subject")
    assert record.actor == "person:maya@example.org" and "Lisbon" not in json.dumps(record.detail)


def test_the_download_holds_every_index_the_archive_included(browser_client, maya, tom, maya_memories) -> None:
    from memory.services.archive import superseded_facts_archive

    writes.fact_write(subject=tom, text="Tom's own fact")
    assert superseded_facts_archive(tenant=maya.tenant) == 2
    response = browser_client.get("/export.json")
    assert response.status_code == 200 and response["Content-Disposition"].startswith("attachment;")
    document = json.loads(b"".join(response.streaming_content))
    texts = {t: sorted(m["text"] for m in ms) for t, ms in document["memories"].items()}
    assert texts == {
        "episodic": ["I moved to Lisbon last spring", "My cat Miso hates the vet"],
        "semantic": ["Lives in Lisbon, in Alfama", "Prefers window seats on trains"],
        "procedural": ["vet visit"],
        "archive": ["Lives in Lisbon", "Lives in Porto"],
    }
    # The chain still reads both ways across the hot index and the archive.
    page = browser_client.get(f"/memory/{maya_memories['second']['id']}/").content.decode()
    assert "archived" in page and 'rel="next"' in page and 'rel="prev"' in page


def test_tokens_are_shown_once_with_client_configs_and_revoked_by_their_owner_only(browser_client, maya, tom) -> None:
    posted = browser_client.post("/connect/", {"name": "laptop", "scopes": ["read", "write"]})
    assert posted.status_code == 302 and posted["Location"] == "/connect/"  # post/redirect/get
    waiting = repr(dict(browser_client.session))  # the secret waits for the redirect, encrypted
    created = browser_client.get("/connect/")
    assert ApiToken.objects.filter(subject=maya, name="laptop").count() == 1
    page = created.content.decode()
    secret = re.search(r"atlas_[a-z0-9]{12}_[A-Za-z0-9_-]{43}", page).group(0)
    assert page.count(secret) == 4  # the token, and in each of the three client configurations
    assert secret not in waiting and secret.split("_", 2)[2] not in waiting  # the secret part may hold "_"
    assert "mcp-remote" in page and created["Cache-Control"].startswith("max-age=0")
    assert tokens.token_authenticate(presented=secret).subject == maya
    assert secret not in browser_client.get("/connect/").content.decode()
    assert browser_client.post("/connect/", {"name": "", "scopes": []}).status_code == 400
    toms = tokens.token_create(tenant=tom.tenant, subject=tom, name="tom's", scopes="read", actor="test")
    assert browser_client.post(f"/connect/{toms.token.prefix}/revoke/").status_code == 404
    assert ApiToken.objects.get(pk=toms.token.pk).revoked_at is None
    prefix = secret.split("_")[1]
    listed = browser_client.get("/connect/").content.decode()
    assert f'action="/connect/{prefix}/revoke/"' in listed and f"Revoke laptop (atlas_{prefix})" in listed
    assert "Kind</th>" not in listed and "tom&#x27;s" not in listed  # only her own tokens, no kind column
    assert browser_client.post(f"/connect/{prefix}/revoke/").status_code == 302
    assert ApiToken.objects.get(prefix=prefix).revoked_at is not None


def test_a_person_with_two_profiles_picks_one_and_cannot_pick_someone_elses(
    client, maya, other_tenant_subject, tom
) -> None:
    person = linked_person("multi@example.org", maya, other_tenant_subject)
    client.force_login(person)
    assert client.get("/")["Location"] == "/profiles/"
    assert client.post("/profiles/", {"subject": tom.pk}).status_code == 404
    assert client.post("/profiles/", {"subject": other_tenant_subject.pk}).status_code == 302
    writes.fact_write(subject=other_tenant_subject, text="Fact in the other tenant")
    page = client.get("/").content.decode()
    assert "Fact in the other tenant" in page and "switch" in page
    # Unlinked meanwhile: the session's choice is dropped on the next request.
    type(other_tenant_subject).objects.filter(pk=other_tenant_subject.pk).update(person=None)
    assert "Fact in the other tenant" not in client.get("/").content.decode()


def test_a_person_without_a_profile_is_told_so(client) -> None:
    client.force_login(linked_person("nobody@example.org"))
    page = client.get("/")
    assert page.status_code == 200 and "No memory profile is linked" in page.content.decode()


def test_an_elasticsearch_outage_is_a_503_page_saying_what_failed(browser_client, maya, settings) -> None:
    original = settings.ATLAS_ES_URL
    settings.ATLAS_ES_URL = "http://127.0.0.1:9"  # nothing listens there
    settings.ATLAS_ES_REQUEST_TIMEOUT = 2
    clients_reset()
    try:
        for path in ("/", "/memories/?q=anything", "/export.json", "/forget-everything/"):
            response = browser_client.get(path)
            assert response.status_code == 503, path
            assert "Elasticsearch is unreachable" in response.content.decode()
            assert "Traceback" not in response.content.decode()
    finally:
        settings.ATLAS_ES_URL = original
        clients_reset()


def test_the_api_docs_and_admin_work_under_the_policy(client, admin_user_person) -> None:
    docs = client.get("/api/v1/docs/")
    assert docs.status_code == 200 and "'unsafe-inline'" in docs["Content-Security-Policy"]
    assert not re.search(rb"<script(?![^>]*\bsrc=)", docs.content)
    script = client.get("/api/v1/docs/?script=")
    assert script.status_code == 200 and b"SwaggerUIBundle" in script.content
    redoc = client.get("/api/v1/redoc/")
    assert redoc.status_code == 200 and b"googleapis" not in redoc.content and b"<redoc" in redoc.content
    assert not re.search(rb"<script(?![^>]*\bsrc=)", redoc.content)
    client.force_login(admin_user_person)
    admin = client.get("/admin/")
    assert admin.status_code == 200 and "frame-ancestors 'none'" in admin["Content-Security-Policy"]
    assert not re.search(rb"<script(?![^>]*\bsrc=)(?![^>]*application/json)", admin.content)


@pytest.fixture
def admin_user_person(db):
    from tenants.models import Person

    return Person.objects.create_superuser("ops@example.org", "a long enough password 1")


def test_the_documented_download_holds_every_version_and_reads_back(browser_client, maya, tom, maya_memories) -> None:
    """``/export.jsonl`` is the export format (docs/export-format.md): the person's memories only, every
    version of the chain, and another tenant imports it with the chain intact."""
    from memory.portable.lines import memories_import
    from memory.selectors import memory_chain_get
    from tenants.selectors import subject_get
    from tenants.services import tenant_create

    writes.fact_write(subject=tom, text="Tom's own fact")
    response = browser_client.get("/export.jsonl")
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"].startswith('attachment; filename="atlas-memories-maya-')
    lines = b"".join(response.streaming_content).decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert records[0]["format"] == "atlas-memory-export" and records[0]["subject"] == "maya"
    assert sorted(r["text"] for r in records[1:] if r["type"] == "semantic") == [
        "Lives in Lisbon",
        "Lives in Lisbon, in Alfama",
        "Lives in Porto",
        "Prefers window seats on trains",
    ]
    elsewhere = tenant_create(slug="elsewhere", name="elsewhere", actor="test")
    report = memories_import(tenant=elsewhere, lines=lines, create_subjects=True, actor="test")
    assert report.errors == [] and sum(report.written.values()) == len(records) - 1
    moved = subject_get(tenant=elsewhere, external_id="maya")
    third = maya_memories["third"]["id"]
    head = next(r for r in records[1:] if r["id"] == third)
    from memory.services.prepare import memory_id_for

    moved_head = memory_id_for(
        tenant_id=str(elsewhere.es_id), user_id=str(moved.es_id), memory_type="semantic", external_id=head["id"]
    )
    assert [m["text"] for m in memory_chain_get(subject=moved, memory_id=moved_head)] == [
        m["text"] for m in memory_chain_get(subject=maya, memory_id=third)
    ]


def test_the_documented_download_is_a_503_page_when_elasticsearch_is_down(browser_client, maya_memories, settings):
    """The first lines are read before the response starts: an outage is a page saying so, not a
    download cut off after its headers."""
    from tests.es_outage import elasticsearch_unreachable

    with elasticsearch_unreachable(settings):
        response = browser_client.get("/export.jsonl")
    assert response.status_code == 503
    assert not response.streaming and "Content-Disposition" not in response
