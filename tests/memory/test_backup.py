"""atlas_backup / atlas_restore: a round trip while the engine serves writes, and every refusal.

The round trip backs up the session's running embedded Elasticsearch and the test database while a
thread keeps writing, restores into a new empty data directory, starts a second embedded server on
it and a separate ``manage.py`` process on the restored SQLite file, and compares what that stack
answers (an old token, each key's reads, recall, a chain, counts) with what the first one answered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from atlas_site.errors import DependencyUnavailable, ValidationFailed
from embedded_es import EmbeddedElasticsearch
from memory.elastic.maintenance import (
    cluster_admin_client,
    index_write_blocked,
    indices_settings,
    indices_write_block_set,
)
from memory.recall import memory_recall
from memory.selectors import catalog_list, memory_chain_get, memory_counts
from memory.services.backup import ENGINE_STATE, ES_DIR, SiteLayout, site_backup, write_block_lift
from memory.services.catalog import catalog_entry_write
from memory.services.forget import memory_forget
from memory.services.restore import site_restore
from memory.services.writes import episode_write, fact_write
from tenants import services, tokens
from tenants.secrets import secrets_reset

ROOT = Path(__file__).resolve().parents[2]
QUERY = "where does Maya work"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.embedded_only(reason="backs up and restores the embedded server's files"),
]


@pytest.fixture(autouse=True)
def _no_usage_recording(settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"


def _layout(cluster, data_dir: Path) -> SiteLayout:
    """The session's stack as a backup sees it: the test database file and the session's embedded server."""
    return SiteLayout(
        data_dir=data_dir, database=Path(connection.settings_dict["NAME"]), es_data_dir=cluster.server.data_dir
    )


def _restored_layout(data_dir: Path) -> SiteLayout:
    return SiteLayout(data_dir=data_dir, database=data_dir / "atlas.sqlite3", es_data_dir=data_dir / "es")


def _recall_view(subject) -> list[tuple[str, str]]:
    # Facts only: the thread's episodes (written after the backup too) then change no statistic it scores with.
    return [
        (h["id"], h["text"]) for h in memory_recall(subject=subject, query=QUERY, k=10, memory_types=["semantic"]).hits
    ]


PROBE = """
import json
from memory.recall import memory_recall
from memory.selectors import catalog_list, memory_chain_get, memory_counts
from tenants.tokens import token_authenticate
principal = token_authenticate(presented={secret!r})
subject = principal.subject
hits = memory_recall(subject=subject, query={query!r}, k=10, memory_types=["semantic"]).hits
print(json.dumps({{
    "subject": subject.external_id,
    "tenant": principal.tenant.slug,
    "recall": [[h["id"], h["text"]] for h in hits],
    "chain": [m["id"] for m in memory_chain_get(subject=subject, memory_id={chain_id!r})],
    "counts": memory_counts(subject=subject),
    "catalog": [e["id"] for e in catalog_list(tenant=principal.tenant)["memories"]],
    "acked": sorted(memory_counts(subject=principal.tenant.subjects.get(external_id="tom")).items()),
}}))
"""


def _probe_restored(data_dir: Path, server: EmbeddedElasticsearch, *, secret: str, chain_id: str) -> dict:
    """Ask a separate Django process on the restored SQLite file and engine what the restored stack holds."""
    env = {
        **os.environ,
        "ATLAS_DATA_DIR": str(data_dir),
        "ATLAS_ENV_FILE": os.devnull,
        "ATLAS_ES_URL": server.url,
        "ATLAS_ES_PASSWORD": server.password,
        "ATLAS_ES_INDEX_PREFIX": settings.ATLAS_ES_INDEX_PREFIX,
        "ATLAS_USAGE_RECORDING": "off",
    }
    env.pop("DATABASE_URL", None)
    code = PROBE.format(secret=secret, query=QUERY, chain_id=chain_id)
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


class Writer(threading.Thread):
    """Writes episodes of ``subject`` until stopped, noting when each was acknowledged or refused."""

    def __init__(self, subject) -> None:
        super().__init__(daemon=True)
        self.subject = subject
        self.stop = threading.Event()
        self.acked: list[tuple[float, str]] = []
        self.refused: list[float] = []
        self.attempts: list[float] = []  # when each write was sent
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            i = 0
            while not self.stop.is_set():
                i += 1
                self.attempts.append(time.monotonic())
                try:
                    written = episode_write(
                        subject=self.subject, text=f"Tom says hello for the {i}th time", refresh=False
                    )
                except DependencyUnavailable:
                    self.refused.append(time.monotonic())
                    time.sleep(0.05)
                    continue
                self.acked.append((time.monotonic(), written["id"]))
        except BaseException as exc:  # noqa: BLE001 — reported by the test
            self.errors.append(exc)
        finally:
            connection.close()


class Rotator(threading.Thread):
    """Rotates ``subject``'s API key until stopped: mint, record, invalidate the old — the change a backup
    must never catch half done (the database naming a key the key store has invalidated: every read 401)."""

    def __init__(self, subject) -> None:
        super().__init__(daemon=True)
        self.subject = subject
        self.stop = threading.Event()
        self.rotations = 0
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                services.credential_rotate(actor="test", subject=self.subject)
                self.rotations += 1
                # Rotations back to back with no gap at all starve any SQLite locker (no queue): a CI run's
                # backup waited 30 s for the lock. Operators rotate far less often than every 20 ms.
                time.sleep(0.02)
        except BaseException as exc:  # noqa: BLE001 — reported by the test
            self.errors.append(exc)
        finally:
            connection.close()


def test_round_trip_while_writes_go_on(cluster, tenant, maya, tom, tmp_path) -> None:
    abc = fact_write(subject=maya, text="Maya works at Acme Design", fact_type="identity")
    xyz = fact_write(subject=maya, text="Maya works at Studio Xyz", fact_type="identity", supersedes=[abc["id"]])
    pqr = fact_write(subject=maya, text="Maya works at Pqr Labs", fact_type="identity", supersedes=[xyz["id"]])
    fact_write(subject=maya, text="Maya prefers window seats", fact_type="preference")
    episode_write(subject=maya, text="I started at Pqr Labs this week")
    entry = catalog_entry_write(tenant=tenant, title="Office hours", text="The office opens at nine", actor="test")
    issued = tokens.token_create(tenant=tenant, subject=maya, name="maya's script", scopes=["read"], actor="test")
    before = {
        "subject": "maya",
        "tenant": tenant.slug,
        "recall": [list(hit) for hit in _recall_view(maya)],
        "chain": [m["id"] for m in memory_chain_get(subject=maya, memory_id=xyz["id"])],
        "counts": memory_counts(subject=maya),
        "catalog": [e["id"] for e in catalog_list(tenant=tenant)["memories"]],
    }
    assert before["chain"] == [abc["id"], xyz["id"], pqr["id"]] and entry["id"] in before["catalog"]

    writer, rotator = Writer(tom), Rotator(tom)
    writer.start()
    rotator.start()
    while len(writer.acked) < 3 or rotator.rotations < 2:  # both threads are busy before the backup starts
        time.sleep(0.05)
    started = time.monotonic()
    report = site_backup(destination=tmp_path / "backup", layout=_layout(cluster, tmp_path / "live"))
    ended = time.monotonic()
    time.sleep(0.5)
    for thread in (writer, rotator):
        thread.stop.set()
        thread.join(timeout=60)
    assert writer.errors == [] and rotator.errors == []
    acked_before = {memory_id for at, memory_id in writer.acked if at < started}
    # A write sent during the backup meets the block: refused (503, the indices' write block) or held until
    # the database copy ends (the usage ledger counts each write in SQL first, and the copy holds SQLite's
    # write lock) — never acknowledged inside the backup's window unless it is in the backup.
    during = [at for at in writer.attempts if started <= at <= ended]
    assert writer.refused or during, "the test did not write during the backup"
    assert any(at > started for at, _ in writer.acked), "writes did not resume after the backup"
    # The live indices are writable again.
    assert not any(index_write_blocked(s) for s in indices_settings().values())

    manifest = report.manifest
    assert manifest["credentials"]["missing_from_key_store"] == []
    assert manifest["credentials"]["active_in_database"] >= 3  # the writer, the tenant's and each subject's key
    assert "ATLAS_ENCRYPTION_KEYS" in manifest["not_included"][0]

    target = tmp_path / "restored"
    restored = site_restore(source=tmp_path / "backup", layout=_restored_layout(target))
    assert restored.documents == {name: index["docs"] for name, index in manifest["indices"].items()}
    assert sorted(p.name for p in target.iterdir()) == ["atlas.sqlite3", "es"]

    with EmbeddedElasticsearch(data_dir=target / "es", password="restored-es-password") as server:  # noqa: S106
        after = _probe_restored(target, server, secret=issued.secret, chain_id=xyz["id"])
        admin = cluster_admin_client(url=server.url, password=server.password)
        try:
            episodic = admin.search(
                index=f"{settings.ATLAS_ES_INDEX_PREFIX}-episodic",
                query={"term": {"user_id": str(tom.es_id)}},
                size=10_000,
                source=False,
            )
            restored_ids = {hit["_id"] for hit in episodic["hits"]["hits"]}
            # This tenant's facts: the session's cluster also holds other tests' deliberately half-done chains.
            semantic = admin.search(
                index=f"{settings.ATLAS_ES_INDEX_PREFIX}-semantic",
                query={"term": {"tenant_id": str(tenant.es_id)}},
                size=10_000,
            )
        finally:
            admin.close()
    acked = dict(after.pop("acked"))
    assert after == before
    # Every write acknowledged before the backup started is in it; the copy is one point in time.
    assert acked_before <= restored_ids, sorted(acked_before - restored_ids)[:3]
    assert acked["episodic"] == len(restored_ids) >= len(acked_before)
    facts = {hit["_id"]: hit["_source"] for hit in semantic["hits"]["hits"]}
    for source in facts.values():
        for successor in source.get("superseded_by") or []:
            assert successor in facts  # no chain points at a fact the backup lacks


def test_writes_and_forgets_during_a_write_block_are_a_503(maya) -> None:
    """A blocked index answers 403 ``cluster_block_exception`` (Elasticsearch's reference, "Index blocks":
    ``index.blocks.write`` … "Set to true to disable data write operations against the index"); Atlas
    must answer 503 (try again), not a 500, on a single write, a bulk delete (forget) and bulk writes."""
    kept = fact_write(subject=maya, text="Maya keeps a blue notebook")
    names = sorted(n for n in indices_settings() if n.startswith(f"{settings.ATLAS_ES_INDEX_PREFIX}-"))
    indices_write_block_set(names=names, blocked=True)
    try:
        with pytest.raises(DependencyUnavailable, match="write block"):
            fact_write(subject=maya, text="Maya keeps a red notebook")
        with pytest.raises(DependencyUnavailable, match="write block"):
            memory_forget(subject=maya, memory_id=kept["id"], actor="test")
        with pytest.raises(DependencyUnavailable, match="write block"):
            from memory.elastic import store
            from tenants.selectors import writer_es_client

            store.memories_bulk_index(writer_es_client(), [("episodic", "blocked-1", {"text": "x"})])
    finally:
        indices_write_block_set(names=names, blocked=False)
    assert memory_forget(subject=maya, memory_id=kept["id"], actor="test")["forgotten"] is True


@pytest.fixture
def backup_dir(cluster, maya, tmp_path) -> Path:
    fact_write(subject=maya, text="Maya collects stamps")
    site_backup(destination=tmp_path / "backup", layout=_layout(cluster, tmp_path / "live"))
    return tmp_path / "backup"


def _listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_restore_into_a_non_empty_directory_is_refused(backup_dir, tmp_path) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(ValidationFailed, match="not empty"):
        site_restore(source=backup_dir, layout=_restored_layout(target))
    assert _listing(target) == ["notes.txt"]


def test_restore_allows_only_dev_env_in_the_target(backup_dir, tmp_path) -> None:
    target = tmp_path / "fresh"
    target.mkdir()
    (target / "dev.env").write_text("ATLAS_ENCRYPTION_KEYS=kept\n")
    site_restore(source=backup_dir, layout=_restored_layout(target))
    assert sorted(p.name for p in target.iterdir()) == ["atlas.sqlite3", "dev.env", "es"]


def test_a_tampered_backup_is_refused(backup_dir, tmp_path) -> None:
    state = backup_dir / "es" / "noida" / "elasticsearch.json"
    state.write_bytes(state.read_bytes().replace(b"stamps", b"coins!"))
    target = tmp_path / "fresh"
    with pytest.raises(ValidationFailed, match=r"es/noida/elasticsearch.json does not match its checksum"):
        site_restore(source=backup_dir, layout=_restored_layout(target))
    assert not target.exists()


def test_a_backup_with_an_extra_file_is_refused(backup_dir, tmp_path) -> None:
    (backup_dir / "es" / "security" / "extra.json").write_text("{}")
    with pytest.raises(ValidationFailed, match="does not list"):
        site_restore(source=backup_dir, layout=_restored_layout(tmp_path / "fresh"))


def test_restore_with_other_encryption_keys_is_refused(backup_dir, tmp_path, settings) -> None:
    settings.ATLAS_ENCRYPTION_KEYS = ["Sx2w3rKcDdq0Y2PAg0sQX5R8p0QxJtWnq4Ch8Y6q2mQ="]
    secrets_reset()
    try:
        with pytest.raises(ValidationFailed, match="ATLAS_ENCRYPTION_KEYS cannot open"):
            site_restore(source=backup_dir, layout=_restored_layout(tmp_path / "fresh"))
    finally:
        secrets_reset()
    assert not (tmp_path / "fresh").exists()


def test_backup_into_a_non_empty_directory_is_refused(cluster, maya, tmp_path) -> None:
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "old").write_text("x")
    with pytest.raises(ValidationFailed, match="not an empty directory"):
        site_backup(destination=tmp_path / "backup", layout=_layout(cluster, tmp_path / "live"))
    assert not any(index_write_blocked(s) for s in indices_settings().values())


def test_backup_refuses_a_cluster_that_is_not_the_embedded_one(cluster, maya, tmp_path, settings) -> None:
    settings.ATLAS_ES_URL = "http://127.0.0.1:1"
    with pytest.raises(ValidationFailed, match="ATLAS_ES_URL"):
        site_backup(destination=tmp_path / "backup", layout=_layout(cluster, tmp_path / "live"))
    assert not (tmp_path / "backup").exists()


def test_backup_refuses_postgresql(monkeypatch) -> None:
    monkeypatch.setitem(settings.DATABASES["default"], "ENGINE", "django.db.backends.postgresql")
    with pytest.raises(ValidationFailed, match="pg_dump .* docs/operations.md"):
        SiteLayout.from_settings()


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.django_db(transaction=False)
def test_the_commands_on_a_make_run_data_directory(tmp_path) -> None:
    """The operator's path: `make run`'s layout (ATLAS_DATA_DIR with atlas.sqlite3 and es/), the commands
    finding both from the settings, progress and the encryption-key warning on stderr, a second restore
    into the now full directory refused with one line."""
    live, restored = tmp_path / "live", tmp_path / "restored"
    with EmbeddedElasticsearch(data_dir=live / "es", password="cli-es-password") as server:  # noqa: S106
        env = {
            **os.environ,
            "ATLAS_DATA_DIR": str(live),
            "ATLAS_ENV_FILE": os.devnull,
            "ATLAS_ES_URL": server.url,
            "ATLAS_ES_PASSWORD": server.password,
        }
        env.pop("DATABASE_URL", None)
        memories = tmp_path / "memories.jsonl"
        memories.write_text(
            '{"id": "f1", "user_id": "maya", "memory_type": "semantic", "text": "Maya hides a key under the mat"}\n'
            '{"id": "f2", "user_id": "maya", "memory_type": "semantic", "text": "Maya likes green tea"}\n'
        )
        for step in (
            ("migrate", "-v", "0"),
            ("atlas_es_bootstrap",),
            ("atlas_tenant", "create", "acme", "--name", "A"),
            ("atlas_import", str(memories), "--tenant", "acme", "--create"),
        ):
            done = _manage(*step, env=env)
            assert done.returncode == 0, done.stderr
        backup = _manage("atlas_backup", "--to", str(tmp_path / "backup"), env=env)
        assert backup.returncode == 0, backup.stderr
        assert "atlas_backup: blocking writes to" in backup.stderr
        assert "atlas_backup: writes allowed again" in backup.stderr
        assert "NOT in the backup: ATLAS_ENCRYPTION_KEYS" in backup.stderr
        assert backup.stdout.startswith(f"backed up to {tmp_path / 'backup'}: ")
        again = _manage("atlas_backup", "--to", str(tmp_path / "backup"), env=env)
        assert (again.returncode, again.stderr.strip()) == (
            1,
            f"CommandError: {tmp_path / 'backup'} is not an empty directory: a backup goes into a new one",
        )
        # Forgotten after the backup: the log of the deployment that saw it goes along with the restore.
        assert (
            _manage("atlas_forget", "--tenant", "acme", "--subject", "maya", "--memory", "f1", env=env).returncode == 0
        )
        exported = _manage("atlas_forget_log", "export", "--since-backup", str(tmp_path / "backup"), env=env)
        assert exported.returncode == 0, exported.stderr
        assert [(e["action"], e["subject"]) for e in map(json.loads, exported.stdout.splitlines())] == [
            ("memory.forget", "maya")
        ]
        (tmp_path / "forgets.jsonl").write_text(exported.stdout)
    # The engine stopped: the files are copied as they are, the same documents as while it ran.
    offline = _manage("atlas_backup", "--to", str(tmp_path / "offline"), env=env)
    assert offline.returncode == 0, offline.stderr
    assert "blocking writes" not in offline.stderr
    manifests = [json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("backup", "offline")]
    assert manifests[1]["write_blocked_in_copy"] == []
    docs = [{name: index["docs"] for name, index in m["indices"].items()} for m in manifests]
    semantic = next(n for n in docs[0] if n.startswith(f"{settings.ATLAS_ES_INDEX_PREFIX}-semantic"))
    assert docs[1] == {**docs[0], semantic: docs[0][semantic] - 1}  # f1 was forgotten in between
    restore_env = {**env, "ATLAS_DATA_DIR": str(restored)}
    done = _manage("atlas_restore", "--from", str(tmp_path / "backup"), env=restore_env)
    assert done.returncode == 0, done.stderr
    assert "atlas_restore: backup verified" in done.stderr and "dev.env is missing" in done.stderr
    assert sorted(p.name for p in restored.iterdir()) == ["atlas.sqlite3", "es"]
    listing = sorted(str(p.relative_to(restored)) for p in restored.rglob("*"))
    refused = _manage("atlas_restore", "--from", str(tmp_path / "backup"), env=restore_env)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"CommandError: {restored} is not empty (atlas.sqlite3, es)")
    assert sorted(str(p.relative_to(restored)) for p in restored.rglob("*")) == listing
    with EmbeddedElasticsearch(data_dir=restored / "es", password="cli-es-password") as server:  # noqa: S106
        restored_env = {**restore_env, "ATLAS_ES_URL": server.url}
        replayed = _manage("atlas_forget_log", "replay", str(tmp_path / "forgets.jsonl"), env=restored_env)
        assert (replayed.returncode, replayed.stdout.strip()) == (0, "replayed 1 forget(s): 1 forgotten"), (
            replayed.stderr
        )
        again = _manage("atlas_forget_log", "replay", str(tmp_path / "forgets.jsonl"), env=restored_env)
        assert again.stdout.strip() == "replayed 1 forget(s): 1 already gone"


def test_keys_the_cluster_does_not_know_are_reminted_by_reconcile(backup_dir, maya, tmp_path) -> None:
    """The production restore (docs/operations.md): memory indices restored into a cluster whose security
    state is not the backup's — here the key store left out — then `atlas_key reconcile` replaces every
    key the cluster does not accept, and reads work again."""
    target = tmp_path / "restored"
    site_restore(source=backup_dir, layout=_restored_layout(target))
    (target / "es" / "security" / "api_keys.json").unlink()
    with EmbeddedElasticsearch(data_dir=target / "es", password="restored-es-password") as server:  # noqa: S106
        env = {
            **os.environ,
            "ATLAS_DATA_DIR": str(target),
            "ATLAS_ENV_FILE": os.devnull,
            "ATLAS_ES_URL": server.url,
            "ATLAS_ES_PASSWORD": server.password,
            "ATLAS_ES_INDEX_PREFIX": settings.ATLAS_ES_INDEX_PREFIX,
        }
        env.pop("DATABASE_URL", None)
        count = (
            "from tenants.selectors import subject_get, tenant_get; from memory.selectors import memory_counts; "
            f"tenant = tenant_get(slug={maya.tenant.slug!r}); "
            "print(memory_counts(subject=subject_get(tenant=tenant, external_id='maya'))['semantic'])"
        )
        before = _manage("shell", "-c", count, env=env)
        assert before.returncode == 1 and "refused" in before.stderr  # the key is unknown: reads fail
        reconciled = _manage("atlas_key", "reconcile", env=env)
        assert reconciled.returncode == 0, reconciled.stderr
        assert "'replaced': [" in reconciled.stdout
        after = _manage("shell", "-c", count, env=env)
        assert (after.returncode, after.stdout.strip().splitlines()[-1]) == (0, "1"), after.stderr


def test_backup_refuses_indices_blocked_by_someone_else(cluster, maya, tmp_path) -> None:
    """A block it did not set (atlas_reindex's, or an interrupted backup's) is refused and left alone."""
    name = sorted(n for n in indices_settings() if n.startswith(f"{settings.ATLAS_ES_INDEX_PREFIX}-semantic"))[0]
    indices_write_block_set(names=[name], blocked=True)
    try:
        with pytest.raises(ValidationFailed, match=f"index {name} is already write-blocked"):
            site_backup(destination=tmp_path / "backup", layout=_layout(cluster, tmp_path / "live"))
        blocked = {n for n, s in indices_settings().items() if index_write_blocked(s)}
        assert blocked == {name}  # not lifted by the refusal, and nothing else blocked
        assert list((tmp_path / "backup").iterdir()) == []
    finally:
        indices_write_block_set(names=[name], blocked=False)


def test_backup_refuses_a_stopped_embedded_server_while_atlas_uses_another_cluster(cluster, maya, tmp_path) -> None:
    """Embedded data left in the data directory from before, while ATLAS_ES_URL names a live cluster: copying
    the stale files would be a backup of the wrong store."""
    stale = tmp_path / "es"
    (stale / "security").mkdir(parents=True)
    (stale / "embedded_es.json").write_text(json.dumps({"gateway_url": "http://127.0.0.1:9", "pid": 2**22 + 1}))
    layout = SiteLayout(data_dir=tmp_path, database=Path(connection.settings_dict["NAME"]), es_data_dir=stale)
    with pytest.raises(ValidationFailed, match="answers, but it is not the embedded server"):
        site_backup(destination=tmp_path / "backup", layout=layout)
    assert not (tmp_path / "backup").exists()


def test_restore_refuses_another_index_prefix(backup_dir, tmp_path, settings) -> None:
    """Restored under names the deployment does not read, the memories would be invisible and its bootstrap
    would create empty indices beside them."""
    backed_up = settings.ATLAS_ES_INDEX_PREFIX
    settings.ATLAS_ES_INDEX_PREFIX = "elsewhere"
    with pytest.raises(ValidationFailed, match=f"set ATLAS_ES_INDEX_PREFIX={backed_up} and restore again"):
        site_restore(source=backup_dir, layout=_restored_layout(tmp_path / "fresh"))
    assert not (tmp_path / "fresh").exists()


def test_a_database_locked_too_long_fails_the_backup_and_lifts_the_block(cluster, maya, tmp_path, monkeypatch) -> None:
    import sqlite3

    from memory.services import backup

    monkeypatch.setattr(backup, "DATABASE_LOCK_TIMEOUT_SECONDS", 0.5)
    writer = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a long write transaction of another process
    try:
        with pytest.raises(DependencyUnavailable, match="the database stayed locked"):
            site_backup(destination=tmp_path / "backup", layout=_layout(cluster, tmp_path / "live"))
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert not any(index_write_blocked(s) for s in indices_settings().values())
    assert list((tmp_path / "backup").iterdir()) == []


def test_lift_write_block_after_an_interrupted_backup(cluster, maya, tmp_path) -> None:
    name = sorted(n for n in indices_settings() if n.startswith(f"{settings.ATLAS_ES_INDEX_PREFIX}-episodic"))[0]
    indices_write_block_set(names=[name], blocked=True)  # what a SIGKILLed backup leaves behind
    try:
        assert write_block_lift(layout=_layout(cluster, tmp_path / "live")) == [name]
    finally:
        indices_write_block_set(names=[name], blocked=False)
    assert episode_write(subject=maya, text="writable again")["id"]


def test_back_to_back_writers_do_not_starve_the_backups_write_lock(tmp_path) -> None:
    """A stream of write transactions with a millisecond between them leaves the lock free only for
    moments: SQLite's own busy timeout (100 ms between tries once it has waited a third of a second)
    mostly misses them; the backup's tries every 2 ms take the lock within a few. (Transactions with no
    gap at all can starve any SQLite locker — there is no queue — and the backup then fails cleanly.)"""
    import sqlite3

    from memory.services.backup import _write_lock_take

    database = tmp_path / "busy.sqlite3"
    setup = sqlite3.connect(database, isolation_level=None)
    setup.execute("CREATE TABLE t (n INTEGER)")
    setup.close()
    stop = threading.Event()
    commits = []

    def write_back_to_back() -> None:
        writer = sqlite3.connect(database, timeout=20, isolation_level=None)
        while not stop.is_set():
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("INSERT INTO t VALUES (1)")
            time.sleep(0.02)  # the transaction's own work (a key minted in Elasticsearch, say)
            writer.execute("COMMIT")
            commits.append(time.monotonic())
            time.sleep(0.001)  # the next request's own work before its transaction
        writer.close()

    thread = threading.Thread(target=write_back_to_back, daemon=True)
    thread.start()
    while len(commits) < 3:
        time.sleep(0.01)
    lock = sqlite3.connect(database, timeout=0, isolation_level=None)
    started = time.monotonic()
    try:
        _write_lock_take(lock, within=10)
        waited = time.monotonic() - started
        lock.execute("ROLLBACK")
    finally:
        lock.close()
        stop.set()
        thread.join(timeout=30)
    assert waited < 1, waited


def test_a_backup_right_after_another_holds_what_was_written_in_between(cluster, maya, tmp_path) -> None:
    """The engine's state file still shows the first backup's write block until the engine saves the
    lifted state: the second backup must wait for a save made after its own block, or it copies a state
    without the fact written in between (the order dependence issue 33 reported in this file)."""
    site_backup(destination=tmp_path / "first", layout=_layout(cluster, tmp_path / "live"))
    fact_write(subject=maya, text="Maya learns the cello")
    second = site_backup(destination=tmp_path / "second", layout=_layout(cluster, tmp_path / "live"))
    saved = (second.destination / ES_DIR / ENGINE_STATE).read_bytes()
    assert b"Maya learns the cello" in saved
