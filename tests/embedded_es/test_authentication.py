"""Authentication: basic auth for the bootstrap superuser, API keys for everyone else."""

from __future__ import annotations

import base64
import time

import pytest
from elasticsearch import AuthenticationException, Elasticsearch

from .conftest import Cluster

API_KEY_FAILURE = (
    "unable to authenticate with provided credentials and anonymous access is not allowed for this request"
)


def _auth_error(client: Elasticsearch, path: str = "/_security/_authenticate") -> AuthenticationException:
    with pytest.raises(AuthenticationException) as info:
        client.perform_request("GET", path)
    return info.value


def test_request_without_credentials_is_refused_with_challenges(cluster: Cluster) -> None:
    """No credentials → 401 ``missing authentication credentials for REST request [uri]``.

    Elasticsearch: x-pack/plugin/core/.../security/authc/DefaultAuthenticationFailureHandler.java
    (missingToken, with the raw URI including its query string) and security/Security.java
    (the WWW-Authenticate challenges, also copied into the body's ``header``).
    """
    err = _auth_error(Elasticsearch(cluster.url), "/some-index/_search?q=x")
    reason = "missing authentication credentials for REST request [/some-index/_search?q=x]"
    assert err.meta.status == 401
    assert err.body["status"] == 401
    assert err.body["error"]["type"] == "security_exception"
    assert err.body["error"]["reason"] == reason
    assert err.body["error"]["root_cause"][0]["reason"] == reason
    challenges = err.body["error"]["header"]["WWW-Authenticate"]
    assert challenges[0].startswith('Basic realm="security"')
    assert "ApiKey" in challenges


def test_wrong_password_is_refused(cluster: Cluster) -> None:
    """Wrong password → 401 ``unable to authenticate user [elastic] for REST request [uri]``.

    Elasticsearch: DefaultAuthenticationFailureHandler.failedAuthentication, reached from
    security/authc/RealmsAuthenticator.java when no realm accepts the token.
    """
    err = _auth_error(Elasticsearch(cluster.url, basic_auth=("elastic", "not-the-password")))
    assert err.meta.status == 401
    assert (
        err.body["error"]["reason"]
        == "unable to authenticate user [elastic] for REST request [/_security/_authenticate]"
    )


def test_superuser_authenticates_with_basic_auth(admin: Elasticsearch) -> None:
    """Elasticsearch: docs/reference/rest-api/security/authenticate.asciidoc (reserved ``elastic`` user)."""
    me = admin.security.authenticate().body
    assert me["username"] == "elastic"
    assert me["roles"] == ["superuser"]
    assert me["authentication_type"] == "realm"
    assert me["authentication_realm"] == {"name": "reserved", "type": "reserved"}


def test_api_key_authenticates_as_its_owner(admin: Elasticsearch, cluster: Cluster) -> None:
    """An API key acts as its owner with no roles of its own.

    Elasticsearch: security/authc/ApiKeyService.java (validateApiKeyTypeAndExpiration builds
    the user with empty roles) and core/.../authc/AuthenticationField.java (realm ``_es_api_key``).
    """
    created = admin.security.create_api_key(name="authn-probe", role_descriptors={})
    me = cluster.with_key(created["encoded"]).security.authenticate().body
    assert me["username"] == "elastic"
    assert me["roles"] == []
    assert me["authentication_type"] == "api_key"
    assert me["authentication_realm"] == {"name": "_es_api_key", "type": "_es_api_key"}
    assert me["api_key"] == {"id": created["id"], "name": "authn-probe"}


def test_unknown_api_key_is_refused(cluster: Cluster) -> None:
    """Elasticsearch: ApiKeyService.loadApiKeyAndValidateCredentials ("unable to find apikey with id"),
    reported by AuthenticatorChain in ``additional_unsuccessful_credentials``."""
    encoded = base64.b64encode(b"AAAAAAAAAAAAAAAAAAAA:BBBBBBBBBBBBBBBBBBBBBB").decode()
    err = _auth_error(cluster.with_key(encoded))
    assert err.meta.status == 401
    assert err.body["error"]["reason"] == API_KEY_FAILURE
    assert (
        err.body["error"]["additional_unsuccessful_credentials"]
        == "API key: unable to find apikey with id AAAAAAAAAAAAAAAAAAAA"
    )


def test_api_key_with_wrong_secret_is_refused(admin: Elasticsearch, cluster: Cluster) -> None:
    """Elasticsearch: ApiKeyService.validateApiKeyCredentials ("invalid credentials for API key [id]")."""
    created = admin.security.create_api_key(name="wrong-secret", role_descriptors={})
    encoded = base64.b64encode(f"{created['id']}:not-the-secret-at-all".encode()).decode()
    err = _auth_error(cluster.with_key(encoded))
    assert (
        err.body["error"]["additional_unsuccessful_credentials"]
        == f"API key: invalid credentials for API key [{created['id']}]"
    )


def test_invalidated_api_key_is_refused(admin: Elasticsearch, cluster: Cluster) -> None:
    """Elasticsearch: ApiKeyService ("api key [id] has been invalidated"); docs invalidate-api-keys.asciidoc."""
    created = admin.security.create_api_key(name="to-invalidate", role_descriptors={})
    client = cluster.with_key(created["encoded"])
    assert client.security.authenticate()["api_key"]["id"] == created["id"]
    admin.security.invalidate_api_key(ids=[created["id"]])
    err = _auth_error(client)
    assert err.meta.status == 401
    assert (
        err.body["error"]["additional_unsuccessful_credentials"]
        == f"API key: api key [{created['id']}] has been invalidated"
    )


def test_expired_api_key_is_refused(admin: Elasticsearch, cluster: Cluster) -> None:
    """Elasticsearch: ApiKeyService.validateApiKeyTypeAndExpiration ("api key is expired");
    docs create-api-keys.asciidoc (``expiration`` is a time value)."""
    created = admin.security.create_api_key(name="short-lived", expiration="1s", role_descriptors={})
    client = cluster.with_key(created["encoded"])
    assert client.security.authenticate()["api_key"]["id"] == created["id"]
    time.sleep(1.2)
    err = _auth_error(client)
    assert err.body["error"]["additional_unsuccessful_credentials"] == "API key: api key is expired"


def test_malformed_api_key_header_is_refused(cluster: Cluster) -> None:
    """Elasticsearch: ApiKeyService.parseApiKey rejects a value without ``id:secret`` ("invalid ApiKey value")."""
    err = _auth_error(cluster.with_key(base64.b64encode(b"no-colon-here").decode()))
    assert err.body["error"]["additional_unsuccessful_credentials"] == "API key: invalid ApiKey value"


def test_key_secret_is_never_returned_again(admin: Elasticsearch) -> None:
    """The secret is shown once, at creation. Elasticsearch: docs get-api-keys.asciidoc (no secret field)."""
    created = admin.security.create_api_key(name="shown-once", role_descriptors={})
    listed = admin.security.get_api_key(id=created["id"]).body
    assert created["api_key"] not in str(listed)
    assert created["encoded"] not in str(listed)
