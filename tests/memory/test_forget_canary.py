"""Forgetting removes every copy of the text: one canary string planted through every write path is found
nowhere after the subject is forgotten — not in any index (archive and every index generation included),
not in the embedded engine's files, not in the SQLite file read raw, not in the broker's folder, not in
the logs, not in any cache.

Write paths: REST (live server, with a retried ``Idempotency-Key`` POST), MCP (official client), import,
consolidation (fake LLM: a written fact and a dropped one), the dashboard's correction and the admin's edit.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.db import connection, connections, models
from django.db.models.functions import Cast
from django.urls import reverse
from elasticsearch import helpers

from atlas_site.elastic.client import bootstrap_client
from memory import selectors
from memory.consolidation.run import consolidation_run
from memory.elastic.bootstrap import cluster_bootstrap
from memory.inference import embeddings
from memory.inference.embeddings import embedding_provider
from memory.models import ConsolidationRun
from memory.portable.lines import memories_import
from memory.services import writes
from memory.services.reindex import index_reindex
from tenants import services, tokens
from tenants.models import ApiKeyCredential, AuditRecord, MemorySubject, Person
from tests.external_cluster import side_prefix
from tests.fake_llm import empty_plan, fact, llm_serving
from tests.memory.dashboard.conftest import linked_person
from tests.memory.mcp.conftest import call, payload

pytestmark = pytest.mark.django_db(transaction=True)
PREFIX = side_prefix("canary")


@pytest.fixture
def canary_prefix(atlas_es, settings):
    """Indices of their own, so a reindex (a second index generation) touches no other test's."""
    settings.ATLAS_ES_INDEX_PREFIX = PREFIX
    cluster_bootstrap()
    es = bootstrap_client()
    yield es
    es.indices.delete(index=",".join(es.indices.get(index=f"{PREFIX}-*")))
    for policy in ("archive-policy", "archive-keep-policy"):
        es.options(ignore_status=404).ilm.delete_lifecycle(name=f"{PREFIX}-{policy}")
    es.options(ignore_status=404).indices.delete_index_template(name=f"{PREFIX}-archive-template")


@pytest.fixture
def llm(settings):
    with llm_serving(settings, ATLAS_LLM_API_KEY="sk-test-fake-key", ATLAS_LLM_RETRIES=1, ATLAS_LLM_TIMEOUT=30) as fake:
        yield fake


def _api(server, token: str):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"

    def request(method: str, path: str, **kwargs) -> requests.Response:
        return session.request(method, f"{server.url}/api/v1/{path}", timeout=120, **kwargs)

    return request


def _engine_files_holding(canary: str, data_dir: Path | None) -> list[str]:
    """The embedded engine's data folder read raw (None: a real cluster, whose disk is not ours to read)."""
    return [
        f"engine file {path.relative_to(data_dir)}"
        for path in (data_dir.rglob("*") if data_dir else ())
        if path.is_file() and canary.encode() in path.read_bytes()
    ]


def _rows_holding(canary: str) -> list[str]:
    """Rows of any model whose text, character or JSON columns hold the canary."""
    found = []
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, models.CharField | models.TextField | models.JSONField):
                rows = model._default_manager.annotate(_as_text=Cast(field.name, models.TextField()))
                if rows.filter(_as_text__contains=canary).exists():
                    found.append(f"database rows {model._meta.db_table}.{field.column}")
    return found


def _cache_entries_holding(needle: bytes) -> list[str]:
    """Keys of Django's cache whose key or stored value holds the bytes (values are pickles, which keep
    str as UTF-8): local memory, or Redis (what production and the PostgreSQL/Redis CI run use)."""
    backend = cache._cache
    if isinstance(backend, dict):  # LocMemCache
        return [key for key, value in list(backend.items()) if needle in key.encode() or needle in value]
    client = backend.get_client(None)  # django.core.cache.backends.redis.RedisCacheClient
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "")
    return [
        key.decode()
        for key in client.scan_iter(match=f"{prefix}*")
        if needle in key or needle in (client.get(key) or b"")
    ]


