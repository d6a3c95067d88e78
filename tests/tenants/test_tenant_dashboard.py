"""The tenant section: owners and admins manage subjects, catalog, tokens and members and read the audit trail;
they open subjects' memories for support (audited); members and other tenants' admins get 404 and change
nothing — with the code-level filter off, so only each key's DLS and the membership check stand."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memory import selectors
from memory.services import catalog, writes
from tenants import services, tokens
from tenants.models import ApiKeyCredential, ApiToken, AuditRecord, Membership, MemorySubject, Person
from tests.es_outage import elasticsearch_unreachable


def _person(email: str) -> Person:
    return Person.objects.create_user(email=email, password="a long enough password 1")


@pytest.fixture
def estate(writer, acme, globex, alice, zed, settings):
    owner, member, other_admin = _person("owner@acme.test"), _person("member@acme.test"), _person("admin@globex.test")
    services.membership_add(tenant=acme, email=owner.email, role="owner", actor="test")
    services.membership_add(tenant=acme, email=member.email, role="member", actor="test")
    services.membership_add(tenant=globex, email=other_admin.email, role="admin", actor="test")
    fact = writes.fact_write(subject=alice, text="Alice likes green tea")
    zed_fact = writes.fact_write(subject=zed, text="Zed likes black coffee")
    entry = catalog.catalog_entry_write(tenant=globex, actor="test", title="Globex policy", text="Globex only")
    return {
        "owner": owner, "member": member, "other_admin": other_admin, "fact": fact["id"],
        "zed_fact": zed_fact["id"], "globex_entry": entry["id"],
    }  # fmt: skip


def _u(name: str, slug: str, *args) -> str:
    return reverse(f"tenant:{name}", args=[slug, *args])


def test_an_owner_manages_subjects_and_opens_their_memories(client, estate, acme, alice):
    client.force_login(estate["owner"])
    listing = client.get(_u("subjects", "acme"))
    assert listing.status_code == 200
    assert dict(listing.context["rows"])[alice]["semantic"] == 1
    # Counts are of current facts: a correction adds an older version, not a fact (issue 27 point 9).
    writes.fact_edit(subject=alice, memory_id=estate["fact"], text="Alice likes green tea, no sugar")
    row = dict(client.get(_u("subjects", "acme")).context["rows"])[alice]
    assert (row["semantic"], row["replaced"], row["archive"]) == (1, 1, 0)
    assert "<td>1</td><td>1</td>" in client.get(_u("subjects", "acme")).content.decode()
    created = client.post(
        _u("subjects", "acme"), {"external_id": "carol", "display_name": "Carol", "email": "member@acme.test"}
    )
    assert created.status_code == 302
    carol = MemorySubject.objects.get(tenant=acme, external_id="carol")
    assert carol.person.email == "member@acme.test"
    assert ApiKeyCredential.objects.filter(subject=carol, invalidated_at__isnull=True).exists()  # its own key
    duplicate = client.post(_u("subjects", "acme"), {"external_id": "carol"})
    assert duplicate.status_code == 400 and "already has a subject" in duplicate.content.decode()
    unknown_person = client.post(_u("subjects", "acme"), {"external_id": "dave", "email": "nobody@acme.test"})
    assert unknown_person.status_code == 400 and not MemorySubject.objects.filter(external_id="dave").exists()

    assert client.post(_u("subject", "acme", "carol"), {"email": ""}).status_code == 302
    assert MemorySubject.objects.get(pk=carol.pk).person is None
    assert client.get(_u("subject_deactivate", "acme", "carol")).status_code == 200
    assert client.post(_u("subject_deactivate", "acme", "carol")).status_code == 302
    assert not MemorySubject.objects.get(pk=carol.pk).is_active

    memories = client.get(_u("subject_memories", "acme", "alice"))
    assert "Alice likes green tea" in memories.content.decode()
    detail = client.get(_u("subject_memory", "acme", "alice", estate["fact"]))
    assert detail.status_code == 200
    assert client.get(_u("subject_memory_chain", "acme", "alice", estate["fact"])).status_code == 200
    looked = AuditRecord.objects.filter(actor="tenant-admin:owner@acme.test", action__startswith="memory.")
    assert sorted(set(looked.values_list("action", flat=True))) == ["memory.browse", "memory.chain", "memory.view"]
    trail = client.get(_u("audit", "acme"))
    assert trail.status_code == 200 and "subject.deactivate" in trail.content.decode()


def test_an_owner_manages_the_catalog_tokens_and_members(client, estate, acme):
    client.force_login(estate["owner"])
    assert (
        client.post(_u("catalog", "acme"), {"title": "Hours", "text": "Open 9 to 5", "tags": "a, b"}).status_code == 302
    )
    (entry,) = selectors.catalog_list(tenant=acme)["memories"]
    assert (entry["title"], entry["tags"]) == ("Hours", ["a", "b"])
    form = client.get(_u("catalog_entry", "acme", entry["id"]))
    etag = form.context["form"].initial["etag"]
    saved = client.post(
        _u("catalog_entry", "acme", entry["id"]), {"title": "Hours", "text": "Open 8 to 4", "etag": etag}
    )
    assert saved.status_code == 302
    stale = client.post(_u("catalog_entry", "acme", entry["id"]), {"title": "Hours", "text": "Open 7", "etag": etag})
    assert stale.status_code == 412
    assert selectors.catalog_list(tenant=acme)["memories"][0]["text"] == "Open 8 to 4"
    assert client.post(_u("catalog_delete", "acme", entry["id"])).status_code == 302
    assert selectors.catalog_list(tenant=acme)["memories"] == []

    created = client.post(_u("tokens", "acme"), {"name": "support bot", "scopes": ["read"]}, follow=True)
    assert created.redirect_chain == [(_u("tokens", "acme"), 302)]  # post/redirect/get: a reload creates nothing
    secret = re.search(r"atlas_[a-z0-9]{12}_[A-Za-z0-9_-]{43}", created.content.decode()).group(0)
    assert ApiToken.objects.filter(tenant=acme, name="support bot").count() == 1
    assert tokens.token_authenticate(presented=secret).scopes == {"read"}
    assert "no-cache" in created["Cache-Control"] or "no-store" in created["Cache-Control"]
    assert secret not in client.get(_u("tokens", "acme")).content.decode()  # shown once
    token = ApiToken.objects.get(tenant=acme, name="support bot")
    listed = client.get(_u("tokens", "acme")).content.decode()
    assert '<th scope="col">Kind</th>' in listed and "<td>tenant service</td>" in listed
    assert f'action="{_u("token_revoke", "acme", token.prefix)}"' in listed
    assert client.post(_u("token_revoke", "acme", token.prefix)).status_code == 302
    assert not ApiToken.objects.get(pk=token.pk).is_active
    assert f"revoked {token.created_at:%Y}" in client.get(_u("tokens", "acme")).content.decode()

    assert client.post(_u("members", "acme"), {"email": "member@acme.test", "role": "admin"}).status_code == 302
    assert Membership.objects.get(tenant=acme, person__email="member@acme.test").role == "admin"
    last_owner = client.post(_u("members", "acme"), {"email": "owner@acme.test", "role": "member"})
    assert last_owner.status_code == 400 and "at least one owner" in last_owner.content.decode()


def test_an_admin_may_not_make_owners(client, estate, acme):
    services.membership_add(tenant=acme, email="member@acme.test", role="admin", actor="test")
    client.force_login(estate["member"])
    refused = client.post(_u("members", "acme"), {"email": "member@acme.test", "role": "owner"})
    assert refused.status_code == 400
    demote = client.post(_u("members", "acme"), {"email": "owner@acme.test", "role": "member"})
    assert demote.status_code == 400
    roles = dict(Membership.objects.filter(tenant=acme).values_list("person__email", "role"))
    assert roles == {"owner@acme.test": "owner", "member@acme.test": "admin"}


def test_members_and_other_tenants_admins_get_404_and_change_nothing(
    client, estate, acme, globex, alice, zed, settings
):
    settings.ATLAS_CODE_FILTER = False
    before_audit = AuditRecord.objects.count()
    pages_of_acme = [
        ("get", _u("subjects", "acme"), {}),
        ("post", _u("subjects", "acme"), {"external_id": "intruder"}),
        ("get", _u("subject_memories", "acme", "alice"), {}),
        ("get", _u("subject_memory", "acme", "alice", estate["fact"]), {}),
        ("post", _u("subject_deactivate", "acme", "alice"), {}),
        ("post", _u("catalog", "acme"), {"title": "x", "text": "y"}),
        ("post", _u("tokens", "acme"), {"name": "x", "scopes": ["read"]}),
        ("post", _u("members", "acme"), {"email": "admin@globex.test", "role": "owner"}),
        ("get", _u("audit", "acme"), {}),
    ]
    for person in (estate["member"], estate["other_admin"]):
        client.force_login(person)
        for method, url, data in pages_of_acme:
            response = getattr(client, method)(url, data)
            assert response.status_code == 404, (person.email, url)
            assert "green tea" not in response.content.decode()
    # Globex's own admin, naming acme's subject, fact or another tenant's ids inside globex's section.
    client.force_login(estate["other_admin"])
    for url in (
        _u("subject_memories", "globex", "alice"),
        _u("subject_memory", "globex", "zed", estate["fact"]),  # acme's fact through globex's subject
        _u("subject_memory_chain", "globex", "zed", estate["fact"]),
        _u("catalog_entry", "acme", estate["globex_entry"]),
    ):
        response = client.get(url)
        assert response.status_code == 404, url
        assert "green tea" not in response.content.decode()
    acme_token = tokens.token_create(tenant=acme, name="acme svc", scopes="read", actor="test").token
    assert client.post(_u("token_revoke", "globex", acme_token.prefix)).status_code == 404
    assert client.get(_u("subject_memory", "globex", "zed", estate["zed_fact"])).status_code == 200  # its own: fine
    assert ApiToken.objects.get(pk=acme_token.pk).is_active
    assert not MemorySubject.objects.filter(external_id="intruder").exists()
    assert MemorySubject.objects.get(pk=alice.pk).is_active
    assert selectors.catalog_list(tenant=acme)["memories"] == []
    assert Membership.objects.filter(tenant=acme, person__email="admin@globex.test").count() == 0
    new_actions = set(
        AuditRecord.objects.all()[: AuditRecord.objects.count() - before_audit].values_list("action", flat=True)
    )
    assert new_actions <= {"token.create", "memory.view"}  # the test's own token and zed's own page


def test_logged_out_is_sent_to_the_login(client, estate):
    response = client.get(_u("subjects", "acme"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_an_elasticsearch_outage_is_a_503_page_saying_what_failed(client, estate, settings):
    client.force_login(estate["owner"])
    with elasticsearch_unreachable(settings):
        for url in (_u("subjects", "acme"), _u("catalog", "acme"), _u("subject_memories", "acme", "alice")):
            response = client.get(url)
            assert response.status_code == 503, url
            assert "Elasticsearch is unreachable" in response.content.decode()


def test_the_job_runs_page_lists_this_tenants_consolidation_runs_only(client, estate, acme, globex, alice, zed):
    from memory.models import ConsolidationRun

    ConsolidationRun.objects.create(
        tenant=acme, subject=alice, status="done", episodes=7, changes={"facts": ["f1", "f2"]}, llm_model="gpt-x"
    )
    ConsolidationRun.objects.create(tenant=acme, subject=alice, status="skipped", error="skipped: no LLM configured")
    ConsolidationRun.objects.create(tenant=globex, subject=zed, status="failed", error="globex's own failure")
    client.force_login(estate["owner"])

    listing = client.get(_u("jobs", "acme"))
    body = listing.content.decode()
    assert listing.status_code == 200
    assert [run.status for run in listing.context["page"]] == ["skipped", "done"]  # newest first
    assert "facts 2" in body and "skipped: no LLM configured" in body and "globex" not in body
    done = client.get(_u("jobs", "acme"), {"status": "done"})
    assert [run.status for run in done.context["page"]] == ["done"]
    assert client.get(_u("jobs", "acme"), {"status": "exploded"}).status_code == 400
    assert client.get(_u("jobs", "globex")).status_code == 404  # not an admin of globex

    client.force_login(estate["member"])
    assert client.get(_u("jobs", "acme")).status_code == 404
