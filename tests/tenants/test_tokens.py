"""API tokens (tenants/tokens.py): issued once, stored hashed, refused alike for every failure."""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from atlas_site.errors import Conflict, NotAuthenticated, NotFound, PermissionDenied, ValidationFailed
from tenants import services, tokens
from tenants.models import ApiToken, AuditRecord, Person


def test_a_token_is_shown_once_and_stored_only_as_a_hash(acme, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    issued = tokens.token_create(tenant=acme, name="agent backend", scopes=["read", "write"], actor="test")
    assert tokens.TOKEN_PATTERN.match(issued.secret)
    secret_part = issued.secret.split("_", 2)[2]
    row = ApiToken.objects.get(pk=issued.token.pk)
    assert row.prefix == issued.secret.split("_")[1]
    assert row.secret_sha256 == hashlib.sha256(secret_part.encode()).hexdigest()
    stored = json.dumps([list(r.values()) for r in ApiToken.objects.values()], default=str)
    stored += json.dumps([r.detail for r in AuditRecord.objects.all()])
    assert secret_part not in stored
    assert secret_part not in caplog.text
    assert secret_part not in repr(issued)
    assert row.kind == ApiToken.Kind.TENANT and row.scopes == ["read", "write"]


def test_authenticate_gives_the_principal_and_resolves_subjects_of_its_tenant(acme, alice, bob, zed) -> None:
    issued = tokens.token_create(tenant=acme, name="svc", scopes="read", actor="test")
    principal = tokens.token_authenticate(presented=issued.secret)
    assert principal.tenant == acme and principal.is_tenant_token and principal.scopes == {"read"}
    assert principal.subject_for("alice") == alice
    for other in ("zed", "nobody"):  # another tenant's subject looks exactly like a missing one
        with pytest.raises(NotFound) as info:
            principal.subject_for(other)
        assert info.value.message == f"no subject '{other}'"
    principal.require("read")
    with pytest.raises(PermissionDenied):
        principal.require("write")


def test_a_subject_token_acts_only_as_its_subject(acme, alice, bob) -> None:
    issued = tokens.token_create(tenant=acme, subject=alice, name="alice's laptop", scopes="read,forget", actor="test")
    principal = tokens.token_authenticate(presented=issued.secret)
    assert principal.subject == alice and not principal.is_tenant_token
    assert principal.subject_for("alice") == alice
    with pytest.raises(NotFound):
        principal.subject_for("bob")
    with pytest.raises(PermissionDenied):
        principal.require_tenant_token()


def _refused(presented: str) -> None:
    with pytest.raises(NotAuthenticated) as info:
        tokens.token_authenticate(presented=presented)
    assert info.value.message == "the token is missing, malformed, unknown, expired or revoked"


def test_every_failure_is_the_same_refusal(acme, alice) -> None:
    good = tokens.token_create(tenant=acme, name="svc", scopes="read", actor="test").secret
    prefix, secret = good.split("_")[1], good.split("_", 2)[2]
    for presented in (
        "",
        "Bearer x",
        "atlas_short_x",
        f"atlas_{prefix}_{'A' * 43}",
        f"atlas_{'0' * 12}_{secret}",
        good + "x",
    ):
        _refused(presented)
    revoked = tokens.token_create(tenant=acme, name="r", scopes="read", actor="test")
    assert tokens.token_revoke(token=revoked.token, actor="test") is True
    assert tokens.token_revoke(token=revoked.token, actor="test") is False
    _refused(revoked.secret)
    expiring = tokens.token_create(
        tenant=acme, name="e", scopes="read", actor="test", expires_at=timezone.now() + timedelta(hours=1)
    )
    tokens.token_authenticate(presented=expiring.secret)
    ApiToken.objects.filter(pk=expiring.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    _refused(expiring.secret)


def test_deactivation_stops_tokens_at_once(acme, alice, bob) -> None:
    of_alice = tokens.token_create(tenant=acme, subject=alice, name="a", scopes="read", actor="test").secret
    of_tenant = tokens.token_create(tenant=acme, name="t", scopes="read", actor="test").secret
    services.subject_deactivate(subject=alice, actor="test")
    _refused(of_alice)
    assert tokens.token_authenticate(presented=of_tenant).subject_for("bob") == bob
    with pytest.raises(NotFound):
        tokens.token_authenticate(presented=of_tenant).subject_for("alice")
    services.tenant_deactivate(tenant=acme, actor="test")
    _refused(of_tenant)
    assert not ApiToken.objects.filter(tenant=acme, revoked_at__isnull=True).exists()


def test_last_used_is_written_at_most_once_a_minute(acme) -> None:
    issued = tokens.token_create(tenant=acme, name="svc", scopes="read", actor="test")
    tokens.token_authenticate(presented=issued.secret)
    first = ApiToken.objects.get(pk=issued.token.pk).last_used_at
    tokens.token_authenticate(presented=issued.secret)
    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at == first
    ApiToken.objects.filter(pk=issued.token.pk).update(last_used_at=timezone.now() - timedelta(minutes=2))
    tokens.token_authenticate(presented=issued.secret)
    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at > first


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scopes": []}, "scopes"),
        ({"scopes": "read,admin"}, "scopes"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"expires_at": timezone.now() - timedelta(days=1)}, "expires_at"),
    ],
)
def test_bad_requests_issue_nothing(acme, kwargs, field) -> None:
    arguments = {"tenant": acme, "name": "svc", "scopes": "read", "actor": "test", **kwargs}
    with pytest.raises(ValidationFailed) as info:
        tokens.token_create(**arguments)
    assert info.value.field == field
    assert not ApiToken.objects.exists()