def _places_holding(canary: str, es, data_dir: Path | None) -> list[str]:
    """Every place the canary is still found, named."""
    found: list[str] = []
    needle = canary.encode()
    # Every index of the deployment, whatever alias points at it (old generations too), read as the superuser.
    for index in sorted(es.indices.get(index=f"{PREFIX}-*")):
        for hit in helpers.scan(es, index=index, query={"query": {"match_all": {}}}):
            if canary in json.dumps(hit["_source"]):
                found.append(f"index {index} doc {hit['_id']}")
    found += _engine_files_holding(canary, data_dir)
    # Every text column of every table (any database), then SQLite's file read raw (rows, free pages,
    # the journal or write-ahead log beside it).
    found += _rows_holding(canary)
    for alias in connections:
        connections[alias].close()
    if connection.vendor == "sqlite":
        database = Path(connection.settings_dict["NAME"])
        for path in (database, Path(f"{database}-wal"), Path(f"{database}-journal")):
            if path.exists() and needle in path.read_bytes():
                found.append(f"database file {path.name}")
    # The embedded broker's folder: queued task messages and stored task results.
    broker = Path(settings.CELERY_BROKER_DIR)
    for path in broker.rglob("*") if broker.exists() else ():
        if path.is_file() and needle in path.read_bytes():
            found.append(f"broker file {path.relative_to(broker)}")
    found += [f"django cache {key}" for key in _cache_entries_holding(needle)]
    # The query-embedding caches (one per model) are keyed by the query's text.
    for provider in (embedding_provider(), *embeddings._extra_providers.values()):
        if any(canary in text for text in list(provider.query_cache._entries)):
            found.append(f"query-embedding cache of {provider.model_id}")
    return found


