"""Who may link a person to a subject, and tokens that do not outlive the link (issue 24, findings 2 and 3).

Linking a person to a subject hands them the subject's memories in the dashboard (``/``, ``/export.json``,
edit, forget), so in the operators' admin it needs the memory permissions the admin's own memory pages
need (``tenants.view_memory``, ``change_memory``, ``forget_memory``) and goes through the audited link
service. Every other admin path that hands out memories the same way — a tenant membership (the tenant
section), an API token, a person's password, e-mail or permissions — is refused without them too.

A personal token (one a person made in the dashboard for their subject) stops the moment they lose the
subject: relinked, unlinked, deactivated, removed from the tenant or deleted. Each revocation is audited;
and authentication refuses such a token even with the revocation switched off.
"""

from __future__ import annotations

import json
import re

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from atlas_site.errors import NotFound
from memory import selectors
from memory.services import writes
from tenants import services, tokens
from tenants.models import ApiToken, AuditRecord, Membership, MemorySubject, Person
from tests.browser import person_create

PASSWORD = "a long enough password 1"
MEMORY_PERMS = ("view_memory", "change_memory", "forget_memory")
SECRET_SHAPE = re.compile(r"atlas_[a-z0-9]{12}_[A-Za-z0-9_-]{43}")


def staff_with(email: str, *codenames: str) -> Person:
    person = person_create(email, PASSWORD, is_staff=True)
    person.user_permissions.set(
        Permission.objects.filter(content_type__app_label__in=["tenants", "auth", "account"], codename__in=codenames)
    )
    return Person.objects.get(pk=person.pk)  # a fresh instance: no cached permissions


def audits(action: str, **filters) -> list[AuditRecord]:
    return list(AuditRecord.objects.filter(action=action, **filters).order_by("id"))


@pytest.fixture
def alice_fact(writer, alice) -> dict:
    return writes.fact_write(subject=alice, text="Alice keeps her passport in the blue drawer", fact_type="identity")


def subject_form(subject: MemorySubject, **fields) -> dict:
    return {"display_name": subject.display_name, **fields}


def dashboard_shows(client, text: str) -> bool:
    """Whether the logged-in person's dashboard (``/``) or their download (``/export.json``) holds ``text``."""
    page = client.get("/", follow=True).content.decode()
    export = client.get("/export.json")
    body = b"".join(export.streaming_content).decode() if export.streaming else export.content.decode()
    return text in page or text in body


# ------------------------------------------------------------------------- finding 2: the admin's person field
def test_staff_without_the_memory_permissions_cannot_link_themselves_to_a_subject(client, acme, alice, alice_fact):
    """The attack as reported: staff who may change subjects but not read memories sets the subject's person
    to themselves, then reads / and /export.json. The person field is not theirs to set: nothing changes."""
    intruder = staff_with("intruder@ops.test", "view_memorysubject", "change_memorysubject")
    client.force_login(intruder)
    change_url = reverse("admin:tenants_memorysubject_change", args=[alice.pk])
    response = client.post(change_url, subject_form(alice, person=intruder.pk, display_name="renamed"))
    assert response.status_code == 302  # the rest of the form still saves
    assert not dashboard_shows(client, "blue drawer")
    alice.refresh_from_db()
    assert alice.person_id is None and alice.display_name == "renamed"
    assert not audits("subject.link")
    assert 'name="person"' not in client.get(change_url).content.decode()  # shown, not editable

    # The tenant page's subject rows are not a side door.
    tenant_url = reverse("admin:tenants_tenant_change", args=[acme.pk])
    inline = client.get(tenant_url)
    assert inline.status_code in (200, 403)
    assert 'name="subjects-0-person"' not in inline.content.decode()

    # Neither is creating a subject with a person already linked.
    intruder.user_permissions.add(Permission.objects.get(codename="add_memorysubject"))
    intruder = Person.objects.get(pk=intruder.pk)
    client.force_login(intruder)
    assert 'name="person"' not in client.get(reverse("admin:tenants_memorysubject_add")).content.decode()
    client.post(
        reverse("admin:tenants_memorysubject_add"),
        {"tenant": acme.pk, "external_id": "carol", "display_name": "", "person": intruder.pk},
    )
    assert not MemorySubject.objects.filter(person=intruder).exists()
    assert not dashboard_shows(client, "blue drawer")


