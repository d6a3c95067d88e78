"""Encryption at rest of API-key secrets (Fernet, keys from ATLAS_ENCRYPTION_KEYS, newest first)."""

from __future__ import annotations

from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


@lru_cache(maxsize=1)
def _fernet() -> MultiFernet:
    keys = [k for k in settings.ATLAS_ENCRYPTION_KEYS if k]
    if not keys:
        raise ImproperlyConfigured("ATLAS_ENCRYPTION_KEYS is empty: secrets cannot be stored")
    try:
        return MultiFernet([Fernet(k) for k in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(
            "ATLAS_ENCRYPTION_KEYS must hold Fernet keys (32 url-safe base64-encoded bytes each); "
            "generate one with: python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
        ) from exc


def secret_encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def secret_decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise ImproperlyConfigured(
            "a stored secret cannot be decrypted with ATLAS_ENCRYPTION_KEYS (was the key removed?)"
        ) from exc


def secrets_reset() -> None:
    _fernet.cache_clear()
