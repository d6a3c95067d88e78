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

A running request holds its slot by a lease (LEASE_SECONDS) that its process renews for as long as the
request runs, not for a fixed time: a retry while the first is still working is a 409, never a second
write (issue 25 point 4), however long it works; and when the process dies mid-request (a killed web
worker), its lease lapses within LEASE_SECONDS and the client's retry runs again — onto the same
document, whose id derives from the key — instead of meeting 409s for as long as a request could run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

IDEMPOTENCY_TTL_SECONDS = 24 * 3600
#: A running request's lease on its slot, renewed every LEASE_RENEW_SECONDS by its own process while it
#: runs: it lapses only for a process that died (or stopped) mid-request — and the retry then lands on
#: the same document. Renewal is cheap (one UPDATE, or one TOUCH per held slot, per process).
LEASE_SECONDS = 30
LEASE_RENEW_SECONDS = 10
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
        return cache.add(slot, {"state": "running", "digest": digest}, LEASE_SECONDS)
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
                expires_at=now + timedelta(seconds=LEASE_SECONDS),
            )
    except IntegrityError:  # another request holds it: the unique slot decides, whatever the timing
        return False
    return True


logger = logging.getLogger(__name__)
_held: Counter[str] = Counter()  # the slots this process's running requests hold, renewed together
_held_lock = threading.Lock()
_renewer: threading.Thread | None = None
_held_added = threading.Event()  # wakes the renewer, so a new hold is renewed on time whatever it slept on


@contextmanager
def idempotency_lease_held(*, slot: str) -> Iterator[None]:
    """Keep renewing ``slot``'s lease while the block runs (the request behind it is working)."""
    global _renewer
    with _held_lock:
        _held[slot] += 1
        _held_added.set()
        if _renewer is None or not _renewer.is_alive():
            _renewer = threading.Thread(target=_leases_renew, name="idempotency-leases", daemon=True)
            _renewer.start()
    try:
        yield
    finally:
        # Under the lock: a renewal in progress finishes first, so none touches the slot once it is left
        # (a touch after the answer is stored would cut the answer's 24 h down to a lease).
        with _held_lock:
            _held[slot] -= 1
            if _held[slot] <= 0:
                del _held[slot]


def _leases_renew() -> None:
    """The renewer thread of this process: every LEASE_RENEW_SECONDS, extend the lease of each held slot."""
    from django.db import close_old_connections

    renewed = time.monotonic()
    while True:
        _held_added.wait(max(0.0, renewed + LEASE_RENEW_SECONDS - time.monotonic()))
        _held_added.clear()
        if time.monotonic() < renewed + LEASE_RENEW_SECONDS:
            continue  # woken by a new hold: wait out the (perhaps changed) interval from the last renewal
        renewed = time.monotonic()
        with _held_lock:
            slots = list(_held)
            if not slots:
                continue
            try:
                if _in_redis():
                    for slot in slots:
                        cache.touch(slot, LEASE_SECONDS)
                else:
                    close_old_connections()
                    _records().filter(slot__in=slots, running=True).update(
                        expires_at=timezone.now() + timedelta(seconds=LEASE_SECONDS)
                    )
            except Exception:  # the store is down: the next round tries again; the lease may lapse meanwhile
                logger.warning("could not renew %d idempotency leases", len(slots), exc_info=True)


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


def _rows_forget(rows, matches: Callable[[dict[str, Any]], bool] | None) -> list[str]:
    dropped: list[str] = []
    for row in rows.only("slot", "record", "running"):
        if row.running or matches is None or matches(row.record or {}):
            row.delete()
            dropped.append(row.slot)
    return dropped


def _owner_entries_forget(owner: str, matches: Callable[[dict[str, Any]], bool] | None) -> list[str]:
    dropped: list[str] = []
    for entry, slot in _entries(owner):
        record = cache.get(slot)
        if record is None:
            cache.delete(entry)
            continue
        if matches is None or matches(record):
            cache.delete_many([slot, entry])
            dropped.append(slot)
    return dropped


def idempotency_records_forget(
    *, tenant_id: str, subject: str, matches: Callable[[dict[str, Any]], bool] | None = None
) -> list[str]:
    """Delete the owner's records (only those whose record ``matches``, when given); their slots."""
    if not _in_redis():
        return _rows_forget(_records().filter(tenant_key=tenant_id, subject=subject.encode().hex()), matches)
    return _owner_entries_forget(_owner(tenant_id, subject), matches)


def idempotency_tenant_records_forget(
    *, tenant_id: str, subjects: Iterable[str], matches: Callable[[dict[str, Any]], bool] | None = None
) -> list[str]:
    """Delete the records of every owner in the tenant — its own (tenant-wide routes) and each subject's,
    whichever token made the request — that ``matches`` (all, without it); their slots.

    ``subjects`` are the tenant's subjects' external ids: Redis lists records per owner, so it is asked
    owner by owner; the database finds them all by the tenant alone."""
    if not _in_redis():
        return _rows_forget(_records().filter(tenant_key=tenant_id), matches)
    dropped: list[str] = []
    for subject in dict.fromkeys(["", *subjects]):
        dropped += _owner_entries_forget(_owner(tenant_id, subject), matches)
    return dropped
