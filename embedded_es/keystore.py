"""Durable store of API keys, with hashed secrets.

Like Elasticsearch, only a salted PBKDF2 hash of each key's secret is kept
(``xpack.security.authc.api_key.hashing.algorithm`` defaults to PBKDF2), and a
fast in-memory cache of verified credentials avoids paying PBKDF2 on every
request (ES's ``api_key.cache.hash_algo`` cache plays the same role). A small
bounded cache of secrets known to be wrong for a key id keeps a flood of the same
wrong secret from paying PBKDF2 each time: a key's secret never changes, so a
wrong secret stays wrong; invalidation is checked before either cache is asked.
Records are written with write-to-temp + fsync + rename, so a crash leaves
either the old file or the new one, never a torn one; the file is 0600.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import illegal_argument
from .private_files import DIR_MODE, write_private

PBKDF2_ITERATIONS = 10_000
REFUSED_CACHE_SIZE = 4096  # (key id, secret digest) pairs known wrong, least recently seen dropped first
_DURATION = re.compile(r"^(\d+)(nanos|micros|ms|s|m|h|d)$")
_UNIT_MS = {"nanos": 1e-6, "micros": 1e-3, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_expiration_ms(value: str) -> int:
    """Parse an Elasticsearch time value (``1d``, ``30m``) into milliseconds."""
    match = _DURATION.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise illegal_argument(
            f"failed to parse setting [expiration] with value [{value}] as a time value: unit is missing or unrecognized"
        )
    return int(int(match.group(1)) * _UNIT_MS[match.group(2)])


def _random_token(nbytes: int) -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(nbytes)).decode().rstrip("=")


def _hash_secret(secret: str, salt: bytes) -> str:
    digest = hashlib.pbkdf2_hmac("sha512", secret.encode(), salt, PBKDF2_ITERATIONS)
    return base64.b64encode(digest).decode()


def secret_digest(secret: str) -> bytes:
    """The cheap fingerprint both caches key on (never stored on disk)."""
    return hashlib.sha256(secret.encode()).digest()


@dataclass
class ApiKeyRecord:
    id: str
    name: str
    creation: int
    expiration: int | None
    username: str
    realm: str
    realm_type: str
    metadata: dict[str, Any]
    role_descriptors: dict[str, Any]
    limited_by: list[dict[str, Any]]
    salt: str
    secret_hash: str
    invalidated: bool = False
    invalidation: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def expired(self, now_ms: int) -> bool:
        return self.expiration is not None and now_ms >= self.expiration

    def public(self, *, with_limited_by: bool = False) -> dict[str, Any]:
        """The shape GET /_security/api_key returns (never the secret or its hash)."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "type": "rest",
            "creation": self.creation,
            "invalidated": self.invalidated,
            "username": self.username,
            "realm": self.realm,
            "realm_type": self.realm_type,
            "metadata": self.metadata,
            "role_descriptors": self.role_descriptors,
        }
        if self.expiration is not None:
            out["expiration"] = self.expiration
        if self.invalidated:
            out["invalidation"] = self.invalidation
        if with_limited_by:
            out["limited_by"] = self.limited_by
        return out


