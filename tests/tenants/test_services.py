"""Service rules: validation with no side effect, audit, concurrency, the reconciler."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from atlas_site.elastic import keys as es_keys
from atlas_site.errors import Conflict, IsolationUnavailable, NotFound, ValidationFailed
from tenants import selectors, services
from tenants.models import ApiKeyCredential, AuditRecord, Membership, MemorySubject, Person, Tenant


def cluster_keys() -> set[str]:
    return {k["id"] for k in es_keys.api_keys_managed(active_only=True)}


def snapshot() -> tuple:
    return (
        Tenant.objects.count(),
        MemorySubject.objects.count(),
        ApiKeyCredential.objects.count(),
        Membership.objects.count(),
        frozenset(cluster_keys()),
    )


@pytest.mark.parametrize(
    ("slug", "name", "error", "message"),
    [
        ("", "X", ValidationFailed, "a tenant slug is required"),
        ("Not A Slug", "X", ValidationFailed, "'Not A Slug' is not a valid slug"),
        ("x" * 51, "X", ValidationFailed, "a tenant slug has at most 50 characters"),
        ("okay", "   ", ValidationFailed, "a tenant name is required"),
        ("okay", "n" * 201, ValidationFailed, "a tenant name has at most 200 characters"),
        ("acme", "Duplicate", Conflict, "a tenant with the slug 'acme' already exists"),
    ],
)
def test_tenant_create_refuses_bad_input_and_changes_nothing(acme, slug, name, error, message) -> None:
    before = snapshot()
    with pytest.raises(error) as info:
        services.tenant_create(slug=slug, name=name, actor="test")
    assert info.value.message.startswith(message)
    assert snapshot() == before


def test_tenant_create_mints_a_read_only_dls_key_and_audits(atlas_es, db) -> None:
    tenant = services.tenant_create(slug="initech", name="Initech", actor="cli:test")
    credential = selectors.credential_active(kind=ApiKeyCredential.Kind.TENANT, tenant=tenant)
    assert credential is not None
    info = es_keys.bootstrap_client().security.get_api_key(id=credential.es_key_id)["api_keys"][0]
    group = info["role_descriptors"]["atlas_tenant_reader"]["indices"][0]
    assert group["privileges"] == ["read"]
    assert group["query"] == {"term": {"tenant_id": str(tenant.es_id)}}
    assert info["metadata"] == {"kind": "tenant", "tenant_id": str(tenant.es_id), "managed_by": "atlas-memory"}
    record = AuditRecord.objects.get(action="tenant.create")
    assert (record.actor, record.target, record.tenant) == ("cli:test", "initech", tenant)


@pytest.mark.parametrize(
    ("external_id", "message"),
    [
        ("", "an external id is 1-128 characters"),
        ("-leading-symbol", "an external id is 1-128 characters"),
        ("has space", "an external id is 1-128 characters"),
        ("x" * 129, "an external id is 1-128 characters"),
    ],
)
def test_subject_create_refuses_bad_ids(acme, external_id, message) -> None:
    before = snapshot()
    with pytest.raises(ValidationFailed) as info:
        services.subject_create(tenant=acme, external_id=external_id, actor="test")
    assert info.value.message.startswith(message)
    assert snapshot() == before


def test_subject_ids_are_unique_per_tenant_only(acme, globex, alice) -> None:
    before = snapshot()
    with pytest.raises(Conflict):
        services.subject_create(tenant=acme, external_id="alice", actor="test")
    assert snapshot() == before
    other = services.subject_create(tenant=globex, external_id="alice", actor="test")
    assert other.tenant == globex


def test_subjects_of_a_deactivated_tenant_cannot_be_added(acme) -> None:
    services.tenant_deactivate(tenant=acme, actor="test")
    before = snapshot()
    with pytest.raises(ValidationFailed):
        services.subject_create(tenant=acme, external_id="late", actor="test")
    assert snapshot() == before


def test_another_tenants_subject_is_not_found(acme, globex, zed) -> None:
    with pytest.raises(NotFound) as info:
        selectors.subject_get(tenant=acme, external_id="zed")
    assert info.value.message == "no subject 'zed' in tenant acme"


def test_membership_add_validates_role_and_person(acme) -> None:
    Person.objects.create_user(email="pat@example.com", password="pw-123456789")
    with pytest.raises(ValidationFailed):
        services.membership_add(tenant=acme, email="pat@example.com", role="emperor", actor="test")
    with pytest.raises(NotFound):
        services.membership_add(tenant=acme, email="nobody@example.com", role="member", actor="test")
    assert Membership.objects.count() == 0
    membership = services.membership_add(tenant=acme, email="PAT@example.com", role="admin", actor="test")
    again = services.membership_add(tenant=acme, email="pat@example.com", role="owner", actor="test")
    assert again.pk == membership.pk and again.role == "owner"


@pytest.mark.embedded_only(reason="needs a cluster on a Basic licence: the embedded engine reports one on request")
def test_basic_licence_refuses_multi_tenant_mode(settings, db) -> None:
    """On a licence without DLS the app refuses to create tenants unless app-filter mode is explicit."""
    from atlas_site.elastic.client import clients_reset
    from embedded_es import EmbeddedElasticsearch

    with EmbeddedElasticsearch(license_type="basic") as server:
        settings.ATLAS_ES_URL, settings.ATLAS_ES_PASSWORD = server.url, server.password
        clients_reset()
        try:
            with pytest.raises(IsolationUnavailable) as info:
                services.tenant_create(slug="basic-co", name="Basic", actor="test")
            assert "no document level security" in info.value.message
            assert "ATLAS_ISOLATION_MODE=app-filter" in info.value.message
            assert not Tenant.objects.exists()
            settings.ATLAS_ISOLATION_MODE = "app-filter"
            tenant = services.tenant_create(slug="basic-co", name="Basic", actor="test")
            assert not ApiKeyCredential.objects.filter(tenant=tenant).exists()
        finally:
            clients_reset()


@pytest.mark.django_db(transaction=True)
def test_concurrent_rotations_leave_exactly_one_valid_key(atlas_es) -> None:
    """Rotations of one owner serialise on its row: whatever the interleaving, one key survives."""
    tenant = services.tenant_create(slug="race", name="Race", actor="test")
    subject = services.subject_create(tenant=tenant, external_id="runner", actor="test")
    errors: list[BaseException] = []

    def rotate() -> None:
        try:
            services.credential_rotate(actor="test", subject=subject)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=rotate) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = ApiKeyCredential.objects.filter(subject=subject)
    assert rows.count() == 4
    active = [r.es_key_id for r in rows if r.is_active]
    assert len(active) == 1
    valid = {k for k in [r.es_key_id for r in rows] if es_keys.api_key_is_valid(key_id=k)}
    assert valid == set(active)


def test_reconciler_repairs_half_finished_credential_operations(alice, bob, monkeypatch) -> None:
    monkeypatch.setattr(services, "ORPHAN_GRACE_SECONDS", 0)
    # 1. a key minted but never recorded (crash between mint and insert)
    orphan = es_keys.api_key_mint(name="orphan", role_descriptors=es_keys.writer_role(), metadata={"kind": "writer"})
    # 2. a key recorded as invalidated whose invalidation never reached the cluster
    stale = services._credential_mint(kind="subject", tenant=bob.tenant, subject=bob)
    ApiKeyCredential.objects.filter(pk=stale.pk).update(invalidated_at="2026-01-01T00:00:00Z")
    # 3. an active row whose key the cluster no longer accepts
    alice_cred = selectors.credential_active(kind="subject", tenant=alice.tenant, subject=alice)
    es_keys.api_keys_invalidate(ids=[alice_cred.es_key_id])
    report = services.credentials_reconcile(actor="test")
    # Keys left by earlier tests of the session (their rows were rolled back) are orphans too.
    assert {orphan.id, stale.es_key_id} <= set(report["invalidated_orphans"])
    recorded_active = set(
        ApiKeyCredential.objects.filter(invalidated_at__isnull=True).values_list("es_key_id", flat=True)
    )
    assert recorded_active.isdisjoint(report["invalidated_orphans"])
    assert len(report["replaced"]) == 1
    assert not es_keys.api_key_is_valid(key_id=orphan.id)
    assert not es_keys.api_key_is_valid(key_id=stale.es_key_id)
    replacement = selectors.credential_active(kind="subject", tenant=alice.tenant, subject=alice)
    assert replacement.es_key_id == report["replaced"][0]
    assert es_keys.api_key_is_valid(key_id=replacement.es_key_id)
    assert services.credentials_reconcile(actor="test") == {
        "invalidated_orphans": [],
        "deduplicated": [],
        "replaced": [],
    }


def test_a_writer_key_minted_under_an_older_role_is_replaced_at_bootstrap(atlas_es, db, monkeypatch) -> None:
    """Deployments minted the writer with ``write`` (by-query and reindex actions included); the next
    ensure — what ``atlas_es_bootstrap`` runs — rotates it to the current, narrower role."""
    old_role = {"atlas_writer": {"cluster": [], "indices": [{"names": ["atlas-*"], "privileges": ["write"]}]}}
    monkeypatch.setattr(services, "_role_for", lambda kind, tenant, subject: old_role)
    old = services.credential_rotate(actor="test")
    monkeypatch.undo()
    assert es_keys.api_key_is_valid(key_id=old.es_key_id)
    assert not es_keys.api_key_is_valid(key_id=old.es_key_id, role_descriptors=es_keys.writer_role())
    new = services.shared_credential_ensure(kind="writer", actor="test")
    assert new.es_key_id != old.es_key_id
    assert not es_keys.api_key_is_valid(key_id=old.es_key_id)
    assert es_keys.api_key_is_valid(key_id=new.es_key_id, role_descriptors=es_keys.writer_role())
    assert services.shared_credential_ensure(kind="writer", actor="test").es_key_id == new.es_key_id
