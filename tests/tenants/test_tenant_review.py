"""The tenant section's part in review: owners set the review mode (audited; members and other tenants'
admins get 404 and change nothing) and see what waits for a subject's review in the support view
(read only, audited)."""

from __future__ import annotations

from memory.services import writes
from tenants.models import AuditRecord, Tenant

from .test_tenant_dashboard import _u, estate  # noqa: F401 — the people and memories of the section tests


def test_an_owner_sets_the_review_mode_and_others_cannot(client, estate, acme) -> None:  # noqa: F811
    client.force_login(estate["member"])
    assert client.post(_u("settings", "acme"), {"review_mode": "agents"}).status_code == 404
    client.force_login(estate["other_admin"])
    assert client.post(_u("settings", "acme"), {"review_mode": "agents"}).status_code == 404
    assert Tenant.objects.get(slug="acme").review_mode == "off"
    client.force_login(estate["owner"])
    page = client.get(_u("settings", "acme"))
    assert page.status_code == 200 and b'<option value="off" selected>' in page.content
    bad = client.post(_u("settings", "acme"), {"review_mode": "always"})
    assert bad.status_code == 400 and b"Select a valid choice." in bad.content
    saved = client.post(_u("settings", "acme"), {"review_mode": "consolidation"})
    assert saved.status_code == 302 and Tenant.objects.get(slug="acme").review_mode == "consolidation"
    record = AuditRecord.objects.get(action="tenant.review_mode")
    assert (record.actor, record.detail) == ("tenant-admin:owner@acme.test", {"from": "off", "to": "consolidation"})


def test_the_support_view_shows_what_waits_beside_what_it_replaces(client, estate, acme, alice) -> None:  # noqa: F811
    mine = writes.fact_write(subject=alice, text="Alice cycles to work", authority="person", written_by="person:a")
    proposal = writes.fact_write(
        subject=alice, text="Alice drives to work", supersedes=[mine["id"]], written_by="token:t"
    )
    client.force_login(estate["owner"])
    subject_page = client.get(_u("subject", "acme", "alice")).content.decode()
    assert "Waiting for their review (1)" in subject_page
    page = client.get(_u("subject_proposals", "acme", "alice"))
    assert page.status_code == 200
    rows = page.context["proposals"]
    assert [(p["id"], [r["id"] for r in p["replaces"]]) for p in rows] == [(proposal["id"], [mine["id"]])]
    html = page.content.decode()
    assert "Alice drives to work" in html and "Alice cycles to work" in html and "(the person's own)" in html
    assert "<button" not in html.split("<h1>")[1]  # read only: the person decides
    record = AuditRecord.objects.get(action="memory.proposals")
    assert (record.actor, record.detail) == ("tenant-admin:owner@acme.test", {"shown": 1})
    client.force_login(estate["member"])
    assert client.get(_u("subject_proposals", "acme", "alice")).status_code == 404