@pytest.mark.parametrize("missing", MEMORY_PERMS)
def test_each_memory_permission_is_needed_to_link(client, acme, alice, missing):
    granted = [p for p in MEMORY_PERMS if p != missing]
    operator = staff_with(f"no-{missing.replace('_', '-')}@ops.test", "change_memorysubject", *granted)
    client.force_login(operator)
    client.post(reverse("admin:tenants_memorysubject_change", args=[alice.pk]), subject_form(alice, person=operator.pk))
    assert MemorySubject.objects.get(pk=alice.pk).person_id is None


def test_an_operator_with_the_memory_permissions_links_and_unlinks_through_the_audited_service(
    client, acme, alice, alice_fact
):
    operator = staff_with("operator@ops.test", "change_memorysubject", *MEMORY_PERMS)
    end_user = person_create("alice@acme.test", PASSWORD)
    client.force_login(operator)
    change_url = reverse("admin:tenants_memorysubject_change", args=[alice.pk])
    assert 'name="person"' in client.get(change_url).content.decode()

    assert client.post(change_url, subject_form(alice, person=end_user.pk)).status_code == 302
    assert MemorySubject.objects.get(pk=alice.pk).person == end_user
    [link] = audits("subject.link")
    assert (link.actor, link.target, link.detail) == (
        "admin:operator@ops.test",
        "acme/alice",
        {"email": "alice@acme.test"},
    )

    client.force_login(end_user)
    assert dashboard_shows(client, "blue drawer")
    personal = client.post("/connect/", {"name": "laptop", "scopes": ["read", "write"]}, follow=True)
    secret = SECRET_SHAPE.search(personal.content.decode()).group(0)

    client.force_login(operator)
    assert client.post(change_url, subject_form(alice, person="")).status_code == 302
    assert MemorySubject.objects.get(pk=alice.pk).person is None
    [unlink] = audits("subject.unlink")
    assert (unlink.actor, unlink.detail) == ("admin:operator@ops.test", {"email": "alice@acme.test"})
    [revoked] = audits("token.revoke")
    assert revoked.detail["reason"] == "subject.unlink" and revoked.detail["prefix"] == secret.split("_")[1]
    assert len(audits("subject.link")) == 1  # one record per link and per unlink, no more

    # An inactive person is refused as a form error, and nothing is written.
    idle = person_create("idle@acme.test", PASSWORD, is_active=False)
    refused = client.post(change_url, subject_form(alice, person=idle.pk))
    assert refused.status_code == 200 and "active person" in refused.content.decode()
    assert MemorySubject.objects.get(pk=alice.pk).person is None and len(audits("subject.link")) == 1


# ---------------------------------------------------- the same class: other admin paths that hand out memories
def _tenant_form(acme, memberships: list[dict], initial: int = 0) -> dict:
    data = {
        "name": acme.name,
        "review_mode": acme.review_mode,
        "memberships-TOTAL_FORMS": str(len(memberships)),
        "memberships-INITIAL_FORMS": str(initial),
        "subjects-TOTAL_FORMS": "0",
        "subjects-INITIAL_FORMS": "0",
    }
    for i, row in enumerate(memberships):
        data.update({f"memberships-{i}-{k}": v for k, v in row.items()})
    return data


def test_a_tenant_membership_needs_the_memory_permissions_and_is_audited(client, acme, alice, alice_fact):
    """An owner or admin membership opens the tenant section (every subject's memories, tenant tokens, links)."""
    intruder = staff_with("intruder@ops.test", "view_tenant", "change_tenant", *(
        f"{verb}_membership" for verb in ("add", "change", "delete", "view")
    ))  # fmt: skip
    client.force_login(intruder)
    url = reverse("admin:tenants_tenant_change", args=[acme.pk])
    assert 'name="memberships-0-person"' not in client.get(url).content.decode()
    client.post(url, _tenant_form(acme, [{"person": intruder.pk, "role": "owner", "tenant": acme.pk}]))
    assert not Membership.objects.filter(person=intruder).exists()
    assert client.get(reverse("tenant:subjects", args=["acme"])).status_code == 404

    operator = staff_with("operator@ops.test", "view_tenant", "change_tenant", "add_membership", *MEMORY_PERMS)
    client.force_login(operator)
    assert (
        client.post(url, _tenant_form(acme, [{"person": operator.pk, "role": "admin", "tenant": acme.pk}])).status_code
        == 302
    )
    assert Membership.objects.get(person=operator, tenant=acme).role == "admin"
    [record] = audits("membership.set")
    assert (record.actor, record.target, record.detail) == (
        "admin:operator@ops.test",
        "operator@ops.test",
        {"role": "admin"},
    )


