"""The operator CLI: scriptable output, clear errors, and no change on bad input."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tenants.models import ApiKeyCredential, AuditRecord, MemorySubject, Person, Tenant

from .test_services import snapshot


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_tenant_lifecycle_from_the_cli(atlas_es, db) -> None:
    assert "created tenant hooli" in run("atlas_tenant", "create", "hooli", "--name", "Hooli")
    run("atlas_subject", "add", "--tenant", "hooli", "--external-id", "gavin", "--name", "Gavin")
    listed = json.loads(run("atlas_tenant", "list", "--json"))
    assert [(t["slug"], t["name"], t["active"], t["subjects"]) for t in listed] == [("hooli", "Hooli", True, 1)]
    subjects = json.loads(run("atlas_subject", "list", "--tenant", "hooli", "--json"))
    assert [(s["external_id"], s["name"], s["active"]) for s in subjects] == [("gavin", "Gavin", True)]
    before = ApiKeyCredential.objects.get(subject__external_id="gavin")
    out = run("atlas_key", "rotate", "--tenant", "hooli", "--subject", "gavin")
    after = ApiKeyCredential.objects.get(subject__external_id="gavin", invalidated_at__isnull=True)
    assert out.strip() == f"rotated: new key id {after.es_key_id}; the old key is invalidated"
    assert after.pk != before.pk
    assert (
        run("atlas_tenant", "update", "hooli", "--review-mode", "agents").strip() == "tenant hooli: review mode agents"
    )
    assert Tenant.objects.get(slug="hooli").review_mode == "agents"
    assert [t["review_mode"] for t in json.loads(run("atlas_tenant", "list", "--json"))] == ["agents"]
    assert "deactivated tenant hooli" in run("atlas_tenant", "deactivate", "hooli")
    assert not ApiKeyCredential.objects.filter(tenant__slug="hooli", invalidated_at__isnull=True).exists()


def test_cli_output_never_contains_a_secret(atlas_es, db) -> None:
    from tenants.secrets import secret_decrypt

    outputs = [run("atlas_tenant", "create", "piper", "--name", "Pied Piper")]
    outputs.append(run("atlas_subject", "add", "--tenant", "piper", "--external-id", "richard"))
    outputs.append(run("atlas_key", "rotate", "--tenant", "piper"))
    outputs.append(run("atlas_tenant", "list"))
    for credential in ApiKeyCredential.objects.all():
        encoded = secret_decrypt(credential.secret_encrypted)
        for text in outputs:
            assert encoded not in text
            assert credential.secret_encrypted not in text


def test_budgets_are_set_and_cleared_from_the_cli(atlas_es, db) -> None:
    run("atlas_tenant", "create", "hooli", "--name", "Hooli")
    out = run("atlas_tenant", "update", "hooli", "--llm-token-budget", "2000000", "--daily-write-quota", "500")
    assert out.strip() == "tenant hooli: LLM token budget 2000000 per month, daily write quota 500"
    listed = json.loads(run("atlas_tenant", "list", "--json"))[0]
    assert (listed["llm_token_budget"], listed["daily_write_quota"]) == (2000000, 500)
    out = run("atlas_tenant", "update", "hooli", "--daily-write-quota", "none", "--review-mode", "consolidation")
    assert out.strip() == "tenant hooli: review mode consolidation, daily write quota none"
    tenant = Tenant.objects.get(slug="hooli")
    assert (tenant.llm_token_budget, tenant.daily_write_quota, tenant.review_mode) == (2000000, None, "consolidation")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("atlas_tenant", "create", "Bad Slug", "--name", "X"), "'Bad Slug' is not a valid slug"),
        (("atlas_tenant", "create", "acme", "--name", "Again"), "a tenant with the slug 'acme' already exists"),
        (("atlas_tenant", "deactivate", "nope"), "no tenant 'nope'"),
        (("atlas_tenant", "update", "nope", "--review-mode", "agents"), "no tenant 'nope'"),
        (
            ("atlas_tenant", "update", "acme"),
            "nothing to change: give --review-mode, --merge-scopes, --llm-token-budget or",
        ),
        (("atlas_tenant", "update", "acme", "--daily-write-quota", "-3"), "Error: argument --daily-write-quota"),
        (("atlas_tenant", "update", "acme", "--llm-token-budget", "lots"), "Error: argument --llm-token-budget"),
        (("atlas_subject", "add", "--tenant", "nope", "--external-id", "x"), "no tenant 'nope'"),
        (("atlas_subject", "add", "--tenant", "acme", "--external-id", "bad id"), "an external id is 1-128 characters"),
        (
            ("atlas_subject", "add", "--tenant", "acme", "--external-id", "x", "--person", "ghost@example.com"),
            "no person with the email 'ghost@example.com'",
        ),
        (
            ("atlas_member", "add", "--tenant", "acme", "--email", "ghost@example.com"),
            "no person with the email 'ghost@example.com'",
        ),
        (("atlas_key", "rotate"), "name the key's owner"),
        (("atlas_key", "rotate", "--subject", "alice"), "--subject needs --tenant"),
        (("atlas_key", "rotate", "--tenant", "acme", "--subject", "ghost"), "no subject 'ghost' in tenant acme"),
    ],
)
def test_bad_cli_input_is_a_clear_error_and_changes_nothing(acme, args, message) -> None:
    before = snapshot()
    with pytest.raises(CommandError) as info:
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    assert str(info.value).startswith(message)
    assert snapshot() == before


@pytest.mark.django_db(transaction=True)
def test_cli_errors_exit_with_status_1(atlas_es, capsys) -> None:
    """From the shell, a CommandError is a one-line message and exit code 1, not a traceback."""
    from django.core.management import ManagementUtility

    with pytest.raises(SystemExit) as info:
        ManagementUtility(["manage.py", "atlas_tenant", "deactivate", "nope"]).execute()
    assert info.value.code == 1
    assert capsys.readouterr().err.strip() == "CommandError: no tenant 'nope'"
    assert (Tenant.objects.count(), MemorySubject.objects.count(), Person.objects.count()) == (0, 0, 0)


def test_an_unreachable_elasticsearch_is_one_line_naming_the_url(tmp_path) -> None:
    """Not the client's retry warnings and tracebacks (≈ 110 lines): the one line an operator can act on."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from embedded_es.engine import free_port

    port = free_port()  # nothing listens there
    env = {
        **os.environ,
        "ATLAS_DATA_DIR": str(tmp_path),
        "ATLAS_ENV_FILE": os.devnull,
        "ATLAS_ES_URL": f"http://elastic:secret@127.0.0.1:{port}",
        "ATLAS_ES_PASSWORD": "secret",
    }
    env.pop("DATABASE_URL", None)
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=root, env=env, check=True, timeout=300)
    done = subprocess.run(
        [sys.executable, "manage.py", "atlas_tenant", "create", "acme", "--name", "Acme"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "CommandError: Elasticsearch is unreachable while trying to read the licence: "
        f"tried http://127.0.0.1:{port} (ATLAS_ES_URL; `make run` records the URL it started in its dev.env)\n"
    )


def test_an_unknown_review_mode_is_refused_by_the_cli(acme) -> None:
    before = snapshot()
    with pytest.raises(CommandError) as info:
        call_command("atlas_tenant", "update", "acme", "--review-mode", "always", stdout=StringIO(), stderr=StringIO())
    assert "invalid choice: 'always'" in str(info.value)
    assert snapshot() == before and Tenant.objects.get(slug="acme").review_mode == "off"


def test_the_cli_sets_whether_consolidation_merges_scopes(acme) -> None:
    out = StringIO()
    call_command("atlas_tenant", "update", "acme", "--merge-scopes", "on", stdout=out, stderr=StringIO())
    assert out.getvalue().strip() == "tenant acme: consolidation merges scopes on"
    assert Tenant.objects.get(slug="acme").consolidation_merge_scopes is True
    record = AuditRecord.objects.filter(action="tenant.consolidation_merge_scopes").latest("pk")
    assert (record.target, record.detail) == ("acme", {"from": False, "to": True})
    before = snapshot()
    with pytest.raises(CommandError, match="nothing to change: give --review-mode, --merge-scopes"):
        call_command("atlas_tenant", "update", "acme", stdout=StringIO(), stderr=StringIO())
    assert snapshot() == before
