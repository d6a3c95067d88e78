"""manage.py atlas_webhook: add prints the signing secret once (stored encrypted), list never shows it;
remove, rotate, enable, disable; bad input is one clear error that changes nothing."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tenants.secrets import secret_decrypt
from webhooks.models import WebhookEndpoint


def _run(*args: str) -> str:
    out = StringIO()
    call_command("atlas_webhook", *args, stdout=out)
    return out.getvalue()


def test_add_prints_the_secret_once_and_list_never(plain_tenant, settings) -> None:
    slug = plain_tenant.slug
    printed = _run(
        "add", "--tenant", slug, "--url", "https://hooks.example.com/in", "--events", "memory.forgotten,memory.created"
    )
    (endpoint,) = WebhookEndpoint.objects.filter(tenant=plain_tenant)
    secret = re.search(r"(whsec_\S+)", printed).group(1)
    assert (
        printed.splitlines()[0]
        == f"webhook {endpoint.pk} → https://hooks.example.com/in (memory.created, memory.forgotten)"
    )
    assert secret_decrypt(endpoint.secret_encrypted) == secret and secret not in endpoint.secret_encrypted
    listed = _run("list", "--tenant", slug)
    assert "https://hooks.example.com/in" in listed and "whsec_" not in listed
    rotated = _run("rotate", "--tenant", slug, "--id", str(endpoint.pk))
    new = re.search(r"(whsec_\S+)", rotated).group(1)
    endpoint.refresh_from_db()
    assert new != secret and secret_decrypt(endpoint.secret_encrypted) == new
    assert secret_decrypt(endpoint.previous_secret_encrypted) == secret
    assert _run("disable", "--tenant", slug, "--id", str(endpoint.pk)).strip() == f"webhook {endpoint.pk} disabled"
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).is_enabled is False
    _run("enable", "--tenant", slug, "--id", str(endpoint.pk))
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).is_enabled is True
    _run("remove", "--tenant", slug, "--id", str(endpoint.pk))
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "http://169.254.169.254/", "--events", "memory.created"], "url must use https"),
        (["--url", "https://hooks.example.com/", "--events", "memory.eaten"], "unknown event memory.eaten"),
        (["--url", "https://hooks.example.com/"], "add needs --url and --events"),
    ],
)
def test_bad_input_is_one_clear_error_and_changes_nothing(plain_tenant, args, message) -> None:
    with pytest.raises(CommandError) as refused:
        _run("add", "--tenant", plain_tenant.slug, *args)
    assert str(refused.value).startswith(message)
    assert not WebhookEndpoint.objects.exists()


def test_another_tenants_endpoint_is_not_found(plain_tenant, db) -> None:
    from tenants.models import Tenant

    other = Tenant.objects.create(slug="other-co", name="Other")
    _run("add", "--tenant", "other-co", "--url", "https://hooks.example.com/", "--events", "memory.created")
    theirs = WebhookEndpoint.objects.get(tenant=other)
    with pytest.raises(CommandError, match=f"no webhook endpoint {theirs.pk} in this tenant"):
        _run("remove", "--tenant", plain_tenant.slug, "--id", str(theirs.pk))
    assert WebhookEndpoint.objects.filter(pk=theirs.pk).exists()