def test_a_canary_planted_through_every_write_path_is_found_nowhere_after_forgetting(
    canary_prefix, atlas_es, atlas_server, llm, client, caplog, settings
) -> None:
    data_dir = atlas_es.server.data_dir if atlas_es.server else None  # None: an external cluster (ATLAS_TEST_ES_URL)
    caplog.set_level(logging.INFO)
    settings.ATLAS_USAGE_RECORDING = "off"  # no worker here: a queued use-count task would wait forever
    # Letters only: nothing a secret or card-number guard would redact on the way.
    canary = "zq" + "".join(chr(ord("a") + int(c, 16)) for c in uuid.uuid4().hex[:12]) + "canary"
    es = canary_prefix
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"canary-{uuid.uuid4().hex[:6]}", name="Canary", actor="test")
    maya = services.subject_create(tenant=tenant, external_id="maya", actor="test")
    tom = services.subject_create(tenant=tenant, external_id="tom", actor="test")
    token = tokens.token_create(tenant=tenant, name="svc", scopes="read,write,forget", actor="test").secret
    api = _api(atlas_server, token)

    # REST, a fact posted and retried with the same Idempotency-Key (replayed), an episode, a recall.
    sent = {"text": f"Maya's locker code is {canary}", "fact_type": "identity"}
    first = api("POST", "subjects/maya/facts", json=sent, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == 201, first.text
    retried = api("POST", "subjects/maya/facts", json=sent, headers={"Idempotency-Key": "k-1"})
    assert retried.headers.get("Idempotent-Replayed") == "true" and retried.json() == first.json()
    said = api("POST", "subjects/maya/episodes", json={"text": f"remember {canary} for me", "session_id": "s1"})
    assert said.status_code == 201, said.text
    assert api("POST", "subjects/maya/recall", json={"query": f"what is {canary}?", "k": 3}).status_code == 200
    # MCP, with the official client.
    remembered = payload(
        call(
            atlas_server.url,
            token,
            "remember",
            {"kind": "episode", "text": f"my badge says {canary}", "subject": "maya"},
        )
    )
    # Import.
    line = {"user_id": "maya", "memory_type": "semantic", "text": f"Imported: {canary} is Maya's alias"}
    report = memories_import(tenant=tenant, lines=[json.dumps(line)], create_subjects=False, actor="test")
    assert report.errors == []
    # Consolidation with the fake LLM: one fact written, one dropped (below the confidence floor).
    llm.script(
        empty_plan(
            facts=[
                fact(f"Maya keeps {canary} in her wallet", [said.json()["id"]]),
                fact(f"Maya perhaps likes {canary}", [remembered["id"]], confidence=0.2),
            ]
        )
    )
    outcome = consolidation_run(subject=maya)
    assert outcome.status == "done", outcome.error
    run = ConsolidationRun.objects.get(pk=outcome.run.pk)
    assert canary in json.dumps(run.plan) and canary in json.dumps(run.rejected), run.rejected
    # The dashboard's correction (the person's own), and the admin's edit (an operator's).
    plain = writes.fact_write(subject=maya, text="Maya's favourite colour is green", fact_type="preference")
    client.force_login(linked_person("maya@example.org", maya))
    etag = writes.memory_etag(selectors.memory_hit(subject=maya, memory_id=plain["id"])["_source"])
    corrected = client.post(f"/memory/{plain['id']}/", {"text": f"Maya's favourite colour is {canary}", "etag": etag})
    assert corrected.status_code == 302, corrected.content
    other = writes.fact_write(subject=maya, text="Maya works from Lisbon", fact_type="identity")
    operator = Person.objects.create_superuser(email="ops@example.com", password="ops-password-123")
    operator.user_permissions.set(Permission.objects.filter(content_type__app_label="tenants"))
    client.force_login(operator)
    etag = writes.memory_etag(selectors.memory_hit(subject=maya, memory_id=other["id"])["_source"])
    url = reverse("admin:tenants_memorysubject_memory", args=[maya.pk, other["id"]])
    assert client.post(url, {"text": f"Maya works from {canary} street", "etag": etag}).status_code == 302
    # Tom's memories are not Maya's: they stay.
    toms = writes.fact_write(subject=tom, text="Tom likes chess", fact_type="preference")

    # Index generations: a reindex moves the facts to a new index behind the alias (and deletes the old
    # one); a copy an earlier reindex left behind, unaliased, must be reached by forgetting too.
    moved = index_reindex(memory_type="semantic")
    assert not es.indices.exists(index=moved.source_index)  # the old generation went after the swap
    leftover = f"{PREFIX}-semantic-v0"
    (mapping,) = es.indices.get_mapping(index=f"{PREFIX}-semantic").values()
    es.indices.create(index=leftover, mappings=mapping["mappings"])
    copies = [
        {"_index": leftover, "_id": hit["_id"], "_source": hit["_source"]}
        for hit in helpers.scan(es, index=f"{PREFIX}-semantic", query={"query": {"match_all": {}}})
    ]
    helpers.bulk(es, copies, refresh="wait_for")
    planted = _places_holding(canary, es, data_dir)
    assert any(p.startswith(f"index {leftover}") for p in planted)
    # The search sees the canary in each kind of store it was planted in (the broker and logs hold none).
    # The stored Idempotency-Key answer is in Redis when it is configured, else in the database.
    kinds = {"index", "database", "query-embedding"} | ({"django"} if settings.REDIS_URL else set())
    assert kinds <= {p.split()[0] for p in planted}, planted
    if not settings.REDIS_URL:
        assert any(p.startswith("database rows tenants_idempotencyrecord.") for p in planted), planted
    assert any(p.startswith("database rows memory_consolidationrun.") for p in planted), planted

    # Forget the subject over REST (what an agent does), then look everywhere.
    forgotten = api("DELETE", "subjects/maya/memories", json={"confirm": "maya"})
    assert forgotten.status_code == 200, forgotten.text
    # The engine snapshots its documents to disk once writes have been quiet for about a second
    # (docs/embedded-elasticsearch.md "Persistence"): the snapshot before forgetting still holds them.
    deadline = time.monotonic() + 20
    while _engine_files_holding(canary, data_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _places_holding(canary, es, data_dir)
    assert left == [], "\n".join(left)
    assert canary not in caplog.text
    receipt = forgotten.json()["receipt"]
    assert receipt["indices"]["semantic"]["count"] >= 4 and receipt["indices"]["episodic"]["count"] == 2
    assert plain["id"] in receipt["indices"]["semantic"]["ids"]
    assert receipt["run_records"] == {"count": 1, "ids": [str(run.pk)], "truncated": False}
    assert receipt["idempotency_records"]["count"] == 1
    assert receipt["query_embedding_cache"]["count"] >= 1
    assert not ConsolidationRun.objects.filter(subject=maya).exists()
    assert all(canary not in json.dumps(r.detail) + r.target for r in AuditRecord.objects.all())
    assert selectors.memory_get(subject=tom, memory_id=toms["id"])["text"] == "Tom likes chess"
    assert MemorySubject.objects.filter(pk=maya.pk).exists()  # the subject stays; its memories are gone


_SECURE_DELETE_PROBE = """
import django
from django.db import connection
from django.db.backends.sqlite3 import base

django.setup()
real_connect = base.Database.connect


def connect_as_a_build_without_it(*args, **kwargs):
    opened = real_connect(*args, **kwargs)
    opened.execute("PRAGMA secure_delete=0")
    return opened


base.Database.connect = connect_as_a_build_without_it
with connection.cursor() as cursor:
    cursor.execute("PRAGMA secure_delete")
    print(connection.vendor, cursor.fetchone()[0])
"""


def test_the_embedded_sqlite_database_overwrites_what_it_deletes(tmp_path: Path) -> None:
    """SQLite keeps deleted rows' bytes in its free pages unless ``secure_delete`` is on
    (https://www.sqlite.org/pragma.html#pragma_secure_delete); its default is a compile-time choice
    (Debian's build turns it on, others do not), so the embedded default turns it on itself. Checked in
    a process with the embedded default's settings (no DATABASE_URL), whatever database this run uses,
    on a connection opened as a SQLite built without it would be."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DJANGO_SETTINGS_MODULE="atlas_site.settings", ATLAS_DATA_DIR=str(tmp_path), ATLAS_ENV_FILE=os.devnull)
    probe = subprocess.run(
        [sys.executable, "-c", _SECURE_DELETE_PROBE],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["sqlite", "1"]
