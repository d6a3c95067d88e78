"""The API key endpoints: create, get, invalidate, with Elasticsearch's shapes and rules."""

from __future__ import annotations

import base64
import json

import pytest
from elasticsearch import AuthorizationException, BadRequestError, Elasticsearch

from .conftest import Cluster, mint_key, needs_embedded
from .documents import read_role


def test_create_returns_id_secret_and_encoded_credential(admin: Elasticsearch) -> None:
    """Elasticsearch: docs create-api-keys.asciidoc; ApiKeyService.createApiKey
    (UUIDs.base64UUID() → 20 characters, randomBase64UUIDSecureString() → 22)."""
    created = admin.security.create_api_key(name="shape", expiration="1d", role_descriptors={}).body
    assert set(created) == {"id", "name", "expiration", "api_key", "encoded"}
    assert len(created["id"]) == 20
    assert len(created["api_key"]) == 22
    assert base64.b64decode(created["encoded"]).decode() == f"{created['id']}:{created['api_key']}"
    assert created["name"] == "shape"
    listed = admin.security.get_api_key(id=created["id"])["api_keys"][0]
    assert created["expiration"] - listed["creation"] == 86_400_000


def test_get_by_id_and_name_returns_the_documented_fields(admin: Elasticsearch) -> None:
    """Elasticsearch: docs get-api-keys.asciidoc and core/.../action/apikey/ApiKey.java (innerToXContent)."""
    role = read_role(["docs-*"])
    created = admin.security.create_api_key(name="listed-key", role_descriptors=role, metadata={"team": "a"})
    by_id = admin.security.get_api_key(id=created["id"])["api_keys"]
    assert len(by_id) == 1
    key = by_id[0]
    assert key["id"] == created["id"]
    assert key["name"] == "listed-key"
    assert key["type"] == "rest"
    assert key["invalidated"] is False
    assert key["username"] == "elastic"
    assert key["realm"] == "reserved"
    assert key["metadata"] == {"team": "a"}
    assert key["role_descriptors"] == role
    assert "expiration" not in key
    assert "limited_by" not in key
    by_name = admin.security.get_api_key(name="listed-key")["api_keys"]
    assert [k["id"] for k in by_name] == [created["id"]]
    with_limits = admin.security.get_api_key(id=created["id"], with_limited_by=True)["api_keys"][0]
    assert list(with_limits["limited_by"][0]) == ["superuser"]


def test_get_unknown_id_is_an_empty_list(admin: Elasticsearch) -> None:
    """Elasticsearch: ApiKeyService.getApiKeys answers GetApiKeyResponse.emptyResponse() when nothing matches."""
    assert admin.security.get_api_key(id="does-not-exist-at-all")["api_keys"] == []


def test_invalidate_by_ids_and_by_name(admin: Elasticsearch) -> None:
    """Elasticsearch: docs invalidate-api-keys.asciidoc; InvalidateApiKeyResponse.toXContent."""
    first = admin.security.create_api_key(name="inv-a", role_descriptors={})
    second = admin.security.create_api_key(name="inv-b", role_descriptors={})
    by_ids = admin.security.invalidate_api_key(ids=[first["id"]]).body
    assert by_ids == {"invalidated_api_keys": [first["id"]], "previously_invalidated_api_keys": [], "error_count": 0}
    by_name = admin.security.invalidate_api_key(name="inv-b").body
    assert by_name["invalidated_api_keys"] == [second["id"]]
    listed = admin.security.get_api_key(id=first["id"])["api_keys"][0]
    assert listed["invalidated"] is True
    assert isinstance(listed["invalidation"], int)


def test_invalidating_unknown_or_already_invalidated_keys_changes_nothing(admin: Elasticsearch) -> None:
    """Elasticsearch: ApiKeyService.invalidateApiKeys searches active keys only and answers an
    empty response when none match (emptyResponse, error_count 0)."""
    created = admin.security.create_api_key(name="inv-twice", role_descriptors={})
    admin.security.invalidate_api_key(ids=[created["id"]])
    again = admin.security.invalidate_api_key(ids=[created["id"], "unknown-id"]).body
    assert again == {"invalidated_api_keys": [], "previously_invalidated_api_keys": [], "error_count": 0}


