"""The TypeScript SDK (clients/typescript) against the live server: Node's own test runner runs its tests
(clients/typescript/test/*.test.js) with the server's URL, real tokens and real proxies in front of it
(tests/clients/proxy.py) in its environment; what the proxies saw is checked here after."""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from contextlib import ExitStack

import pytest
from django.db import connection

from atlas_site.idempotency import idempotency_record_claim, idempotency_record_release
from tenants import services, tokens
from tenants.models import ApiToken, Tenant

from .node import PACKAGE, ROOT, node_run, node_test_files, node_tests, output_of
from .proxy import proxy_to

pytestmark = pytest.mark.django_db(transaction=True)

DOCS = ROOT / "docs" / "clients.md"
MAIN_README = ROOT / "README.md"

GATED = {"rate-limit.test.js"}  # runs only with the server's rate limit lowered (its own test below)
#: Each proxy's script (tests/clients/proxy.py), by the name the Node tests know it as (ATLAS_PROXY_<name>).
SCRIPTS = {
    "503": ["503"],
    "LOST": ["lost", "lost"],
    "READ": ["lost", "503"],
    "UNKEYED": ["lost", "503"],
    "EXPORT": ["lost", "503", "forward", "cut"],
}


def _environment(world) -> dict[str, str]:
    return {"ATLAS_URL": world.url, "ATLAS_TOKEN": world.svc, "ATLAS_TOKEN_RO": world.ro, "ATLAS_TOKEN_OWN": world.own}


def _review_tenant() -> dict[str, str]:
    """A tenant where every agent write waits for the person's review: a writer's and a reviewer's token."""
    tenant = services.tenant_create(slug=f"ts-review-{uuid.uuid4().hex[:8]}", name="TS review", actor="test")
    Tenant.objects.filter(pk=tenant.pk).update(review_mode="agents")
    services.subject_create(tenant=tenant, external_id="alice", actor="test")
    return {
        "ATLAS_REVIEW_WRITER": tokens.token_create(tenant=tenant, name="svc", scopes="read,write", actor="t").secret,
        "ATLAS_REVIEW_REVIEWER": tokens.token_create(tenant=tenant, name="rev", scopes="read,review", actor="t").secret,
    }


def _webhook_tenants(receiver) -> dict[str, str]:
    """A tenant of its own for the webhook tests (its endpoints and delivery log are then exactly theirs), its
    admin's token, another tenant's, and the loopback receiver's URL."""
    tenant = services.tenant_create(slug=f"ts-hooks-{uuid.uuid4().hex[:8]}", name="TS webhooks", actor="test")
    services.subject_create(tenant=tenant, external_id="alice", actor="test")
    other = services.tenant_create(slug=f"ts-other-{uuid.uuid4().hex[:8]}", name="TS other", actor="test")
    return {
        "ATLAS_WEBHOOK_ADMIN": tokens.token_create(tenant=tenant, name="admin", scopes="read,write", actor="t").secret,
        "ATLAS_WEBHOOK_OTHER": tokens.token_create(tenant=other, name="admin", scopes="read,write", actor="t").secret,
        "ATLAS_WEBHOOK_RECEIVER": receiver.url,
    }


def _held_elsewhere(token: ApiToken):
    """A proxy fate: the server's own claim on the request's Idempotency-Key, as a concurrent retry holding
    it would, released half a second later (the server answers 409 "still running" meanwhile)."""

    def hold(path: str, headers: dict[str, str], body: bytes) -> None:
        slot = "idem:" + hashlib.sha256(f"{token.pk}:{path}:{headers['Idempotency-Key']}".encode()).hexdigest()
        try:
            assert idempotency_record_claim(slot=slot, digest=hashlib.sha256(body).hexdigest())
        finally:
            connection.close()
        threading.Timer(0.5, _release, kwargs={"slot": slot}).start()

    return hold


def _release(*, slot: str) -> None:
    try:
        idempotency_record_release(slot=slot)
    finally:
        connection.close()


