"""Backups of the embedded default (SQLite + the embedded Elasticsearch), consistent while it runs.

A backup is a directory: ``atlas.sqlite3`` (the database, copied with SQLite's online backup API),
``es/`` (the engine's saved state and the gateway's API-key store and ILM policies) and
``manifest.json`` (versions, time, indices and their document counts, a SHA-256 of every file),
written last: a directory without it is not a backup.

What makes it one point in time while `make run` serves (docs/operations.md):
1. every index gets ``index.blocks.write`` — writes answer 503 until step 4, reads go on;
2. the database is copied while this process holds SQLite's write lock (``BEGIN IMMEDIATE``), and
   the key store is copied under the same lock: every credential change (mint, record, invalidate
   the old) runs inside one such write transaction, so none is half done in the copy;
3. the engine saves its state about a second after a change; the copy is taken from the first save
   that shows every index blocked (the block is the last change: everything acknowledged before it
   is in that save, nothing after it can be);
4. the blocks are lifted (also when anything above fails). The copy keeps them: a restore lifts them.

Not in a backup: ATLAS_ENCRYPTION_KEYS (and the other secrets of dev.env) — a restore needs the same
keys, kept apart from the backups; the Celery broker's queued tasks (beat schedules the nightly jobs
again, the reconcilers repair half-done work); logs.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from atlas_site.errors import DependencyUnavailable, ValidationFailed
from memory.elastic.maintenance import index_write_blocked, indices_settings, indices_write_block_set

FORMAT = 1
MANIFEST = "manifest.json"
DATABASE_FILE = "atlas.sqlite3"
ES_DIR = "es"
ENGINE_STATE = Path("noida") / "elasticsearch.json"
#: What of the embedded server's data directory a backup holds: the engine's state, the gateway's
#: key store and licence state, its ILM policies. Not its log, address file or control file.
GATEWAY_DIRS = ("security", "ilm")
OPERATIONS_DOC = "docs/operations.md"
PERSIST_TIMEOUT_SECONDS = 120.0  # the engine saves ~1 s after a change; a large state takes longer to write
DATABASE_LOCK_TIMEOUT_SECONDS = 30.0

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SiteLayout:
    """Where the embedded default keeps its data: the data directory, the SQLite file, the engine's dir."""

    data_dir: Path
    database: Path
    es_data_dir: Path

    @classmethod
    def from_settings(cls) -> SiteLayout:
        """The layout of this deployment, or a refusal naming the production procedure."""
        database = settings.DATABASES["default"]
        if database["ENGINE"] != "django.db.backends.sqlite3":
            raise ValidationFailed(
                "this deployment uses PostgreSQL (DATABASE_URL): back it up with pg_dump and an Elasticsearch "
                f"snapshot repository, in the order {OPERATIONS_DOC} describes"
            )
        return cls(data_dir=settings.DATA_DIR, database=Path(database["NAME"]), es_data_dir=settings.DATA_DIR / ES_DIR)


@dataclass(frozen=True)
class BackupReport:
    destination: Path
    manifest: dict[str, Any]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def progress_say(progress: Progress | None, message: str) -> None:
    if progress:
        progress(message)


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with open(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fd)


def embedded_server_running(layout: SiteLayout) -> bool:
    """Whether the embedded server of ``layout`` runs, and is the cluster Atlas is configured to use.

    Refused: a running embedded server that ATLAS_ES_URL does not point at (the backup could not block
    its writes), and an ATLAS_ES_URL that is not the embedded server of this data directory (a real
    cluster, backed up with snapshots)."""
    address_file = layout.es_data_dir / "embedded_es.json"
    address = json.loads(address_file.read_text()) if address_file.is_file() else None
    running = address is not None and _process_alive(address.get("pid"))
    configured = settings.ATLAS_ES_URL.rstrip("/")
    if running and address.get("gateway_url", "").rstrip("/") == configured:
        return True
    if running:
        raise ValidationFailed(
            f"the embedded Elasticsearch of {layout.es_data_dir} runs at {address.get('gateway_url')}, but "
            f"ATLAS_ES_URL is {configured}: point ATLAS_ES_URL at it, or stop `make run` first"
        )
    if _answers(configured):
        raise ValidationFailed(
            f"ATLAS_ES_URL ({configured}) answers, but it is not the embedded server of {layout.es_data_dir}: a "
            f"cluster of your own is backed up with an Elasticsearch snapshot repository, as {OPERATIONS_DOC} describes"
        )
    if not (layout.es_data_dir / ENGINE_STATE).is_file() and not (layout.es_data_dir / "security").is_dir():
        raise ValidationFailed(
            f"no embedded Elasticsearch data in {layout.es_data_dir}: with a cluster of your own (ATLAS_ES_URL), "
            f"back up with an Elasticsearch snapshot repository as {OPERATIONS_DOC} describes"
        )
    return False


