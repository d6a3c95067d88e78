"""Idempotency records: a POST's first answer, kept in Django's cache for replay, findable by whose it is.

A record holds the answer's body, which holds memory text, so forgetting must find it: every record
is listed under its owner — (tenant, subject external id), or (tenant, "") for tenant-wide routes such
as the catalog, the tenant named by its ``es_id`` (never reused, unlike a row's number) — in an index of numbered entries. An entry number comes from ``cache.incr`` (atomic
in Redis and in the local-memory cache), so concurrent requests never overwrite each other's entry,
and the index lives as long as its newest record: its counter's expiry is pushed past every record
it lists each time one is added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.core.cache import cache

IDEMPOTENCY_TTL_SECONDS = 24 * 3600
_INDEX_TTL_SECONDS = IDEMPOTENCY_TTL_SECONDS + 300
_BATCH = 500


def _owner(tenant_id: str, subject: str) -> str:
    # The external id is URL text: hex-encode it, so no owner's keys can spell another's.
    return f"{tenant_id}:{subject.encode().hex()}"


def _counter_key(owner: str) -> str:
    return f"idem-n:{owner}"


def _entry_key(owner: str, n: int) -> str:
    return f"idem-i:{owner}:{n}"


def idempotency_record_get(*, slot: str) -> dict[str, Any] | None:
    return cache.get(slot)


def idempotency_record_claim(*, slot: str, digest: str) -> bool:
    """Mark ``slot`` as running; False when a record (running or done) is already there."""
    return cache.add(slot, {"state": "running", "digest": digest}, 60)


def idempotency_record_release(*, slot: str) -> None:
    cache.delete(slot)


def idempotency_record_store(*, slot: str, record: dict[str, Any], tenant_id: str, subject: str) -> None:
    """Keep the answer for replay, listed under its owner so that forgetting finds it."""
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
    owner = _owner(tenant_id, subject)
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
