"""memory.inference.pool: the inference threads, shared round-robin between tenants' lanes."""

from __future__ import annotations

import threading

import pytest

from memory.inference.pool import FairPool, embeddings_run


def test_a_lane_that_arrives_later_is_served_before_a_busy_lanes_queue() -> None:
    pool = FairPool(1)
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def task(name: str, *, hold: bool = False):
        def run() -> str:
            if hold:
                started.set()
                release.wait(10)
            order.append(name)
            return name

        return run

    heavy = [pool.submit("tenant-a", task("a1", hold=True))]
    assert started.wait(10)  # the worker holds a1; a2…a4 queue behind it
    heavy += [pool.submit("tenant-a", task(f"a{n}")) for n in (2, 3, 4)]
    light = pool.submit("tenant-b", task("b1"))
    release.set()
    assert light.result(10) == "b1" and [f.result(10) for f in heavy] == ["a1", "a2", "a3", "a4"]
    # b1 waited for one more task of the busy lane (a2, queued before b1 came), not for a3 and a4.
    assert order == ["a1", "a2", "b1", "a3", "a4"]
    pool.close()


def test_results_come_back_in_order_and_a_failure_reaches_the_caller(settings) -> None:
    settings.ATLAS_EMBEDDING_WORKERS = 2
    assert embeddings_run([lambda n=n: n * n for n in range(7)], lane="t") == [0, 1, 4, 9, 16, 25, 36]

    def fails() -> None:
        raise ValueError("the model refused")

    with pytest.raises(ValueError, match="the model refused"):
        embeddings_run([lambda: 1, fails], lane="t")


def test_a_closed_pool_finishes_what_it_holds_then_its_threads_end() -> None:
    pool = FairPool(2)
    futures = [pool.submit("t", lambda n=n: n) for n in range(5)]
    pool.close()
    assert [f.result(10) for f in futures] == [0, 1, 2, 3, 4]
    for thread in pool.threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in pool.threads)
