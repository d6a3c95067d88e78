"""Authentication: basic auth for the bootstrap superuser, API keys for everyone else."""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from elasticsearch import AuthenticationException, Elasticsearch

from embedded_es import keystore
from embedded_es.gateway import Gateway

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


# --- A flood of wrong secrets for a known key id (issue 24, finding 9) ----------------------------------
# The gateway runs in this process (its security API needs no engine), so the test can see which
# thread pays each PBKDF2 computation: ``keystore._hash_secret`` is wrapped to record it.


class _InProcessGateway:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.url = ""
        self.loop_thread = 0
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> _InProcessGateway:
        self.loop_thread = threading.get_ident()
        self._runner = web.AppRunner(self.gateway.app())
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def _api_key_header(key_id: str, secret: str) -> dict[str, str]:
    return {"Authorization": "ApiKey " + base64.b64encode(f"{key_id}:{secret}".encode()).decode()}


@pytest.fixture
def hashing_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread of every PBKDF2 computation the key store makes (creation included)."""
    seen: list[int] = []
    real = keystore._hash_secret

    def counted(secret: str, salt: bytes) -> str:
        seen.append(threading.get_ident())
        return real(secret, salt)

    monkeypatch.setattr(keystore, "_hash_secret", counted)
    return seen


def test_a_flood_of_wrong_secrets_does_not_run_pbkdf2_on_the_event_loop(
    tmp_path: Path, hashing_threads: list[int]
) -> None:
    """Each wrong secret for a known key id costs PBKDF2 (ApiKeyService.verifyKeyAgainstHash hashes the
    presented secret). The gateway pays it on worker threads, never on the event loop every other
    request waits on; the same wrong secret repeated is computed once (in flight together, then from
    the bounded refused cache); valid requests all succeed meanwhile."""
    gateway = Gateway(engine_url="http://127.0.0.1:9", data_dir=tmp_path, password="bootstrap-pw")
    record, secret = gateway.keys.create(
        name="victim",
        expiration_ms=None,
        username="elastic",
        realm="reserved",
        realm_type="reserved",
        metadata={},
        role_descriptors={},
        limited_by=[],
    )
    hashing_threads.clear()

    async def scenario() -> tuple[list[int], list[int], int, int]:
        async with _InProcessGateway(gateway) as served, aiohttp.ClientSession() as http:

            async def status(headers: dict[str, str]) -> int:
                async with http.get(f"{served.url}/_security/_authenticate", headers=headers) as resp:
                    await resp.read()
                    return resp.status

            assert await status(_api_key_header(record.id, secret)) == 200  # verified once, then cached
            same_wrong = [status(_api_key_header(record.id, "the-same-wrong-secret")) for _ in range(60)]
            distinct_wrong = [status(_api_key_header(record.id, f"wrong-{n}")) for n in range(20)]
            valid = [status(_api_key_header(record.id, secret)) for _ in range(40)]
            results = await asyncio.gather(*same_wrong, *distinct_wrong, *valid)
            again = await status(_api_key_header(record.id, "the-same-wrong-secret"))
            return results[:80], results[80:], again, served.loop_thread

    wrong, valid, again, loop_thread = asyncio.run(scenario())
    assert set(wrong) == {401}
    assert valid == [200] * 40
    assert again == 401
    # 1 for the valid secret, 1 for the repeated wrong one (computed once), 20 for the distinct ones.
    assert len(hashing_threads) == 22
    assert loop_thread not in hashing_threads


def test_an_invalidated_key_is_refused_though_its_secret_was_verified_and_cached(tmp_path: Path) -> None:
    """Neither cache outlives invalidation: the right secret of an invalidated key is 401 (ApiKeyService
    checks ``api_key_invalidated`` before the secret; its cache is cleared on invalidation)."""
    gateway = Gateway(engine_url="http://127.0.0.1:9", data_dir=tmp_path, password="bootstrap-pw")
    record, secret = gateway.keys.create(
        name="soon-gone",
        expiration_ms=None,
        username="elastic",
        realm="reserved",
        realm_type="reserved",
        metadata={},
        role_descriptors={},
        limited_by=[],
    )

    async def scenario() -> list[int]:
        async with _InProcessGateway(gateway) as served, aiohttp.ClientSession() as http:
            statuses = []
            for step in ("before", "invalidate", "after"):
                if step == "invalidate":
                    async with http.delete(
                        f"{served.url}/_security/api_key",
                        json={"ids": [record.id]},
                        headers={"Authorization": "Basic " + base64.b64encode(b"elastic:bootstrap-pw").decode()},
                    ) as resp:
                        assert resp.status == 200, await resp.text()
                    continue
                async with http.get(
                    f"{served.url}/_security/_authenticate", headers=_api_key_header(record.id, secret)
                ) as resp:
                    statuses.append(resp.status)
            return statuses

    assert asyncio.run(scenario()) == [200, 401]
    assert gateway.keys.verify_cached(record.id, secret) is None  # the verified entry went with it
