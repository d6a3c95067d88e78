"""Restoring a backup of the embedded default (memory/services/backup.py) into an empty data directory.

Everything is checked before anything is put in place: the manifest, every file's SHA-256, that the
configured ATLAS_ENCRYPTION_KEYS open the backup's API keys, and — on a private engine started on
a staging copy — that each index holds the documents the manifest counts. The staging copy lives
inside the data directory and is moved into place only when all of that holds; on any refusal it
is removed, and the data directory is as it was.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from atlas_site.errors import ValidationFailed
from embedded_es import EmbeddedElasticsearch
from memory.elastic.maintenance import cluster_admin_client, indices_doc_counts, indices_write_block_set
from tenants.secrets import secret_decrypt

from .backup import DATABASE_FILE, ES_DIR, FORMAT, MANIFEST, Progress, SiteLayout, file_sha256, progress_say

#: What may already be in the data directory a backup is restored into: the secrets `make run` reads.
ALLOWED_IN_TARGET = ("dev.env",)


@dataclass(frozen=True)
class RestoreReport:
    manifest: dict[str, Any]
    documents: dict[str, int]


def backup_verify(*, source: Path) -> dict[str, Any]:
    """The backup's manifest, once every file it lists is there with its checksum and nothing else is."""
    manifest_file = source / MANIFEST
    if not manifest_file.is_file():
        raise ValidationFailed(f"{source} holds no {MANIFEST}: not a finished Atlas backup")
    try:
        manifest = json.loads(manifest_file.read_text())
    except ValueError:
        raise ValidationFailed(f"{manifest_file} is not valid JSON: the backup is damaged") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("kind") != "atlas-embedded":
        raise ValidationFailed(f"{manifest_file} is not a format-{FORMAT} backup of the embedded default")
    listed: dict[str, dict[str, Any]] = manifest.get("files", {})
    present = {str(p.relative_to(source)) for p in source.rglob("*") if p.is_file()} - {MANIFEST}
    if present - set(listed):
        raise ValidationFailed(f"{source} holds files its manifest does not list: {sorted(present - set(listed))[:3]}")
    for name, expected in sorted(listed.items()):
        path = source / name
        if not path.is_file():
            raise ValidationFailed(f"{name} is missing from the backup")
        if file_sha256(path) != expected.get("sha256"):
            raise ValidationFailed(f"{name} does not match its checksum in the manifest: the backup is damaged")
    if DATABASE_FILE not in listed:
        raise ValidationFailed(f"the backup holds no {DATABASE_FILE}")
    return manifest


def _index_prefix_check(manifest: dict[str, Any]) -> None:
    """The restored indices must be the ones this deployment reads (else it would bootstrap empty ones)."""
    prefix = manifest.get("index_prefix")
    if prefix != settings.ATLAS_ES_INDEX_PREFIX:
        raise ValidationFailed(
            f"the backup's indices are named {prefix}-*, this deployment reads {settings.ATLAS_ES_INDEX_PREFIX}-*: "
            f"set ATLAS_ES_INDEX_PREFIX={prefix} and restore again; nothing was changed"
        )


def _migrations_check(manifest: dict[str, Any]) -> None:
    """A backup made by a newer Atlas (a migration this code does not have) is refused: it would not run."""
    from django.db.migrations.loader import MigrationLoader

    known = set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
    unknown = sorted(
        f"{app}.{name}" for app, name in manifest.get("migrations", {}).items() if (app, name) not in known
    )
    if unknown:
        raise ValidationFailed(
            f"the backup was made by a newer Atlas (migration {unknown[0]} is unknown here): upgrade first; "
            "nothing was changed"
        )


def _target_check(layout: SiteLayout) -> None:
    if layout.data_dir.exists():
        others = sorted(p.name for p in layout.data_dir.iterdir() if p.name not in ALLOWED_IN_TARGET)
        if others:
            raise ValidationFailed(
                f"{layout.data_dir} is not empty ({', '.join(others[:5])}): restore into an empty data directory "
                f"(only {', '.join(ALLOWED_IN_TARGET)} may be there); nothing was changed"
            )
    for path in (layout.database, layout.es_data_dir):
        if path.exists():
            raise ValidationFailed(f"{path} already exists: restore into an empty data directory; nothing was changed")


def _encryption_keys_check(database: Path) -> None:
    """Every active API key of the backup opens with the configured ATLAS_ENCRYPTION_KEYS."""
    connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT es_key_id, secret_encrypted FROM tenants_apikeycredential WHERE invalidated_at IS NULL"
        ).fetchall()
    finally:
        connection.close()
    for key_id, encrypted in rows:
        try:
            secret_decrypt(encrypted)
        except ImproperlyConfigured:
            raise ValidationFailed(
                f"the configured ATLAS_ENCRYPTION_KEYS cannot open the backup's API key {key_id}: backups do not "
                "hold the encryption keys — set the keys the backed-up deployment used (its dev.env) and restore "
                "again; nothing was changed"
            ) from None


def _engine_check(es_dir: Path, manifest: dict[str, Any], progress: Progress | None) -> dict[str, int]:
    """Start a private engine on the staged copy: lift the backup's write blocks, compare document counts."""
    server = EmbeddedElasticsearch(data_dir=es_dir, password=secrets.token_urlsafe(18))
    server.start()
    try:
        es = cluster_admin_client(url=server.url, password=server.password)
        try:
            blocked = manifest.get("write_blocked_in_copy", [])
            if blocked:
                indices_write_block_set(names=blocked, blocked=False, es=es)
            counts = indices_doc_counts(es)
        finally:
            es.close()
    finally:
        server.stop()
    expected = {name: index["docs"] for name, index in manifest.get("indices", {}).items()}
    if counts != expected:
        differ = sorted(n for n in set(counts) | set(expected) if counts.get(n) != expected.get(n))
        raise ValidationFailed(
            f"the restored engine does not hold what the manifest counts (index {differ[0]}: "
            f"{counts.get(differ[0])} document(s), manifest {expected.get(differ[0])}); nothing was changed"
        )
    progress_say(progress, f"engine checked: {sum(counts.values())} document(s) in {len(counts)} index(es)")
    return counts


def site_restore(*, source: Path, layout: SiteLayout | None = None, progress: Progress | None = None) -> RestoreReport:
    """Restore the backup in ``source`` into the empty data directory of ``layout``."""
    layout = layout or SiteLayout.from_settings()
    _target_check(layout)
    manifest = backup_verify(source=source)
    progress_say(progress, f"backup verified: {len(manifest['files'])} file(s), made {manifest['created_at']}")
    _index_prefix_check(manifest)
    _migrations_check(manifest)
    _encryption_keys_check(source / DATABASE_FILE)
    progress_say(progress, "the configured encryption keys open the backup's API keys")
    layout.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    staging = layout.data_dir / f".restore-{secrets.token_hex(4)}"
    try:
        staging.mkdir(mode=0o700)
        for name in manifest["files"]:
            target = staging / name
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            shutil.copyfile(source / name, target)
            target.chmod(0o600)
        documents: dict[str, int] = {}
        if (staging / ES_DIR).is_dir():
            progress_say(progress, "starting a private engine on the restored data to check it")
            documents = _engine_check(staging / ES_DIR, manifest, progress)
        layout.database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        (staging / DATABASE_FILE).rename(layout.database)
        if (staging / ES_DIR).is_dir():
            (staging / ES_DIR).rename(layout.es_data_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return RestoreReport(manifest=manifest, documents=documents)