def test_the_typescript_sdk_against_the_live_server(world, receiver) -> None:
    held = _held_elsewhere(ApiToken.objects.get(tenant=world.tenant, name="svc"))
    scripts = {**SCRIPTS, "RUNNING": [held, "forward", held]}
    with ExitStack() as stack:
        proxies = {name: stack.enter_context(proxy_to(world.url, script)) for name, script in scripts.items()}
        env = _environment(world) | _review_tenant() | _webhook_tenants(receiver)
        env |= {f"ATLAS_PROXY_{n}": p.url for n, p in proxies.items()}
        output = node_tests(*sorted(set(node_test_files()) - GATED), env=env)
    assert not re.search(r"^# (skipped|cancelled|todo) [1-9]", output, flags=re.MULTILINE), output
    # A 503 and a lost answer: each write sent again with the same key (the Node tests saw one memory stored).
    for name, writes in (("503", 1), ("LOST", 2)):
        seen = proxies[name].seen
        assert len(seen) == 2 * writes and len({s.idempotency_key for s in seen}) == writes, (name, seen)
        assert all(s.method == "POST" and s.idempotency_key for s in seen), (name, seen)
    assert [s.method for s in proxies["READ"].seen] == ["GET"] * 3
    assert [s.method for s in proxies["UNKEYED"].seen] == ["PATCH", "DELETE"]  # never sent twice
    assert len(proxies["EXPORT"].seen) == 4
    running = proxies["RUNNING"].seen
    assert len({s.idempotency_key for s in running}) == 2 and len(running) >= 3, running


def test_the_rate_limit_is_waited_out_or_raised(world, settings) -> None:
    settings.ATLAS_API_RATE = "2/s"
    with proxy_to(world.url, []) as proxy:
        env = _environment(world) | {"ATLAS_RATE_LIMITED": "1", "ATLAS_PROXY_LIMIT": proxy.url}
        output = node_tests(*sorted(GATED), env=env)
        assert len(proxy.seen) > 5  # some writes were refused with 429, then retried
    assert re.search(r"^# pass [1-9]", output, flags=re.MULTILINE), output


def _example_run(example: str, tmp_path, *, env: dict[str, str] | None = None):
    """An example run as a user's project would run it: the package imported by its name (a node_modules
    link to it)."""
    (tmp_path / "node_modules" / "@atlas-memory").mkdir(parents=True)
    (tmp_path / "node_modules" / "@atlas-memory" / "client").symlink_to(PACKAGE, target_is_directory=True)
    script = tmp_path / "example.mjs"
    script.write_text(example)
    result = node_run(str(script), cwd=tmp_path, env=env)
    assert result.returncode == 0, output_of(result)
    return result.stdout


def test_the_readme_example_runs_as_printed(world, tmp_path) -> None:
    (example,) = re.findall(r"```js\n(.*?)```", (PACKAGE / "README.md").read_text(), flags=re.DOTALL)
    placeholder = 'baseUrl: "http://127.0.0.1:8000", token: "atlas_…"'
    assert placeholder in example
    printed = _example_run(example.replace(placeholder, f'baseUrl: "{world.url}", token: "{world.svc}"'), tmp_path)
    assert "Alice is allergic to peanuts" in printed


def test_the_main_readmes_example_runs_as_printed(world, tmp_path) -> None:
    (example,) = re.findall(r"```js\n(.*?)```", MAIN_README.read_text(), flags=re.DOTALL)
    placeholder = 'baseUrl: "http://127.0.0.1:8000", token: "atlas_…"'
    assert placeholder in example and len(example.splitlines()) <= 15
    printed = _example_run(example.replace(placeholder, f'baseUrl: "{world.url}", token: "{world.svc}"'), tmp_path)
    lines = printed.splitlines()
    assert lines[0] == "edit the newest version instead: true", printed
    assert any(line.endswith("semantic Alice lives in Lisbon") for line in lines[1:]), printed


def test_the_docs_example_runs_as_printed(world, tmp_path) -> None:
    """docs/clients.md's TypeScript example, its URL swapped for the live server's (the token from the
    environment, as printed)."""
    section = DOCS.read_text().split("\n## TypeScript\n", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```js\n(.*?)```", section, flags=re.DOTALL)
    printed = _example_run(
        example.replace('"http://127.0.0.1:8000"', f'"{world.url}"'), tmp_path, env={"ATLAS_TOKEN": world.svc}
    )
    lines = printed.splitlines()
    assert lines[-1].startswith("edit the newest version instead: ") and "Lives in Porto" in printed, printed
