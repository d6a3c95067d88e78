"""Idempotency records: a POST's first answer, kept 24 h for replay, findable by whose it is.

Where: with REDIS_URL in Redis (Django's cache), shared by every process; otherwise in the database
(``tenants.IdempotencyRecord``) — never in one process's memory, which a restart or a second web worker
would not see (a retry would be stored twice).

A record holds the answer's body, which holds memory text, so forgetting must find it: every record
is listed under its owner — (tenant, subject external id), or (tenant, "") for tenant-wide routes such
as the catalog, the tenant named by its ``es_id`` (never reused, unlike a row's number). In Redis the
owner's list is an index of numbered entries: an entry number comes from ``cache.incr`` (atomic), so
concurrent requests never overwrite each other's entry, and the index lives as long as its newest
record. In the database the owner is a column.

A running request holds its slot for as long as a request can run (RUNNING_SECONDS), not a fixed
minute: a retry while the first is still working is a 409, never a second write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

IDEMPOTENCY_TTL_SECONDS = 24 * 3600
#: How long a running request holds its slot: longer than any request runs (every Elasticsearch call
#: times out within ATLAS_ES_REQUEST_TIMEOUT and a write makes a handful; model work is bounded), so the
#: slot lapses only for a process that died mid-request — and its retry lands on the same document.
RUNNING_SECONDS = 600
_INDEX_TTL_SECONDS = IDEMPOTENCY_TTL_SECONDS + 300
_BATCH = 500


def _owner(tenant_id: str, subject: str) -> str:
    # The external id is URL text: hex-encode it, so no owner's keys can spell another's.
    return f"{tenant_id}:{subject.encode().hex()}"


def _counter_key(owner: str) -> str:
    return f"idem-n:{owner}"


def _entry_key(owner: str, n: int) -> str:
    return f"idem-i:{owner}:{n}"


def _in_redis() -> bool:
    return bool(settings.REDIS_URL)


def _records():
    from tenants.models import IdempotencyRecord

    return IdempotencyRecord.objects


def idempotency_record_get(*, slot: str) -> dict[str, Any] | None:
    if _in_redis():
        return cache.get(slot)
    row = _records().filter(slot=slot, expires_at__gt=timezone.now()).first()
    if row is None:
        return None
    return {"state": "running", "digest": row.digest} if row.running else row.record


def idempotency_record_claim(*, slot: str, digest: str) -> bool:
    """Mark ``slot`` as running; False when a record (running or done) is already there."""
    if _in_redis():
        return cache.add(slot, {"state": "running", "digest": digest}, RUNNING_SECONDS)
    now = timezone.now()
    records = _records()
    records.filter(slot=slot, expires_at__lte=now).delete()  # a lapsed record frees its slot
    try:
        with transaction.atomic():
            records.create(
                slot=slot,
                tenant_key="",
                digest=digest,
                running=True,
                expires_at=now + timedelta(seconds=RUNNING_SECONDS),
            )
    except IntegrityError:  # another request holds it: the unique slot decides, whatever the timing
        return False
    return True


def idempotency_record_release(*, slot: str) -> None:
    if _in_redis():
        cache.delete(slot)
    else:
        _records().filter(slot=slot).delete()


def idempotency_record_store(*, slot: str, record: dict[str, Any], tenant_id: str, subject: str) -> None:
    """Keep the answer for replay, listed under its owner so that forgetting finds it."""
    if not _in_redis():
        expires = timezone.now() + timedelta(seconds=IDEMPOTENCY_TTL_SECONDS)
        _records().update_or_create(
            slot=slot,
            defaults=dict(
                tenant_key=tenant_id,
                subject=subject.encode().hex(),
                running=False,
                digest=record["digest"],
                record=record,
                expires_at=expires,
            ),
        )
        return
    owner = _owner(tenant_id, subject)
    counter = _counter_key(owner)
    cache.add(counter, 0, _INDEX_TTL_SECONDS)
    try:
        n = cache.incr(counter)
    except ValueError:  # the counter expired between add and incr: start again
        cache.add(counter, 0, _INDEX_TTL_SECONDS)
        n = cache.incr(counter)
    cache.set(slot, record, IDEMPOTENCY_TTL_SECONDS)
    cache.set(_entry_key(owner, n), slot, IDEMPOTENCY_TTL_SECONDS)
    cache.touch(counter, _INDEX_TTL_SECONDS)


def idempotency_records_purge() -> int:
    """Delete the database's lapsed records (Redis expires its own); how many went."""
    if _in_redis():
        return 0
    return _records().filter(expires_at__lte=timezone.now()).delete()[0]


def _entries(owner: str) -> Iterator[tuple[str, str]]:
    """(entry key, slot) of every record still listed under ``owner``."""
    last = cache.get(_counter_key(owner)) or 0
    for start in range(1, last + 1, _BATCH):
        keys = [_entry_key(owner, n) for n in range(start, min(start + _BATCH, last + 1))]
        yield from cache.get_many(keys).items()


def idempotency_records_forget(
    *, tenant_id: str, subject: str, matches: Callable[[dict[str, Any]], bool] | None = None
) -> list[str]:
    """Delete the owner's records (only those whose record ``matches``, when given); their slots."""
    dropped: list[str] = []
    if not _in_redis():
        rows = _records().filter(tenant_key=tenant_id, subject=subject.encode().hex())
        for row in rows.only("slot", "record", "running"):
            if row.running or matches is None or matches(row.record or {}):
                row.delete()
                dropped.append(row.slot)
        return dropped
    owner = _owner(tenant_id, subject)
    for entry, slot in _entries(owner):
        record = cache.get(slot)
        if record is None:
            cache.delete(entry)
            continue
        if matches is None or matches(record):
            cache.delete_many([slot, entry])
            dropped.append(slot)
    return dropped
