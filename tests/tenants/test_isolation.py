"""Isolation enforced by Elasticsearch through each owner's API key — with no application filter at all.

These tests query the cluster directly with the keys the services minted, so the
only thing keeping tenants and subjects apart is the key's DLS role.
"""

from __future__ import annotations

import pytest
from elasticsearch import AuthenticationException, AuthorizationException

from tenants import selectors, services
from tenants.models import ApiKeyCredential

from .conftest import visible_ids


def test_subject_key_sees_own_memories_and_tenant_catalog_only(memories, alice, bob, zed) -> None:
    ids = set(memories)
    by_owner = {v: k for k, v in memories.items()}
    assert visible_ids(selectors.subject_es_client(subject=alice), ids) == {by_owner["alice"], by_owner["acme-catalog"]}
    assert visible_ids(selectors.subject_es_client(subject=bob), ids) == {by_owner["bob"], by_owner["acme-catalog"]}
    assert visible_ids(selectors.subject_es_client(subject=zed), ids) == {by_owner["zed"], by_owner["globex-catalog"]}


def test_tenant_key_sees_only_its_tenant(memories, acme, globex) -> None:
    ids = set(memories)
    by_owner = {v: k for k, v in memories.items()}
    assert visible_ids(selectors.tenant_es_client(tenant=acme), ids) == {
        by_owner["alice"],
        by_owner["bob"],
        by_owner["acme-catalog"],
    }
    assert visible_ids(selectors.tenant_es_client(tenant=globex), ids) == {by_owner["zed"], by_owner["globex-catalog"]}


def test_reader_keys_cannot_write(memories, alice, acme) -> None:
    from memory.elastic.indices import alias_name

    for client in (selectors.subject_es_client(subject=alice), selectors.tenant_es_client(tenant=acme)):
        with pytest.raises(AuthorizationException):
            client.index(index=alias_name("semantic"), id="forged", document={"tenant_id": "x", "text": "forged"})


def test_writer_key_cannot_read(writer, memories) -> None:
    from memory.elastic.indices import alias_name

    with pytest.raises(AuthorizationException):
        writer.search(index=alias_name("semantic"))


def test_writer_key_holds_only_what_the_service_writes_with(writer, memories, acme) -> None:
    """index + delete: no read, and none of ``write``'s by-query actions (IndexPrivilege: ``index`` is
    index*/bulk*/update*, ``delete`` is delete*/bulk*; delete_by_query also needs read)."""
    from memory.elastic.indices import alias_name

    index = alias_name("semantic")
    for attempt in (
        lambda: writer.update_by_query(index=index, query={"match_all": {}}),
        lambda: writer.delete_by_query(index=index, query={"match_all": {}}),
        lambda: writer.count(index=index),
    ):
        with pytest.raises(AuthorizationException):
            attempt()
    from atlas_site.elastic import keys as es_keys

    record = selectors.credential_active(kind=ApiKeyCredential.Kind.WRITER, tenant=None, subject=None)
    [writer_key] = [k for k in es_keys.api_keys_managed() if k["id"] == record.es_key_id]
    [group] = writer_key["role_descriptors"]["atlas_writer"]["indices"]
    assert sorted(group["privileges"]) == ["delete", "index"]
    by_owner = {v: k for k, v in memories.items()}
    left = visible_ids(selectors.tenant_es_client(tenant=acme), set(memories))
    assert left == {by_owner["alice"], by_owner["bob"], by_owner["acme-catalog"]}


def test_rotation_invalidates_the_old_key_and_the_new_one_works(memories, alice) -> None:
    old_client = selectors.subject_es_client(subject=alice)
    old = selectors.credential_active(kind=ApiKeyCredential.Kind.SUBJECT, tenant=alice.tenant, subject=alice)
    new = services.credential_rotate(actor="test", subject=alice)
    assert new.es_key_id != old.es_key_id
    with pytest.raises(AuthenticationException):
        old_client.search(index="atlas-*")
    new_client = selectors.subject_es_client(subject=alice)
    assert len(visible_ids(new_client, set(memories))) == 2
    old.refresh_from_db()
    assert old.invalidated_at is not None
    assert list(ApiKeyCredential.objects.filter(subject=alice, invalidated_at__isnull=True)) == [new]


def test_tenant_deactivation_revokes_every_key_of_the_tenant(memories, acme, alice, bob) -> None:
    clients = [
        selectors.tenant_es_client(tenant=acme),
        selectors.subject_es_client(subject=alice),
        selectors.subject_es_client(subject=bob),
    ]
    services.tenant_deactivate(tenant=acme, actor="test")
    for client in clients:
        with pytest.raises(AuthenticationException):
            client.search(index="atlas-*")
    assert not ApiKeyCredential.objects.filter(tenant=acme, invalidated_at__isnull=True).exists()
    acme.refresh_from_db()
    alice.refresh_from_db()
    assert acme.is_active is False and alice.is_active is False
    from atlas_site.errors import NotFound

    with pytest.raises(NotFound):
        selectors.subject_es_client(subject=alice)


def test_subject_deactivation_revokes_only_that_subject(memories, alice, bob) -> None:
    alice_client = selectors.subject_es_client(subject=alice)
    services.subject_deactivate(subject=alice, actor="test")
    with pytest.raises(AuthenticationException):
        alice_client.search(index="atlas-*")
    assert len(visible_ids(selectors.subject_es_client(subject=bob), set(memories))) == 2