def _answers(url: str) -> bool:
    """Whether something listens at ``url``'s host and port (a cluster other than the stopped embedded one)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 9200)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def _process_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _destination_prepare(destination: Path) -> None:
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise ValidationFailed(f"{destination} is not an empty directory: a backup goes into a new one")
    destination.mkdir(mode=0o700, parents=True, exist_ok=True)
    destination.chmod(0o700)


#: How often the backup asks for the database's write lock while writers hold it.
WRITE_LOCK_POLL_SECONDS = 0.002


def _write_lock_take(lock: sqlite3.Connection, *, within: float) -> None:
    """``BEGIN IMMEDIATE`` on ``lock``, asked every WRITE_LOCK_POLL_SECONDS until ``within`` has passed.

    Not SQLite's busy timeout: its handler sleeps 100 ms between tries once it has waited a third of a
    second, and a steady stream of short write transactions (the app's writes all begin IMMEDIATE) frees
    the lock for well under a millisecond between two of them — the backup's tries kept missing those
    gaps and it gave up after 30 s while key rotations ran back to back (a CI run saw it)."""
    deadline = time.monotonic() + within
    while True:
        try:
            lock.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:  # "database is locked"
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise DependencyUnavailable(
                    f"the database stayed locked for {within:.0f} s ({exc}); nothing was backed up: run the backup again"
                ) from exc
            time.sleep(WRITE_LOCK_POLL_SECONDS)


def _database_and_keys_copy(layout: SiteLayout, destination: Path, progress: Progress | None) -> None:
    """Copy the database with SQLite's online backup API, and the gateway's files, under the write lock."""
    if not layout.database.is_file():
        raise ValidationFailed(f"no database at {layout.database}: nothing to back up")
    lock = sqlite3.connect(layout.database, timeout=0, isolation_level=None)
    try:
        progress_say(progress, "waiting for the database's write lock (writes wait until the copy is taken)")
        _write_lock_take(lock, within=DATABASE_LOCK_TIMEOUT_SECONDS)
        source = sqlite3.connect(f"{layout.database.as_uri()}?mode=ro", uri=True, timeout=DATABASE_LOCK_TIMEOUT_SECONDS)
        target = sqlite3.connect(destination / DATABASE_FILE)
        try:
            source.backup(target)
        finally:
            target.close()
            source.close()
        (destination / DATABASE_FILE).chmod(0o600)
        progress_say(progress, "database copied")
        for name in GATEWAY_DIRS:
            top = layout.es_data_dir / name
            for path in sorted(top.rglob("*")) if top.is_dir() else []:
                if path.is_file() and not path.name.endswith(".tmp"):
                    _write_private(destination / ES_DIR / path.relative_to(layout.es_data_dir), path.read_bytes())
        progress_say(progress, "API-key store copied")
    finally:
        if lock.in_transaction:
            lock.execute("ROLLBACK")  # it only read: the lock's whole point was that nobody else wrote
        lock.close()


def _state_saved_at(layout: SiteLayout) -> int:
    """When the engine last saved its state (the file's mtime in ns; 0 before its first save)."""
    try:
        return (layout.es_data_dir / ENGINE_STATE).stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def _engine_state_saved_blocked(
    layout: SiteLayout, blocked: set[str], progress: Progress | None, *, saved_before: int = 0
) -> bytes | None:
    """The engine's first save after the block was set (``saved_before``: the last save's time before it)
    that shows every index write-blocked (blocking any index that appeared). A save from before the block
    may show every index blocked too — the previous backup's, not yet followed by a save of the lifted
    state — while missing what was written since: it is never taken."""
    state_file = layout.es_data_dir / ENGINE_STATE
    deadline = time.monotonic() + PERSIST_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if _state_saved_at(layout) <= saved_before and saved_before:
            time.sleep(0.1)
            continue
        try:
            raw = state_file.read_bytes()
            state = json.loads(raw)
        except FileNotFoundError:
            if not blocked:
                return None  # no index was ever created: the engine has nothing to save
            raw, state = b"", None
        except ValueError:  # read while the engine was writing it: read the next save
            raw, state = b"", None
        if state is not None:
            indices = state.get("indices", {})
            unblocked = sorted(name for name, index in indices.items() if not index_write_blocked(index["settings"]))
            created = [name for name in unblocked if name not in blocked]
            live = set(indices_settings()) if not blocked <= set(indices) else set(indices)
            changed = sorted(name for name in blocked if name not in live)
            if changed:  # deleted during the backup: only an index operation (atlas_reindex) does that
                raise ValidationFailed(
                    f"index {changed[0]} was deleted during the backup (is atlas_reindex running?); nothing was "
                    "backed up: run it again when that has finished"
                )
            lifted = [name for name in unblocked if name in blocked]
            if lifted and not all(index_write_blocked(indices_settings().get(name, {})) for name in lifted):
                raise ValidationFailed(
                    f"the write block of {lifted[0]} was lifted during the backup (atlas_reindex finishing?); "
                    "nothing was backed up: run it again"
                )
            if created:  # made after the first round of blocks: block it as well, and wait for that save
                indices_write_block_set(names=created, blocked=True)
                blocked.update(created)
            elif not unblocked and blocked <= set(indices):
                return raw
        time.sleep(0.1)
    raise ValidationFailed(
        f"the embedded engine did not save its state within {PERSIST_TIMEOUT_SECONDS:.0f} s of the write block; "
        "nothing was backed up (stop `make run` and run the backup again: it then copies the files as they are)"
    )


def _manifest(destination: Path, engine_state: bytes | None, blocked: list[str], started: datetime) -> dict[str, Any]:
    files = {
        str(path.relative_to(destination)): {"sha256": file_sha256(path), "bytes": path.stat().st_size}
        for path in sorted(destination.rglob("*"))
        if path.is_file()
    }
    state = json.loads(engine_state) if engine_state else {"indices": {}}
    indices = {
        name: {"docs": len(index.get("docs", {})), "aliases": sorted(index.get("aliases", {}))}
        for name, index in sorted(state["indices"].items())
    }
    database = sqlite3.connect(f"{(destination / DATABASE_FILE).as_uri()}?mode=ro", uri=True)
    try:
        migrations: dict[str, str] = {}
        for app, name in database.execute("SELECT app, name FROM django_migrations ORDER BY app, name"):
            migrations[app] = max(migrations.get(app, name), name)
        active_keys = sorted(
            row[0]
            for row in database.execute("SELECT es_key_id FROM tenants_apikeycredential WHERE invalidated_at IS NULL")
        )
    finally:
        database.close()
    key_store = destination / ES_DIR / "security" / "api_keys.json"
    stored = json.loads(key_store.read_text()) if key_store.is_file() else {}
    usable = {key_id for key_id, record in stored.items() if not record.get("invalidated")}
    return {
        "format": FORMAT,
        "kind": "atlas-embedded",
        "created_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "versions": {"atlas": version("atlas-memory"), "noida_db": version("noida-db")},
        "index_prefix": settings.ATLAS_ES_INDEX_PREFIX,
        "migrations": migrations,
        "indices": indices,
        "write_blocked_in_copy": sorted(blocked),
        "credentials": {
            "active_in_database": len(active_keys),
            "missing_from_key_store": [k for k in active_keys if k not in usable],
        },
        "not_included": [
            "ATLAS_ENCRYPTION_KEYS and the other secrets of dev.env: a restore needs the same encryption keys",
            "the Celery broker's queued tasks",
        ],
        "files": files,
    }


def site_backup(
    *, destination: Path, layout: SiteLayout | None = None, progress: Progress | None = None
) -> BackupReport:
    """Back up the embedded default into the new directory ``destination`` (see the module's docstring)."""
    layout = layout or SiteLayout.from_settings()
    running = embedded_server_running(layout)
    _destination_prepare(destination)
    started = datetime.now(UTC)
    blocked: set[str] = set()
    try:
        if running:
            existing = indices_settings()
            already = sorted(name for name, index in existing.items() if index_write_blocked(index))
            if already:
                raise ValidationFailed(
                    f"index {already[0]} is already write-blocked (atlas_reindex running, or an interrupted backup); "
                    "nothing was backed up. After a reindex, back up again; after an interrupted backup, lift the "
                    "block with `manage.py atlas_backup --lift-write-block` first"
                )
            progress_say(progress, f"blocking writes to {len(existing)} index(es) while the copy is taken")
            saved_before = _state_saved_at(layout)
            indices_write_block_set(names=sorted(existing), blocked=True)
            blocked.update(existing)
        _database_and_keys_copy(layout, destination, progress)
        if running:
            progress_say(progress, "waiting for the engine to save its blocked state")
            engine_state = _engine_state_saved_blocked(layout, blocked, progress, saved_before=saved_before)
        else:
            state_file = layout.es_data_dir / ENGINE_STATE
            engine_state = state_file.read_bytes() if state_file.is_file() else None
            if engine_state is not None:
                json.loads(engine_state)  # a torn file is refused, not copied
        if engine_state is not None:
            _write_private(destination / ES_DIR / ENGINE_STATE, engine_state)
        progress_say(progress, "engine state copied")
    except BaseException:
        _destination_discard(destination)
        raise
    finally:
        if blocked:
            indices_write_block_set(names=sorted(blocked), blocked=False)
            progress_say(progress, "writes allowed again")
    manifest = _manifest(destination, engine_state, sorted(blocked), started)
    _write_private(destination / MANIFEST, json.dumps(manifest, indent=2).encode())
    return BackupReport(destination=destination, manifest=manifest)


def _destination_discard(destination: Path) -> None:
    for path in sorted(destination.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()


def write_block_lift(*, layout: SiteLayout | None = None) -> list[str]:
    """Lift the write block an interrupted backup left on the embedded server's indices; returns their names."""
    layout = layout or SiteLayout.from_settings()
    if not embedded_server_running(layout):
        raise ValidationFailed("the embedded Elasticsearch is not running: start `make run` first")
    names = sorted(name for name, index in indices_settings().items() if index_write_blocked(index))
    if names:
        indices_write_block_set(names=names, blocked=False)
    return names