def test_an_api_token_in_the_admin_needs_the_permission_of_each_scope(client, acme, alice):
    """The admin shows a new token's secret to whoever made it: a tenant token reads every subject."""
    intruder = staff_with("intruder@ops.test", "add_apitoken", "view_apitoken")
    client.force_login(intruder)
    add_url = reverse("admin:tenants_apitoken_add")
    assert client.get(add_url).status_code == 403
    form = {"tenant": acme.pk, "subject": "", "name": "mine", "scopes": ["read", "write", "forget"]}
    assert client.post(add_url, form).status_code == 403
    assert not ApiToken.objects.exists()

    reader = staff_with("reader@ops.test", "add_apitoken", "view_apitoken", "view_memory")
    client.force_login(reader)
    refused = client.post(add_url, form)
    assert refused.status_code == 200 and "change_memory" in refused.content.decode()
    assert not ApiToken.objects.exists()
    made = client.post(add_url, {**form, "scopes": ["read"]}, follow=True)
    assert SECRET_SHAPE.search(made.content.decode())
    assert list(ApiToken.objects.values_list("scopes", flat=True)) == [["read"]]


def test_the_people_admin_does_not_hand_out_accounts_or_permissions(client, acme, alice, alice_fact):
    """Staff who may change people cannot make themselves superuser, grant themselves (or a group of
    theirs) the memory permissions, or take over a linked person's login (password, e-mail addresses)."""
    end_user = person_create("alice@acme.test", PASSWORD)
    services.subject_person_link(subject=alice, email=end_user.email, actor="test")
    intruder = staff_with(
        "intruder@ops.test", "view_person", "change_person", "view_group", "change_group", "add_group",
        "view_emailaddress", "change_emailaddress", "add_emailaddress", "add_person",
    )  # fmt: skip
    group = Group.objects.create(name="ops")
    intruder.groups.add(group)
    client.force_login(intruder)
    memory_perms = list(Permission.objects.filter(codename__in=MEMORY_PERMS).values_list("pk", flat=True))

    assert client.get(reverse("admin:tenants_person_add")).status_code == 200  # people may still be added
    own = reverse("admin:tenants_person_change", args=[intruder.pk])
    page = client.get(own).content.decode()
    assert 'name="is_superuser"' not in page and 'name="user_permissions"' not in page
    client.post(own, {
        "email": intruder.email, "full_name": "", "is_active": "on", "is_staff": "on", "is_superuser": "on",
        "user_permissions": memory_perms, "groups": [group.pk], "last_login_0": "", "last_login_1": "",
        "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
    })  # fmt: skip
    intruder = Person.objects.get(pk=intruder.pk)
    assert not intruder.is_superuser and not any(intruder.has_perm(f"tenants.{p}") for p in MEMORY_PERMS)

    assert (
        client.post(
            reverse("admin:auth_group_change", args=[group.pk]), {"name": "ops", "permissions": memory_perms}
        ).status_code
        == 403
    )
    assert not group.permissions.exists()

    victim = reverse("admin:tenants_person_change", args=[end_user.pk])
    assert 'name="email"' not in client.get(victim).content.decode()
    password_url = reverse("admin:auth_user_password_change", args=[end_user.pk])
    assert (
        client.post(password_url, {"password1": "taken over 12345", "password2": "taken over 12345"}).status_code == 403
    )
    assert Person.objects.get(pk=end_user.pk).check_password(PASSWORD)
    address_add = reverse("admin:account_emailaddress_add")
    assert (
        client.post(address_add, {"user": end_user.pk, "email": "mine@ops.test", "verified": "on"}).status_code == 403
    )
    assert not EmailAddress.objects.filter(email="mine@ops.test").exists()


