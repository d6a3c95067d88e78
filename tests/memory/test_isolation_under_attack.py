"""Isolation while the gateway is under attack: two tenants write and recall concurrently through the memory
services (real engine, code-level filter off), while a third tenant's read-only DLS key fires generated
attack requests at the gateway over raw HTTP.

Asserted: each subject's recalls return only its own memories and its tenant's catalog; every write of
the two tenants landed exactly once; the attacker saw none of their secret tokens, never got a 5xx or a
malformed error, and changed nothing (superuser snapshot before/after, with the two tenants' own writes
accounted for). DLS is the only guard here, as in Elasticsearch: the tenant key's role query filters
every read (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/document-level-security.html),
and ``read`` grants no write (x-pack/plugin/core/.../authz/privilege/IndexPrivilege.java).
"""

from __future__ import annotations

import random
import secrets
import threading
import time
import uuid
from typing import Any

import pytest
from django.db import connections

from memory.elastic import store
from memory.elastic.indices import alias_name
from memory.recall import memory_recall
from memory.services.prepare import MEMORY_TYPES, catalog_prepare, embed_into
from memory.services.writes import episode_write, fact_write
from tenants import services
from tenants.models import ApiKeyCredential, MemorySubject, Tenant
from tenants.secrets import secret_decrypt
from tests.embedded_es.adversarial import AdvFixture, RawClient, invariant_problems, snapshot, snapshot_diff
from tests.embedded_es.attack_requests import READ_FAMILIES, WRITE_FAMILIES, RandomChooser, attack_request

WRITES_PER_SUBJECT = 8
ATTACK_SECONDS_MAX = 45.0
SEED = 20261201


@pytest.fixture(autouse=True)
def dls_only(settings):
    settings.ATLAS_CODE_FILTER = False
    settings.ATLAS_USAGE_RECORDING = "off"


def _tenant_with_subject(slug: str) -> tuple[Tenant, MemorySubject]:
    tenant = services.tenant_create(slug=f"{slug}-{uuid.uuid4().hex[:8]}", name=slug, actor="test")
    return tenant, services.subject_create(tenant=tenant, external_id="maya", actor="test")


def _tenant_key(tenant: Tenant) -> str:
    credential = ApiKeyCredential.objects.get(
        kind=ApiKeyCredential.Kind.TENANT, tenant=tenant, subject=None, invalidated_at__isnull=True
    )
    return secret_decrypt(credential.secret_encrypted)


def _catalog(subject: MemorySubject, text: str) -> str:
    from memory.scope import SubjectScope

    scope = SubjectScope.of(subject)
    entry = catalog_prepare(tenant_id=scope.tenant_id, title="catalog", text=text)
    embed_into([entry])
    store.memory_index(
        scope.writer(), memory_type="catalog", memory_id=entry.memory_id, source=entry.source, refresh=True
    )
    return entry.memory_id


class Subject:
    """One writer/recaller thread's plan and what it observed."""

    def __init__(self, subject: MemorySubject, tokens: list[str]) -> None:
        self.subject = subject
        self.tokens = tokens
        self.written: dict[str, str] = {}  # memory id -> token
        self.foreign_hits: list[dict[str, Any]] = []
        self.errors: list[BaseException] = []

    def run(self, allowed: set[str]) -> None:
        try:
            for n, token in enumerate(self.tokens):
                text = f"note {n} about the quarterly budget {token}"
                memory = (fact_write if n % 3 == 2 else episode_write)(subject=self.subject, text=text)
                self.written[memory["id"]] = token
                hits = memory_recall(subject=self.subject, query="quarterly budget note", k=20).hits
                mine = allowed | set(self.written)
                self.foreign_hits += [h for h in hits if h["id"] not in mine]
        except BaseException as exc:  # reported by the test, not swallowed
            self.errors.append(exc)
        finally:
            connections.close_all()


def _memory_indices() -> str:
    return ",".join(alias_name(t) for t in (*MEMORY_TYPES, "archive"))


