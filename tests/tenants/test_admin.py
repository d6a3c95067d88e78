"""The operators' admin: pages render and actions work for staff; others are refused and change nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tenants.models import ApiKeyCredential, AuditRecord, MemorySubject, Person, Tenant
from tenants.secrets import secret_decrypt


@pytest.fixture
def staff(db) -> Person:
    return Person.objects.create_superuser(email="ops@example.com", password="ops-password-123")


@pytest.fixture
def member(db) -> Person:
    return Person.objects.create_user(email="member@example.com", password="member-password-123")


def secrets_of_every_credential() -> list[str]:
    out = []
    for credential in ApiKeyCredential.objects.all():
        encoded = secret_decrypt(credential.secret_encrypted)
        import base64

        out += [encoded, base64.b64decode(encoded).decode().split(":", 1)[1], credential.secret_encrypted]
    return out


def test_admin_pages_render_without_secrets(client, staff, acme, alice) -> None:
    client.force_login(staff)
    credential = ApiKeyCredential.objects.filter(subject=alice).first()
    pages = [
        reverse("admin:index"),
        reverse("admin:tenants_tenant_changelist"),
        reverse("admin:tenants_tenant_change", args=[acme.pk]),
        reverse("admin:tenants_tenant_add"),
        reverse("admin:tenants_memorysubject_changelist"),
        reverse("admin:tenants_memorysubject_change", args=[alice.pk]),
        reverse("admin:tenants_apikeycredential_changelist"),
        reverse("admin:tenants_apikeycredential_change", args=[credential.pk]),
        reverse("admin:tenants_auditrecord_changelist"),
        reverse("admin:tenants_person_changelist"),
    ]
    forbidden = secrets_of_every_credential()
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        for secret in forbidden:
            assert secret not in html, url
    changelist = client.get(reverse("admin:tenants_apikeycredential_changelist")).content.decode()
    assert credential.es_key_id in changelist
    assert "valid" in changelist


def test_creating_a_tenant_in_the_admin_mints_its_key(client, staff, atlas_es) -> None:
    client.force_login(staff)
    response = client.post(
        reverse("admin:tenants_tenant_add"),
        {
            "slug": "umbrella",
            "name": "Umbrella",
            "review_mode": "consolidation",
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
            "subjects-TOTAL_FORMS": "0",
            "subjects-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302
    tenant = Tenant.objects.get(slug="umbrella")
    assert ApiKeyCredential.objects.filter(tenant=tenant, kind="tenant", invalidated_at__isnull=True).count() == 1
    assert AuditRecord.objects.filter(action="tenant.create", actor="admin:ops@example.com").count() == 1
    # The review mode chosen on the form, set through the audited service.
    assert tenant.review_mode == "consolidation"
    record = AuditRecord.objects.get(action="tenant.review_mode")
    assert (record.actor, record.detail) == ("admin:ops@example.com", {"from": "off", "to": "consolidation"})


def test_rotate_and_deactivate_actions(client, staff, acme, alice) -> None:
    client.force_login(staff)
    old = ApiKeyCredential.objects.get(subject=alice)
    response = client.post(
        reverse("admin:tenants_memorysubject_changelist"),
        {"action": "rotate_key", "_selected_action": [alice.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert "Rotated 1 of 1." in response.content.decode()
    old.refresh_from_db()
    assert old.invalidated_at is not None
    assert ApiKeyCredential.objects.filter(subject=alice, invalidated_at__isnull=True).count() == 1
    client.post(reverse("admin:tenants_tenant_changelist"), {"action": "deactivate", "_selected_action": [acme.pk]})
    acme.refresh_from_db()
    assert acme.is_active is False
    assert not ApiKeyCredential.objects.filter(tenant=acme, invalidated_at__isnull=True).exists()


def test_action_errors_are_messages_not_500s(client, staff, acme, alice) -> None:
    client.force_login(staff)
    client.post(reverse("admin:tenants_tenant_changelist"), {"action": "deactivate", "_selected_action": [acme.pk]})
    response = client.post(
        reverse("admin:tenants_memorysubject_changelist"),
        {"action": "rotate_key", "_selected_action": [alice.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert "is deactivated; its keys cannot be rotated" in response.content.decode()


def test_non_staff_is_refused_and_nothing_changes(client, member, acme, alice) -> None:
    client.force_login(member)
    response = client.get(reverse("admin:tenants_tenant_changelist"))
    assert response.status_code == 302
    assert response.url.startswith(reverse("admin:login"))
    before = list(ApiKeyCredential.objects.values_list("es_key_id", "invalidated_at"))
    response = client.post(
        reverse("admin:tenants_memorysubject_changelist"), {"action": "rotate_key", "_selected_action": [alice.pk]}
    )
    assert response.status_code == 302
    assert list(ApiKeyCredential.objects.values_list("es_key_id", "invalidated_at")) == before
    client.post(reverse("admin:tenants_tenant_changelist"), {"action": "deactivate", "_selected_action": [acme.pk]})
    acme.refresh_from_db()
    assert acme.is_active is True


def test_anonymous_admin_login_goes_through_allauth(client, db) -> None:
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302
    login = client.get(response.url, follow=True)
    assert login.status_code == 200
    assert login.redirect_chain[-1][0].startswith(reverse("account_login"))


def test_memberships_and_subjects_show_on_the_tenant_page(client, staff, acme, alice) -> None:
    client.force_login(staff)
    html = client.get(reverse("admin:tenants_tenant_change", args=[acme.pk])).content.decode()
    assert "alice" in html
    assert MemorySubject.objects.filter(tenant=acme).count() == 1


def test_budgets_are_set_in_the_admin_and_the_ledger_is_read_only(client, staff, acme) -> None:
    from tenants.models import UsageDay
    from tenants.usage import usage_recall_record, usage_today

    client.force_login(staff)
    form = {
        "name": "Acme",
        "review_mode": "off",
        "llm_token_budget": "750000",
        "daily_write_quota": "1000",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "subjects-TOTAL_FORMS": "0",
        "subjects-INITIAL_FORMS": "0",
    }
    response = client.post(reverse("admin:tenants_tenant_change", args=[acme.pk]), form)
    assert response.status_code == 302
    acme.refresh_from_db()
    assert (acme.llm_token_budget, acme.daily_write_quota) == (750000, 1000)
    record = AuditRecord.objects.get(action="tenant.budgets")
    assert (record.actor, record.detail) == (
        "admin:ops@example.com",
        {"llm_token_budget": 750000, "daily_write_quota": 1000},
    )
    usage_recall_record(tenant_id=acme.pk)
    row = UsageDay.objects.get(tenant=acme, day=usage_today())
    listing = client.get(reverse("admin:tenants_usageday_changelist"))
    assert listing.status_code == 200 and list(listing.context["cl"].result_list) == [row]
    assert client.get(reverse("admin:tenants_usageday_add")).status_code == 403
    assert client.post(reverse("admin:tenants_usageday_delete", args=[row.pk]), {"post": "yes"}).status_code == 403
    assert UsageDay.objects.get(pk=row.pk).recalls == 1