# ----------------------------------------------------------------- finding 3: tokens that outlive their link
@pytest.fixture
def estate(writer, acme, alice, bob, alice_fact):
    """Acme's owner; Alice (an end user, a member, linked to the subject alice) with a personal token made in
    the dashboard; and Mallory, who will be linked in her place."""
    owner = person_create("owner@acme.test", PASSWORD)
    services.membership_add(tenant=acme, email=owner.email, role="owner", actor="test")
    end_user = person_create("alice@acme.test", PASSWORD)
    services.membership_add(tenant=acme, email=end_user.email, role="member", actor="test")
    services.subject_person_link(subject=alice, email=end_user.email, actor="test")
    person_create("mallory@acme.test", PASSWORD)
    from django.test import Client

    dashboard = Client()
    dashboard.force_login(end_user)
    made = dashboard.post("/connect/", {"name": "laptop", "scopes": ["read", "write", "forget"]}, follow=True)
    secret = SECRET_SHAPE.search(made.content.decode()).group(0)
    return {"owner": owner, "end_user": end_user, "secret": secret, "prefix": secret.split("_")[1]}


def api(client, secret: str, method: str, path: str, body: dict | None = None):
    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    if body is not None:
        kwargs.update(data=json.dumps(body), content_type="application/json")
    return getattr(client, method)(f"/api/v1/{path}", **kwargs)


def assert_token_refused(client, secret: str, subject: MemorySubject) -> None:
    """The old token neither reads nor writes nor forgets, and nothing was written."""
    before = selectors.memory_counts(subject=subject)
    assert api(client, secret, "get", f"subjects/{subject.external_id}/memories").status_code == 401
    written = api(
        client, secret, "post", f"subjects/{subject.external_id}/episodes", {"text": "still here", "session_id": "s"}
    )
    assert written.status_code == 401
    assert api(client, secret, "get", "me").status_code == 401
    assert selectors.memory_counts(subject=subject) == before


def test_relinking_a_subject_revokes_the_first_persons_tokens_at_once(client, estate, alice):
    """The attack as reported: the tenant owner relinks the subject to another person; the first person's
    personal token stops reading and writing it at once, and the revocation is on the audit trail."""
    secret = estate["secret"]
    assert api(client, secret, "get", "subjects/alice/memories").status_code == 200  # it worked before
    client.force_login(estate["owner"])
    relinked = client.post(reverse("tenant:subject", args=["acme", "alice"]), {"email": "mallory@acme.test"})
    assert relinked.status_code == 302
    client.logout()
    assert_token_refused(client, secret, alice)
    assert ApiToken.objects.get(prefix=estate["prefix"]).person == estate["end_user"]  # it was a personal token
    [revoked] = audits("token.revoke")
    assert revoked.actor == "tenant-admin:owner@acme.test" and revoked.detail["reason"] == "subject.unlink"
    assert ApiToken.objects.get(prefix=estate["prefix"]).revoked_at is not None
    assert [r.action for r in AuditRecord.objects.filter(target="acme/alice", actor__startswith="tenant-admin").order_by("id")] == [
        "subject.unlink", "subject.link", "token.revoke"
    ]  # fmt: skip


def test_authentication_refuses_a_token_whose_person_lost_the_subject_even_unrevoked(
    client, estate, alice, monkeypatch
):
    """Defence in depth: with the revocation switched off, the token stays unrevoked and is still refused."""
    monkeypatch.setattr(services, "_personal_tokens_revoke", lambda **_kwargs: [])
    services.subject_person_link(subject=alice, email="mallory@acme.test", actor="test")
    assert ApiToken.objects.get(prefix=estate["prefix"]).revoked_at is None
    assert_token_refused(client, estate["secret"], alice)
    # Linked back, the person's token works again: it is refused for being no longer theirs, nothing else.
    services.subject_person_link(subject=alice, email="alice@acme.test", actor="test")
    assert api(client, estate["secret"], "get", "subjects/alice/memories").status_code == 200
    Person.objects.filter(pk=estate["end_user"].pk).update(is_active=False)  # a raw update, no service
    assert_token_refused(client, estate["secret"], alice)


