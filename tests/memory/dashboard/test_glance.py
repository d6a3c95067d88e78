"""My memory at a glance and a fact's version graph, through Django's test client: what the pictures
link to, that a forget shows only that it happened, that hostile text stays text, and that another
subject's memories never appear — with the code-level filter off, so only the subject's own
Elasticsearch key (document level security) keeps them out. The browser walk is test_pictures_browser.py."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.services import forget, writes
from tenants import services
from tenants.models import AuditRecord

pytestmark = pytest.mark.django_db

HOSTILE = 'I said <script>alert("x")</script> & ]]> to the bot'
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def maya_client(client, maya_person, settings):
    settings.ATLAS_CODE_FILTER = False  # the subject's key alone keeps others out
    client.force_login(maya_person)
    return client


def _picture(html: str, css: str) -> ET.Element:
    return ET.fromstring(re.search(rf'<svg class="{css}".*?</svg>', html, re.S).group(0))  # noqa: S314 — our own markup


def _links(svg: ET.Element) -> dict[str, str]:
    return {a.get("href"): a.get("aria-label") for a in svg.iter(f"{SVG}a")}


def test_the_glance_links_each_conversation_fact_playbook_and_correction_and_says_when_one_was_forgotten(
    maya_client, maya, tom, maya_memories
) -> None:
    m = maya_memories
    forget.memory_forget(subject=maya, memory_id=m["likes"]["id"], actor="test")
    writes.fact_write(subject=tom, text="Tom keeps bees", fact_type="identity")
    response = maya_client.get("/glance/")
    assert response.status_code == 200
    html = response.content.decode()
    svg = _picture(html, "glance glance-wide")
    assert svg.get("role") == "group" and svg.get("aria-labelledby") == "glance-wide-title glance-wide-desc"
    assert _links(_picture(html, "glance glance-narrow")) == _links(svg)  # the phone's layout: the same marks
    links = _links(svg)
    today = timezone.now().date().isoformat()
    assert links == {
        "/memories/episodes/?session=chat-1": f"conversation chat-1: 2 turns, last on {today}",
        f"/memory/{m['first']['id']}/": f"Fact: Lives in Porto (stored {today})",
        f"/memory/{m['second']['id']}/": f"Correction: Lives in Lisbon (stored {today})",
        f"/memory/{m['third']['id']}/": f"Correction: Lives in Lisbon, in Alfama (stored {today})",
        f"/memory/{m['playbook']['id']}/": "Playbook: vet visit",
    }
    forgets = [g.get("aria-label") for g in svg.iter(f"{SVG}g") if (g.get("aria-label") or "").startswith("Forgotten")]
    assert len(forgets) == 1 and re.fullmatch(rf"Forgotten: a fact, on {today} \d\d:\d\d UTC", forgets[0])
    assert re.search(rf"<li>a fact · {today} \d\d:\d\d UTC</li>", html)  # the list says it too
    assert "window seats" not in html and m["likes"]["id"] not in html  # the forget shows neither text nor id
    assert "bees" not in html  # another subject's fact, same tenant
    # Each version carries the turn it was learnt from ("I moved to Lisbon"): a line to the conversation each.
    assert len(svg.findall(f".//{SVG}path[@class='edge-source']")) == 3
    assert len(svg.findall(f".//{SVG}path[@class='edge-correction']")) == 2
    assert 'style="' not in html and "<script" not in html
    assert "unsafe-inline" not in response["Content-Security-Policy"]


def test_the_glance_keeps_a_hostile_text_as_text(maya_client, maya) -> None:
    said = writes.episode_write(subject=maya, text=HOSTILE, session_id='s"<1>&')
    writes.fact_write(subject=maya, text=HOSTILE, fact_type="world", source_episodes=[said["id"]])
    html = maya_client.get("/glance/").content.decode()
    assert "<script>" not in html and "]]>" not in html
    svg = _picture(html, "glance glance-wide")  # well-formed: nothing broke out of an attribute or an element
    labels = list(_links(svg).values())
    assert f"Fact: {HOSTILE} (stored {timezone.now().date().isoformat()})" in labels
    assert "/memories/episodes/?session=s%22%3C1%3E%26" in _links(svg)


def test_the_glance_is_bounded_and_says_what_it_left_out(maya_client, maya) -> None:
    for n in range(3):
        writes.episode_write(subject=maya, text=f"turn {n}", session_id=f"chat-{n}")
    from memory import glance

    seen = glance.subject_glance(subject=maya, max_sessions=2)
    assert [s["id"] for s in seen.sessions] == ["chat-2", "chat-1"] and seen.truncated == ["sessions"]
    AuditRecord.objects.filter(action="memory.forget").delete()
    old = AuditRecord.objects.create(
        tenant=maya.tenant, actor="t", action="memory.forget", target=f"{maya}:x", detail={"memory_type": "episodic"}
    )
    AuditRecord.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=91))
    assert glance.subject_forgets(subject=maya, since=timezone.now() - timedelta(days=90)) == []
    # Another subject whose external id starts with maya's and a colon: its forgets are not maya's.
    lookalike = services.subject_create(tenant=maya.tenant, external_id="maya:evil", actor="test")
    fact = writes.fact_write(subject=lookalike, text="not maya's", fact_type="world")
    forget.memory_forget(subject=lookalike, memory_id=fact["id"], actor="test")
    forget.subject_memories_forget(subject=lookalike, actor="test")
    assert [f["what"] for f in glance.subject_forgets(subject=lookalike, since=timezone.now() - timedelta(days=1))] == [
        "everything",
        "semantic",
    ]
    assert glance.subject_forgets(subject=maya, since=timezone.now() - timedelta(days=1)) == []


def test_an_empty_window_says_so(maya_client) -> None:
    html = maya_client.get("/glance/").content.decode()
    assert "Nothing happened in the last 90 days." in html and "<svg" not in html


def test_a_facts_page_draws_its_versions_and_the_turns_each_cites(maya_client, maya, maya_memories) -> None:
    m = maya_memories
    html = maya_client.get(f"/memory/{m['second']['id']}/").content.decode()
    svg = _picture(html, "versions")
    links = _links(svg)
    assert list(links) == [
        f"/memory/{m['said']['id']}/",
        f"/memory/{m['first']['id']}/",
        f"/memory/{m['second']['id']}/",
        f"/memory/{m['third']['id']}/",
    ]
    assert links[f"/memory/{m['said']['id']}/"].endswith(": I moved to Lisbon last spring")
    arrows = [
        t.text for g in svg.iter(f"{SVG}g") if "edge-version" in (g.get("class") or "") for t in g.iter(f"{SVG}text")
    ]
    assert arrows == ["it changed", "it changed"]
    this = [r for r in svg.iter(f"{SVG}rect") if "version-this" in (r.get("class") or "")]
    assert len(this) == 1
    # The cited turn forgotten: drawn without a link, and without its text.
    forget.memory_forget(subject=maya, memory_id=m["said"]["id"], actor="test")
    html = maya_client.get(f"/memory/{m['first']['id']}/").content.decode()
    svg = _picture(html, "versions")
    assert f"/memory/{m['said']['id']}/" not in _links(svg) and "I moved to Lisbon" not in html
    assert "forgotten turn" in html


def test_a_version_marked_wrong_links_its_turns_without_quoting_them(maya_client, maya) -> None:
    said = writes.episode_write(subject=maya, text="Book window seats for me on the Lisbon train")
    wrong = writes.fact_write(subject=maya, text="Prefers window seats", source_episodes=[said["id"]])
    right = writes.fact_edit(subject=maya, memory_id=wrong["id"], text="Prefers aisle seats", contradiction="harsh")
    html = maya_client.get(f"/memory/{right['id']}/").content.decode()
    svg = _picture(html, "versions")
    today = timezone.now().date().isoformat()
    assert _links(svg)[f"/memory/{said['id']}/"] == f"Turn of {today}, cited by the version marked wrong"
    arrows = [
        t.text for g in svg.iter(f"{SVG}g") if "edge-harsh" in (g.get("class") or "") for t in g.iter(f"{SVG}text")
    ]
    assert arrows == ["it was wrong"] and "Book window seats" not in html