def test_tenants_stay_isolated_while_a_third_tenant_attacks(atlas_es, transactional_db) -> None:
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    (_, maya_a), (_, maya_b) = _tenant_with_subject("iso-a"), _tenant_with_subject("iso-b")
    attacker_tenant, _ = _tenant_with_subject("iso-x")
    plans = {
        "a": Subject(maya_a, [f"zqsecret{secrets.token_hex(6)}" for _ in range(WRITES_PER_SUBJECT)]),
        "b": Subject(maya_b, [f"zqsecret{secrets.token_hex(6)}" for _ in range(WRITES_PER_SUBJECT)]),
    }
    catalogs = {
        "a": {_catalog(maya_a, f"shared budget catalog of tenant a {secrets.token_hex(4)}")},
        "b": {_catalog(maya_b, f"shared budget catalog of tenant b {secrets.token_hex(4)}")},
    }
    admin = RawClient.basic(atlas_es.url, atlas_es.username, atlas_es.password)
    before = snapshot(admin, _memory_indices(), size=10000, sources=())
    # Every token exists before the threads start, so a leak cannot race the list of secrets.
    fixture = AdvFixture(
        url=atlas_es.url,
        docs={},
        visible=set(),
        hidden_ids=sorted(catalogs["a"] | catalogs["b"]),
        secrets=[t.encode() for plan in plans.values() for t in plan.tokens],
    )
    attacker = RawClient.api_key(atlas_es.url, _tenant_key(attacker_tenant))
    prefix = alias_name("semantic").rsplit("-", 1)[0]
    expressions = [f"{prefix}-*", f"{prefix}-semantic", f"{prefix}-episodic,{prefix}-catalog", f"{prefix}-catalog"]
    chooser = RandomChooser(random.Random(SEED), expressions * 10)  # mostly the deployment's own names
    attack_problems: list[str] = []
    accepted_writes: list[str] = []  # write-family attacks answered 2xx: the likely cause of any change
    sent = 0
    stop = threading.Event()

    def attack() -> None:
        nonlocal sent
        deadline = time.monotonic() + ATTACK_SECONDS_MAX
        while not stop.is_set() and time.monotonic() < deadline:
            ids = [i for plan in plans.values() for i in list(plan.written)] or fixture.hidden_ids
            families = READ_FAMILIES if chooser.integer(0, 2) else WRITE_FAMILIES
            request = attack_request(chooser, ids, families)
            try:
                response = attacker.send(request)
            except OSError as exc:
                attack_problems.append(f"{request.describe()}: {exc}")
                continue
            sent += 1
            if request.family in WRITE_FAMILIES and response.status < 300:
                accepted_writes.append(f"{request.describe()} -> {response.status}")
            attack_problems.extend(
                f"{request.describe()} -> {p}" for p in invariant_problems(fixture, request, response)
            )

    threads = [threading.Thread(target=plans[k].run, args=(catalogs[k],)) for k in plans]
    attacker_thread = threading.Thread(target=attack)
    attacker_thread.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    stop.set()
    attacker_thread.join(timeout=30)
    attacker.close()

    after = before
    try:
        after = snapshot(admin, _memory_indices(), size=10000, sources=())
        _assert_isolated(plans, before, after, sent, attack_problems, accepted_writes)
    finally:
        admin.close()
        if before["aliases"] != after["aliases"] or before["mappings"] != after["mappings"]:
            from memory.elastic.bootstrap import cluster_bootstrap

            cluster_bootstrap()  # put back what the attack broke, for the rest of the session


def _assert_isolated(plans, before, after, sent, attack_problems, accepted_writes) -> None:
    cause = f"\nwrite attacks the gateway accepted: {accepted_writes[:5]}"
    for plan in plans.values():
        assert not plan.errors, f"{plan.errors}{cause}"
        assert len(plan.written) == WRITES_PER_SUBJECT
        assert plan.foreign_hits == [], plan.foreign_hits
    assert sent > 20, "the attacker barely ran"
    assert attack_problems == [], attack_problems[:5]

    assert after["total"] == len(after["docs"]), "more documents than one snapshot page holds"
    written = {i for plan in plans.values() for i in plan.written}
    new_docs = {(index, doc_id) for index, doc_id, _, _ in after["docs"]} - {(i, d) for i, d, _, _ in before["docs"]}
    assert sorted(d for _, d in new_docs) == sorted(written), f"writes landed not exactly once{cause}"
    kept = [doc for doc in after["docs"] if doc[1] not in written]
    assert kept == before["docs"], f"a document that existed before the attack changed{cause}"
    assert after["total"] == before["total"] + len(written)
    for key in ("aliases", "mappings", "settings", "api_keys"):
        assert not snapshot_diff({key: before[key]}, {key: after[key]}), cause