def test_unlinking_in_the_tenant_section_revokes(client, estate, alice):
    client.force_login(estate["owner"])
    assert client.post(reverse("tenant:subject", args=["acme", "alice"]), {"email": ""}).status_code == 302
    client.logout()
    assert_token_refused(client, estate["secret"], alice)
    assert [r.detail["reason"] for r in audits("token.revoke")] == ["subject.unlink"]


def test_deactivating_the_person_in_the_admin_revokes(client, estate, alice):
    operator = staff_with("operator@ops.test", "view_person", "change_person")
    client.force_login(operator)
    end_user = estate["end_user"]
    response = client.post(reverse("admin:tenants_person_change", args=[end_user.pk]), {
        "email": end_user.email, "full_name": "Alice", "last_login_0": "", "last_login_1": "",
        "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
    })  # fmt: skip
    assert response.status_code == 302
    end_user.refresh_from_db()
    assert not end_user.is_active and end_user.full_name == "Alice"
    client.logout()
    assert_token_refused(client, estate["secret"], alice)
    [deactivated] = audits("person.deactivate")
    assert (deactivated.actor, deactivated.target) == ("admin:operator@ops.test", "alice@acme.test")
    assert [r.detail["reason"] for r in audits("token.revoke")] == ["person.deactivate"]
    client.force_login(end_user)
    assert not dashboard_shows(client, "blue drawer")  # and her session is over


def test_removing_the_person_from_the_tenant_in_the_admin_unlinks_and_revokes(client, estate, acme, alice):
    """Deleting the membership on the tenant page is the service's removal: unlinked, revoked, audited.
    The tenant's service tokens the person issued stay (they are the tenant's); the record lists them."""
    service_token = tokens.token_create(tenant=acme, name="agent", scopes="read", actor="tenant-admin:alice@acme.test")
    operator = staff_with(
        "operator@ops.test", "view_tenant", "change_tenant", "change_membership", "delete_membership", *MEMORY_PERMS
    )
    client.force_login(operator)
    memberships = list(Membership.objects.filter(tenant=acme).order_by("pk"))
    rows = [
        {"id": m.pk, "person": m.person_id, "role": m.role, "tenant": acme.pk, **({"DELETE": "on"} if m.person == estate["end_user"] else {})}
        for m in memberships
    ]  # fmt: skip
    url = reverse("admin:tenants_tenant_change", args=[acme.pk])
    assert client.post(url, _tenant_form(acme, rows, initial=len(rows))).status_code == 302
    assert not Membership.objects.filter(person=estate["end_user"]).exists()
    assert MemorySubject.objects.get(pk=alice.pk).person is None
    client.logout()
    assert_token_refused(client, estate["secret"], alice)
    [removed] = audits("membership.remove")
    assert removed.detail == {
        "role": "member", "revoked_tokens": [], "service_tokens_kept": [service_token.token.prefix]
    }  # fmt: skip
    assert [r.detail.get("reason") for r in audits("subject.unlink", actor="admin:operator@ops.test")] == [
        "membership.remove"
    ]
    assert [r.detail["reason"] for r in audits("token.revoke")] == ["subject.unlink"]
    assert tokens.token_authenticate(presented=service_token.secret).tenant == acme


def test_removing_a_member_in_the_tenant_section_unlinks_and_revokes(client, estate, acme, alice):
    members_url = reverse("tenant:members", args=["acme"])
    remove_url = reverse("tenant:member_remove", args=["acme"])
    # A plain member cannot remove anyone (the same 404 as a missing tenant), nor can an admin remove an owner.
    client.force_login(estate["end_user"])
    assert client.post(remove_url, {"email": "owner@acme.test"}).status_code == 404
    admin = person_create("admin@acme.test", PASSWORD)
    services.membership_add(tenant=acme, email=admin.email, role="admin", actor="test")
    client.force_login(admin)
    assert client.post(remove_url, {"email": "owner@acme.test"}).status_code == 400
    client.force_login(estate["owner"])
    assert client.post(remove_url, {"email": "owner@acme.test"}).status_code == 400  # the last owner stays
    assert Membership.objects.filter(tenant=acme).count() == 3 and not audits("membership.remove")

    page = client.get(members_url).content.decode()
    assert f'action="{remove_url}"' in page and 'aria-label="Remove alice@acme.test"' in page
    assert client.post(remove_url, {"email": "alice@acme.test"}).status_code == 302
    assert not Membership.objects.filter(tenant=acme, person=estate["end_user"]).exists()
    assert MemorySubject.objects.get(pk=alice.pk).person is None
    client.logout()
    assert_token_refused(client, estate["secret"], alice)
    [removed] = audits("membership.remove")
    assert removed.actor == "tenant-admin:owner@acme.test" and removed.target == "alice@acme.test"
    client.force_login(estate["end_user"])
    assert not dashboard_shows(client, "blue drawer")