class ApiKeyStore:
    def __init__(self, directory: Path) -> None:
        self._path = directory / "api_keys.json"
        directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._records: dict[str, ApiKeyRecord] = {}
        self._cache_lock = threading.Lock()  # verify() runs on worker threads
        self._verified: dict[str, bytes] = {}
        self._refused: OrderedDict[tuple[str, bytes], None] = OrderedDict()
        if self._path.exists():
            raw = json.loads(self._path.read_text())
            self._records = {k: ApiKeyRecord(**v) for k, v in raw.items()}

    def _persist(self) -> None:
        write_private(self._path, json.dumps({k: asdict(v) for k, v in self._records.items()}))

    def create(
        self,
        *,
        name: str,
        expiration_ms: int | None,
        username: str,
        realm: str,
        realm_type: str,
        metadata: dict[str, Any],
        role_descriptors: dict[str, Any],
        limited_by: list[dict[str, Any]],
    ) -> tuple[ApiKeyRecord, str]:
        key_id = _random_token(15)  # 20 characters, like Elasticsearch's UUIDs.base64UUID()
        secret = _random_token(16)  # 22 characters, like Elasticsearch's generated key
        salt = secrets.token_bytes(16)
        now = int(time.time() * 1000)
        record = ApiKeyRecord(
            id=key_id,
            name=name,
            creation=now,
            expiration=now + expiration_ms if expiration_ms is not None else None,
            username=username,
            realm=realm,
            realm_type=realm_type,
            metadata=metadata,
            role_descriptors=role_descriptors,
            limited_by=limited_by,
            salt=base64.b64encode(salt).decode(),
            secret_hash=_hash_secret(secret, salt),
        )
        with self._lock:
            self._records[key_id] = record
            self._persist()
        return record, secret

    def verify_cached(self, key_id: str, secret: str) -> bool | None:
        """What the caches know of ``secret`` for ``key_id``: True (verified before), False (known
        wrong), None (PBKDF2 must decide: call ``verify``, off the event loop)."""
        fast = secret_digest(secret)
        with self._cache_lock:
            cached = self._verified.get(key_id)
            if cached is not None and hmac.compare_digest(cached, fast):
                return True
            if (key_id, fast) in self._refused:
                self._refused.move_to_end((key_id, fast))
                return False
        return None

    def verify(self, key_id: str, secret: str) -> ApiKeyRecord | None:
        """The record when ``secret`` is right for ``key_id`` (whatever its state), else None.

        Pays PBKDF2 unless a cache answers; safe to call from several threads at once."""
        record = self._records.get(key_id)
        if record is None:
            return None
        known = self.verify_cached(key_id, secret)
        if known is not None:
            return record if known else None
        fast = secret_digest(secret)
        right = hmac.compare_digest(_hash_secret(secret, base64.b64decode(record.salt)), record.secret_hash)
        with self._cache_lock:
            if right:
                if not record.invalidated:  # an invalidated key is never cached as verified again
                    self._verified[key_id] = fast
            else:
                self._refused[(key_id, fast)] = None
                if len(self._refused) > REFUSED_CACHE_SIZE:
                    self._refused.popitem(last=False)
        return record if right else None

    def get(self, key_id: str) -> ApiKeyRecord | None:
        return self._records.get(key_id)

    def find(
        self,
        *,
        ids: list[str] | None = None,
        name: str | None = None,
        username: str | None = None,
        realm: str | None = None,
        active_only: bool = False,
    ) -> list[ApiKeyRecord]:
        now = int(time.time() * 1000)
        out = []
        for rec in self._records.values():
            if ids is not None and rec.id not in ids:
                continue
            if name is not None and not _wildcard_name_match(rec.name, name):
                continue
            if username is not None and rec.username != username:
                continue
            if realm is not None and rec.realm != realm:
                continue
            if active_only and (rec.invalidated or rec.expired(now)):
                continue
            out.append(rec)
        return sorted(out, key=lambda r: (r.creation, r.id))

    def invalidate(self, records: list[ApiKeyRecord]) -> tuple[list[str], list[str]]:
        """Invalidate ``records``: (newly invalidated ids, previously invalidated ids)."""
        newly, before = [], []
        now = int(time.time() * 1000)
        with self._lock:
            for rec in records:
                if rec.invalidated:
                    before.append(rec.id)
                    continue
                rec.invalidated = True
                rec.invalidation = now
                with self._cache_lock:
                    self._verified.pop(rec.id, None)
                newly.append(rec.id)
            if newly:
                self._persist()
        return newly, before


def _wildcard_name_match(actual: str, wanted: str) -> bool:
    # GET/DELETE by name accept a trailing wildcard (prefix match) or "*" for all.
    if wanted == "*":
        return True
    if wanted.endswith("*"):
        return actual.startswith(wanted[:-1])
    return actual == wanted
