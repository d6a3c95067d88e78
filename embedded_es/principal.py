"""Who a request comes from, and what they may do: authentication of the gateway's credentials."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .errors import authentication_error
from .keystore import ApiKeyRecord, ApiKeyStore, secret_digest
from .privileges import SUPERUSER, SUPERUSER_DESCRIPTORS, Permissions, role_from_descriptors

BOOTSTRAP_USER = "elastic"
RESERVED_REALM = "reserved"


@dataclass(frozen=True)
class Principal:
    username: str
    realm: str
    realm_type: str
    permissions: Permissions
    # The role sets a key minted by this principal is limited by.
    owner_descriptors: tuple[dict[str, Any], ...]
    api_key: ApiKeyRecord | None = None

    @property
    def owner_key(self) -> str:
        """Identity that owns scroll and PIT contexts opened by this principal."""
        return f"api_key:{self.api_key.id}" if self.api_key else f"user:{self.realm}:{self.username}"

    def describe(self) -> str:
        """How Elasticsearch names the principal in a denial message."""
        if self.api_key:
            return f"API key id [{self.api_key.id}] of user [{self.username}]"
        return f"user [{self.username}]"


def _superuser() -> Principal:
    return Principal(
        username=BOOTSTRAP_USER,
        realm=RESERVED_REALM,
        realm_type=RESERVED_REALM,
        permissions=Permissions((SUPERUSER,)),
        owner_descriptors=(SUPERUSER_DESCRIPTORS,),
    )


def api_key_principal(record: ApiKeyRecord) -> Principal:
    """An API key acts with its own role descriptors, limited by its owner's."""
    limited = tuple(record.limited_by)
    role_sets = [role_from_descriptors(d) for d in limited]
    if record.role_descriptors:
        role_sets.insert(0, role_from_descriptors(record.role_descriptors))
    own = (record.role_descriptors,) if record.role_descriptors else ()
    return Principal(
        username=record.username,
        realm=record.realm,
        realm_type=record.realm_type,
        permissions=Permissions(tuple(role_sets)),
        owner_descriptors=own + limited,
        api_key=record,
    )


#: The thread that runs PBKDF2 for secrets no cache knows. hashlib releases the GIL while it hashes, so
#: the event loop keeps serving everyone else; one thread means a flood of distinct wrong secrets costs
#: at most one core (the engine and the loop keep the rest), while keys already verified (the
#: application's own) are answered from the cache without waiting behind it.
VERIFY_THREADS = 1


class Authenticator:
    """Checks credentials. PBKDF2 (the cost of an API-key secret no cache knows) never runs on the
    event loop: a flood of wrong secrets for a known key id would otherwise stall every request.
    Concurrent checks of the same (key id, secret) share one computation, and a secret found wrong
    is remembered (ApiKeyStore's bounded refused cache), so repeating it costs a dictionary lookup."""

    def __init__(self, *, keys: ApiKeyStore, password: str) -> None:
        self._keys = keys
        self._password = password.encode()
        self._principals: dict[str, Principal] = {}
        self._pool = ThreadPoolExecutor(max_workers=VERIFY_THREADS, thread_name_prefix="embedded_es-verify")
        self._in_flight: dict[tuple[str, bytes], asyncio.Future[ApiKeyRecord | None]] = {}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def authenticate(self, authorization: str | None, path: str) -> Principal:
        if not authorization:
            raise authentication_error(f"missing authentication credentials for REST request [{path}]")
        scheme, _, value = authorization.strip().partition(" ")
        scheme = scheme.lower()
        if scheme == "basic":
            return self._basic(value.strip(), path)
        if scheme == "apikey":
            return await self._api_key(value.strip())
        raise authentication_error(f"missing authentication credentials for REST request [{path}]")

    async def _verify(self, key_id: str, secret: str) -> ApiKeyRecord | None:
        known = self._keys.verify_cached(key_id, secret)
        if known is not None:
            return self._keys.get(key_id) if known else None
        slot = (key_id, secret_digest(secret))
        pending = self._in_flight.get(slot)
        if pending is None:
            loop = asyncio.get_running_loop()
            pending = asyncio.ensure_future(loop.run_in_executor(self._pool, self._keys.verify, key_id, secret))
            self._in_flight[slot] = pending
            pending.add_done_callback(lambda _done: self._in_flight.pop(slot, None))
        return await asyncio.shield(pending)  # one caller giving up does not cancel the others' answer

    def _basic(self, value: str, path: str) -> Principal:
        try:
            user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise authentication_error(f"missing authentication credentials for REST request [{path}]") from None
        if user == BOOTSTRAP_USER and hmac.compare_digest(password.encode(), self._password):
            return _superuser()
        raise authentication_error(f"unable to authenticate user [{user}] for REST request [{path}]")

    async def _api_key(self, value: str) -> Principal:
        try:
            key_id, sep, secret = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise _api_key_failure("invalid ApiKey value") from None
        if not sep:
            raise _api_key_failure("invalid ApiKey value")
        # The order of checks is ApiKeyService's: exists, invalidated, secret, expiry.
        record = self._keys.get(key_id)
        if record is None:
            raise _api_key_failure(f"unable to find apikey with id {key_id}")
        if record.invalidated:
            raise _api_key_failure(f"api key [{key_id}] has been invalidated")
        if await self._verify(key_id, secret) is None:
            raise _api_key_failure(f"invalid credentials for API key [{key_id}]")
        if record.invalidated:  # invalidated while its secret was being checked
            raise _api_key_failure(f"api key [{key_id}] has been invalidated")
        if record.expired(int(time.time() * 1000)):
            raise _api_key_failure("api key is expired")
        cached = self._principals.get(key_id)
        if cached is None or cached.api_key is not record:
            cached = self._principals[key_id] = api_key_principal(record)
        return cached


def _api_key_failure(detail: str) -> Exception:
    # AuthenticatorChain replaces the message when a credential was presented
    # but failed, and names the failure in additional_unsuccessful_credentials.
    return authentication_error(
        "unable to authenticate with provided credentials and anonymous access is not allowed for this request",
        unsuccessful=f"API key: {detail}",
    )