def test_deleting_the_person_in_the_admin_unlinks_and_revokes_first(client, estate, alice):
    operator = staff_with("operator@ops.test", "view_person", "delete_person", "delete_emailaddress")
    client.force_login(operator)
    end_user = estate["end_user"]
    response = client.post(reverse("admin:tenants_person_delete", args=[end_user.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert not Person.objects.filter(pk=end_user.pk).exists()
    assert_token_refused(client, estate["secret"], alice)
    assert [r.action for r in AuditRecord.objects.filter(actor="admin:operator@ops.test").order_by("id")] == [
        "subject.unlink", "token.revoke", "membership.remove", "person.delete"
    ]  # fmt: skip


def test_the_bulk_delete_action_on_people_goes_through_the_service_too(client, estate, alice):
    operator = staff_with("operator@ops.test", "view_person", "delete_person", "delete_emailaddress")
    client.force_login(operator)
    end_user = estate["end_user"]
    changelist = reverse("admin:tenants_person_changelist")
    asked = {"action": "delete_selected", "_selected_action": [end_user.pk]}
    assert client.post(changelist, asked).status_code == 200  # the confirmation page
    assert client.post(changelist, {**asked, "post": "yes"}).status_code == 302
    assert not Person.objects.filter(pk=end_user.pk).exists()
    assert_token_refused(client, estate["secret"], alice)
    assert [r.action for r in audits("person.delete")] == ["person.delete"]
    assert [r.detail["reason"] for r in audits("token.revoke")] == ["subject.unlink"]


def test_the_command_line_links_removes_and_deactivates_through_the_same_services(client, estate, acme, alice, bob):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    def cli(*args: str) -> str:
        out = StringIO()
        call_command(*args, stdout=out)
        return out.getvalue()

    assert "linked to mallory@acme.test" in cli(
        "atlas_subject", "link", "--tenant", "acme", "--external-id", "alice", "--person", "mallory@acme.test"
    )
    assert_token_refused(client, estate["secret"], alice)
    assert [(r.action, r.actor) for r in AuditRecord.objects.filter(target="acme/alice", actor__startswith="cli").order_by("id")] == [
        ("subject.unlink", "cli:atlas_subject"), ("subject.link", "cli:atlas_subject"), ("token.revoke", "cli:atlas_subject")
    ]  # fmt: skip
    assert "linked to nobody" in cli("atlas_subject", "link", "--tenant", "acme", "--external-id", "alice")
    person_create("idle@acme.test", PASSWORD, is_active=False)
    with pytest.raises(CommandError, match="must sign up first"):
        cli("atlas_subject", "add", "--tenant", "acme", "--external-id", "carol", "--person", "idle@acme.test")
    assert not MemorySubject.objects.filter(external_id="carol").exists()

    services.subject_person_link(subject=bob, email="alice@acme.test", actor="test")
    bobs = tokens.token_create(tenant=acme, subject=MemorySubject.objects.get(pk=bob.pk), name="b", scopes="read", actor="person:alice@acme.test", person=estate["end_user"]).secret  # fmt: skip
    cli("atlas_member", "remove", "--tenant", "acme", "--email", "alice@acme.test")
    assert MemorySubject.objects.get(pk=bob.pk).person is None
    assert_token_refused(client, bobs, bob)
    assert not Membership.objects.filter(person=estate["end_user"]).exists()

    cli("atlas_person", "deactivate", "--email", "owner@acme.test")
    assert not Person.objects.get(email="owner@acme.test").is_active
    assert audits("person.deactivate")[0].actor == "cli:atlas_person"


@pytest.mark.django_db(transaction=True)
def test_mcp_refuses_the_old_token_after_a_relink(atlas_server, writer, acme, alice, settings):
    """Over /mcp/ with the official client: the personal token lists Alice's memories; after the relink every
    call is a 401 with nothing of hers in it, and a write it attempts leaves nothing behind."""
    import requests
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    from tests.memory.mcp.conftest import call, payload

    settings.ATLAS_USAGE_RECORDING = "off"
    writes.fact_write(subject=alice, text="Alice keeps her passport in the blue drawer", fact_type="identity")
    end_user = person_create("alice@acme.test", PASSWORD)
    person_create("mallory@acme.test", PASSWORD)
    services.subject_person_link(subject=alice, email=end_user.email, actor="test")
    alice.refresh_from_db()
    secret = tokens.token_create(
        tenant=acme, subject=alice, name="laptop", scopes="read,write", actor="person:alice@acme.test", person=end_user
    ).secret
    listed = payload(call(atlas_server.url, secret, "list_memories", {"subject": "alice"}))
    assert "blue drawer" in json.dumps(listed)

    services.subject_person_link(subject=alice, email="mallory@acme.test", actor="test")
    before = selectors.memory_counts(subject=alice)
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION,
    }
    for tool, arguments in (
        ("list_memories", {"subject": "alice"}),
        ("remember", {"subject": "alice", "kind": "fact", "text": "planted by the old token"}),
    ):
        body = {"jsonrpc": "2.0", "id": tool, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        response = requests.post(f"{atlas_server.url}/mcp/", json=body, headers=headers, timeout=60)
        assert response.status_code == 401, tool
        assert "blue drawer" not in response.text
    assert selectors.memory_counts(subject=alice) == before


def test_the_migration_ties_dashboard_tokens_to_their_person_and_revokes_those_already_orphaned(transactional_db):
    """Before 0006 a dashboard token named its person only in ``created_by``: the migration fills ``person``,
    and revokes (audited) the tokens whose person is no longer their subject's — the attack's state."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("tenants", "0005_tenant_episode_retention_days")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    people, subjects, tokens_ = (old.get_model("tenants", m) for m in ("Person", "MemorySubject", "ApiToken"))
    tenant = old.get_model("tenants", "Tenant").objects.create(slug="old", name="Old")
    alice_p, mallory = people.objects.create(email="alice@old.test"), people.objects.create(email="mallory@old.test")
    kept = subjects.objects.create(tenant=tenant, external_id="kept", person=alice_p)
    relinked = subjects.objects.create(tenant=tenant, external_id="relinked", person=mallory)

    def token(subject, created_by: str, prefix: str):
        return tokens_.objects.create(
            kind="subject", tenant=tenant, subject=subject, name=prefix, prefix=prefix, secret_sha256="0" * 64,
            scopes=["read"], created_by=created_by,
        )  # fmt: skip

    token(kept, "person:alice@old.test", "a" * 12)
    token(relinked, "person:alice@old.test", "b" * 12)
    token(relinked, "cli:atlas_token", "c" * 12)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    rows = {t.prefix[0]: t for t in ApiToken.objects.all()}
    assert (rows["a"].person.email, rows["a"].revoked_at) == ("alice@old.test", None)
    assert rows["b"].person.email == "alice@old.test" and rows["b"].revoked_at is not None
    assert (rows["c"].person, rows["c"].revoked_at) == (None, None)  # an operator's subject token: not personal
    [record] = audits("token.revoke")
    assert (record.target, record.detail["prefix"], record.detail["reason"]) == (
        "old/relinked",
        "b" * 12,
        "person.not_linked",
    )


def test_a_personal_token_is_not_issued_for_a_subject_relinked_meanwhile(estate, alice):
    """The dashboard read the subject before a relink committed: issuing re-checks the link under its lock."""
    stale = MemorySubject.objects.get(pk=alice.pk)  # linked to Alice, as the connect page saw it
    services.subject_person_link(subject=alice, email="mallory@acme.test", actor="test")
    before = ApiToken.objects.count()
    with pytest.raises(NotFound):
        tokens.token_create(
            tenant=stale.tenant, subject=stale, name="late", scopes="read", actor="person:alice@acme.test",
            person=estate["end_user"],
        )  # fmt: skip
    assert ApiToken.objects.count() == before and not audits("token.create", detail__name="late")
