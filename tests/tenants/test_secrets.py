"""API-key secrets: encrypted at rest, never logged."""

from __future__ import annotations

import base64
import logging

import pytest
from django.db import connection

from tenants import selectors, services
from tenants.models import ApiKeyCredential
from tenants.secrets import secret_decrypt, secret_encrypt


def test_secrets_are_encrypted_at_rest(alice) -> None:
    credential = ApiKeyCredential.objects.get(subject=alice)
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret_encrypted FROM tenants_apikeycredential WHERE id = %s", [credential.pk])
        stored = cursor.fetchone()[0]
    encoded = secret_decrypt(stored)
    key_id, secret = base64.b64decode(encoded).decode().split(":", 1)
    assert key_id == credential.es_key_id
    assert secret not in stored and encoded not in stored


def test_older_encryption_keys_still_decrypt(settings) -> None:
    from cryptography.fernet import Fernet

    from tenants.secrets import secrets_reset

    token = secret_encrypt("payload")
    settings.ATLAS_ENCRYPTION_KEYS = [Fernet.generate_key().decode(), *settings.ATLAS_ENCRYPTION_KEYS]
    secrets_reset()
    try:
        assert secret_decrypt(token) == "payload"
    finally:
        secrets_reset()


def test_no_secret_reaches_the_logs(caplog: pytest.LogCaptureFixture, atlas_es, db) -> None:
    caplog.set_level(logging.DEBUG)
    tenant = services.tenant_create(slug="loggy", name="Loggy", actor="test")
    subject = services.subject_create(tenant=tenant, external_id="quiet", actor="test")
    services.credential_rotate(actor="test", subject=subject)
    selectors.subject_es_client(subject=subject).search(index="atlas-*")
    services.subject_deactivate(subject=subject, actor="test")
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert "rotated subject key" in logged
    for credential in ApiKeyCredential.objects.all():
        encoded = secret_decrypt(credential.secret_encrypted)
        secret = base64.b64decode(encoded).decode().split(":", 1)[1]
        assert encoded not in logged
        assert secret not in logged