def test_a_subject_token_needs_a_subject_of_the_tenant(acme, zed) -> None:
    with pytest.raises(NotFound):
        tokens.token_create(tenant=acme, subject=zed, name="x", scopes="read", actor="test")
    assert not ApiToken.objects.exists()


def _cli(*args: str) -> str:
    out = StringIO()
    call_command("atlas_token", *args, stdout=out)
    return out.getvalue()


def test_cli_create_list_revoke(acme, alice) -> None:
    created = json.loads(_cli("create", "--tenant", "acme", "--subject", "alice", "--scopes", "read", "--json"))
    assert tokens.token_authenticate(presented=created["token"]).subject == alice
    listing = _cli("list", "--tenant", "acme")
    assert f"atlas_{created['prefix']}_…" in listing and created["token"] not in listing
    assert "active" in listing
    assert "revoked" in _cli("revoke", "--tenant", "acme", "--token", created["prefix"])
    _refused(created["token"])
    with pytest.raises(CommandError):
        _cli("create", "--tenant", "acme", "--scopes", "root")
    with pytest.raises(CommandError):
        _cli("create", "--tenant", "acme", "--expires", "soon")


def test_cli_prints_paste_ready_mcp_configurations(acme, settings) -> None:
    settings.ATLAS_PUBLIC_URL = "https://atlas.example.com"
    payload = json.loads(_cli("create", "--tenant", "acme", "--mcp", "--json"))
    header = f"Bearer {payload['token']}"
    assert payload["mcp"]["cursor"]["mcpServers"]["atlas-memory"] == {
        "url": "https://atlas.example.com/mcp/",
        "headers": {"Authorization": header},
    }
    assert payload["mcp"]["vscode"]["servers"]["atlas-memory"]["type"] == "http"
    assert payload["mcp"]["claude_desktop"]["mcpServers"]["atlas-memory"]["args"][2] == "https://atlas.example.com/mcp/"
    text = _cli("create", "--tenant", "acme", "--mcp")
    assert "shown once" in text and "claude_desktop" in text and "https://atlas.example.com/mcp/" in text


def test_admin_issues_a_token_once_and_revokes(client, acme, alice) -> None:
    staff = Person.objects.create_superuser(email="ops@example.com", password="ops-password-123")
    client.force_login(staff)
    response = client.post(
        reverse("admin:tenants_apitoken_add"),
        {"tenant": acme.pk, "subject": alice.pk, "name": "from admin", "scopes": ["read"]},
        follow=True,
    )
    shown = [str(m) for m in response.context["messages"]]
    [token] = ApiToken.objects.all()
    [message] = [m for m in shown if "shown once" in m]
    secret = message.split(": ", 1)[1].split(" ")[0]
    assert tokens.token_authenticate(presented=secret).subject == alice
    page = client.get(reverse("admin:tenants_apitoken_change", args=[token.pk])).content.decode()
    assert secret not in page and f"atlas_{token.prefix}_…" in page
    client.post(
        reverse("admin:tenants_apitoken_changelist"),
        {"action": "revoke", "_selected_action": [token.pk]},
    )
    _refused(secret)


def test_admin_refuses_a_subject_of_another_tenant(client, acme, zed) -> None:
    staff = Person.objects.create_superuser(email="ops@example.com", password="ops-password-123")
    client.force_login(staff)
    response = client.post(
        reverse("admin:tenants_apitoken_add"), {"tenant": acme.pk, "subject": zed.pk, "name": "x", "scopes": ["read"]}
    )
    assert response.status_code == 200
    assert "choose an active subject of the chosen tenant" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_install_records_a_generated_token_once(acme, alice) -> None:
    """The development stack's demo token: installed from dev.env, idempotent, never over another."""
    secret = "atlas_0123456789ab_" + "Q" * 43
    first = tokens.token_install(tenant=acme, subject=alice, name="demo", scopes="read", token=secret, actor="test")
    again = tokens.token_install(tenant=acme, subject=alice, name="demo", scopes="read", token=secret, actor="test")
    assert first.pk == again.pk and ApiToken.objects.count() == 1
    assert tokens.token_authenticate(presented=secret).subject == alice
    with pytest.raises(Conflict):
        tokens.token_install(tenant=acme, subject=alice, name="x", scopes="read", token=secret[:-1] + "R", actor="test")
    with pytest.raises(ValidationFailed):
        tokens.token_install(tenant=acme, subject=alice, name="x", scopes="read", token="atlas_short", actor="test")
