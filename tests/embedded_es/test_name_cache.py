"""The gateway keeps the engine's index and alias names between requests (no ``GET /_alias`` per
single-document write); it must never answer from names older than the last change that completed.

What the cache decides is whether a write would create its index, which needs a privilege of its own
(TransportBulkAction authorizes ``indices:admin/auto_create`` for missing indices): a stale "exists"
would let a writer without it create an index, a stale "missing" would refuse a legitimate write.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from elasticsearch import AuthorizationException, Elasticsearch

from .conftest import Cluster, mint_key
from .documents import read_role


def _writer(admin: Elasticsearch, cluster: Cluster, prefix: str) -> Elasticsearch:
    """A key that may write (not create indices) under ``prefix``."""
    return cluster.with_key(mint_key(admin, "cache-writer", read_role([f"{prefix}*"], privileges=["write"])))


def test_a_deleted_index_is_not_recreated_by_a_writer_that_may_not_create_it(admin, cluster) -> None:
    name = f"cache-{uuid.uuid4().hex[:8]}"
    admin.indices.create(index=name)
    writer = _writer(admin, cluster, name)
    writer.index(index=name, id="1", document={"text": "first"})  # the names are now cached
    writer.index(index=name, id="2", document={"text": "second"})
    admin.indices.delete(index=name)

    with pytest.raises(AuthorizationException) as info:
        writer.index(index=name, id="3", document={"text": "third"})
    assert "indices:admin/auto_create" in info.value.body["error"]["reason"]
    assert admin.indices.exists(index=name).body is False


def test_an_index_created_after_the_names_were_cached_takes_writes(admin, cluster) -> None:
    prefix = f"cache-{uuid.uuid4().hex[:8]}"
    admin.indices.create(index=f"{prefix}-a")
    writer = _writer(admin, cluster, prefix)
    writer.index(index=f"{prefix}-a", id="1", document={"text": "x"})
    admin.indices.create(index=f"{prefix}-b")  # after the writer's names were read
    writer.index(index=f"{prefix}-b", id="1", document={"text": "y"}, refresh=True)
    assert admin.count(index=f"{prefix}-b")["count"] == 1
    admin.indices.delete(index=f"{prefix}-a,{prefix}-b")


def test_writes_through_an_alias_follow_concurrent_swaps(admin, cluster) -> None:
    """index_reindex's pattern: writers keep writing through the alias while it is swapped between two
    indices. Every write lands in one of them; none fails, none creates an index named like the alias."""
    prefix = f"cache-{uuid.uuid4().hex[:8]}"
    alias, first, second = f"{prefix}-live", f"{prefix}-v1", f"{prefix}-v2"
    admin.indices.create(index=first, aliases={alias: {"is_write_index": True}})
    admin.indices.create(index=second)
    writer = _writer(admin, cluster, prefix)
    errors: list[Exception] = []
    stop = threading.Event()

    def write(worker: int) -> None:
        n = 0
        while not stop.is_set() or n < 20:
            try:
                writer.index(index=alias, id=f"{worker}-{n}", document={"text": f"turn {n}"})
            except Exception as exc:  # noqa: BLE001 — collected and asserted below
                errors.append(exc)
            n += 1

    writers = [threading.Thread(target=write, args=(w,)) for w in range(2)]
    for thread in writers:
        thread.start()
    for swap in range(10):
        source, target = (first, second) if swap % 2 == 0 else (second, first)
        admin.indices.update_aliases(
            actions=[
                {"remove": {"index": source, "alias": alias}},
                {"add": {"index": target, "alias": alias, "is_write_index": True}},
            ]
        )
    stop.set()
    for thread in writers:
        thread.join()

    assert errors == []
    admin.indices.refresh(index=f"{first},{second}")
    assert admin.count(index=f"{first},{second}")["count"] >= 40
    assert set(admin.indices.get(index=f"{prefix}-*")) == {first, second}
    assert set(admin.indices.get_alias(name=alias)) == {first}  # ten swaps: back where it started
    admin.indices.delete(index=f"{first},{second}")