def test_invalidate_without_a_selector_is_a_bad_request(admin: Elasticsearch) -> None:
    """Elasticsearch: ApiKeyService.invalidateApiKeys ("One of [api key id, api key name, username, realm name] must be specified")."""
    with pytest.raises(BadRequestError) as info:
        admin.perform_request("DELETE", "/_security/api_key", headers={"content-type": "application/json"}, body={})
    assert info.value.body["error"]["type"] == "illegal_argument_exception"
    assert (
        info.value.body["error"]["reason"]
        == "One of [api key id, api key name, username, realm name] must be specified"
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"role_descriptors": {}}, "Validation Failed: 1: api key name is required;"),
        (
            {"name": "_hidden"},
            "Validation Failed: 1: api key name may not begin or end with whitespace or begin with an underscore;",
        ),
        ({"name": "x" * 257}, "Validation Failed: 1: api key name may not be more than [256] characters long;"),
    ],
)
def test_create_validates_the_name(admin: Elasticsearch, body: dict, reason: str) -> None:
    """Elasticsearch: CreateApiKeyRequest.validate; docs create-api-keys.asciidoc (``name`` rules)."""
    before = len(admin.security.get_api_key()["api_keys"])
    with pytest.raises(BadRequestError) as info:
        admin.perform_request("POST", "/_security/api_key", headers={"content-type": "application/json"}, body=body)
    assert info.value.body["error"]["type"] == "action_request_validation_exception"
    assert info.value.body["error"]["reason"] == reason
    assert len(admin.security.get_api_key()["api_keys"]) == before


def test_create_rejects_an_unknown_privilege(admin: Elasticsearch) -> None:
    """Elasticsearch: IndexPrivilege.resolve rejects names that are neither privileges nor action patterns."""
    with pytest.raises(BadRequestError) as info:
        admin.security.create_api_key(name="bad-priv", role_descriptors=read_role(["x"], privileges=["reed"]))
    assert info.value.body["error"]["type"] == "illegal_argument_exception"
    assert "unknown index privilege [reed]" in info.value.body["error"]["reason"]


def test_derived_key_must_have_no_privileges(admin: Elasticsearch, cluster: Cluster) -> None:
    """An API key may only create keys with an explicitly empty role descriptor.

    Elasticsearch: security/action/apikey/TransportCreateApiKeyAction.java
    ("creating derived api keys requires an explicit role descriptor that is empty (has no privileges)").
    """
    parent = mint_key(admin, "parent", {"keys": {"cluster": ["manage_own_api_key"], "indices": []}})
    client = cluster.with_key(parent)
    for descriptors in ({}, read_role(["anything"])):
        with pytest.raises(BadRequestError) as info:
            client.security.create_api_key(name="child", role_descriptors=descriptors)
        assert info.value.body["error"]["reason"] == (
            "creating derived api keys requires an explicit role descriptor that is empty (has no privileges)"
        )
    child = client.security.create_api_key(name="child", role_descriptors={"nothing": {}})
    child_client = cluster.with_key(child["encoded"])
    assert child_client.security.authenticate()["api_key"]["name"] == "child"
    with pytest.raises(AuthorizationException):
        child_client.search(index="anything")


def test_manage_own_api_key_sees_only_its_owners_keys(admin: Elasticsearch, cluster: Cluster) -> None:
    """Elasticsearch: ManageOwnApiKeyClusterPrivilege — get/invalidate own keys only;
    RBACEngine.checkSameUserPermissions lets a key look itself up by id."""
    encoded = mint_key(admin, "self-viewer", {"r": {"cluster": [], "indices": []}})
    client = cluster.with_key(encoded)
    key_id = base64.b64decode(encoded).decode().split(":")[0]
    assert [k["id"] for k in client.security.get_api_key(id=key_id)["api_keys"]] == [key_id]
    with pytest.raises(AuthorizationException) as info:
        client.security.get_api_key()
    assert info.value.body["error"]["reason"] == (
        f"action [cluster:admin/xpack/security/api_key/get] is unauthorized for API key id [{key_id}] of user [elastic], "
        "this action is granted by the cluster privileges [read_security,manage_own_api_key,manage_api_key,manage_security,all]"
    )


@needs_embedded
def test_secrets_are_stored_hashed(admin: Elasticsearch, cluster: Cluster) -> None:
    """Only a salted PBKDF2 hash of a key's secret reaches the disk.

    Elasticsearch: docs security-settings (xpack.security.authc.api_key.hashing.algorithm, PBKDF2 family).
    """
    created = admin.security.create_api_key(name="hashed", role_descriptors={})
    stored = (cluster.server.data_dir / "security" / "api_keys.json").read_text()
    assert created["id"] in stored
    assert created["api_key"] not in stored
    assert created["encoded"] not in stored
    assert json.loads(stored)[created["id"]]["secret_hash"]
