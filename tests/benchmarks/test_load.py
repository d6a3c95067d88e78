"""The fault tests of issue 25, on benchmarks/load.py: the whole `make run` stack under keyed write load
while a real process of it is paused (SIGSTOP/SIGCONT) or killed (SIGKILL, started again by its
supervisor). For every fault: every write the client made is acknowledged in the end (the client
retries with the same key, honouring Retry-After), none of them is lost or stored twice, and no 5xx or
409 came without Retry-After. Short versions (one stack, a few dozen writes per fault); the full ones
are `python benchmarks/load.py --fault KIND` (docs/performance.md "Load, faults and capacity")."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from benchmarks.load import Stack, atlas_run, load_phase, stack_prepare

pytestmark = [
    pytest.mark.embedded_only(reason="benchmarks the stack make run starts, with its embedded Elasticsearch"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the stack's processes through /proc"),
]
AGENTS, WRITES, PAUSE = 3, 12, 5.0


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[Stack, str]]:
    with atlas_run() as running:
        yield running, stack_prepare(running, agents=AGENTS)


@pytest.mark.parametrize(
    "fault", ["engine-pause", "engine-kill", "gateway-pause", "gateway-kill", "web-kill", "worker-kill"]
)
def test_no_acknowledged_write_is_lost_or_stored_twice_through_a_fault(stack, fault: str) -> None:
    running, token = stack
    report = load_phase(
        running,
        token,
        agents=AGENTS,
        writes=WRITES,
        recall_every=3,
        time_limit=100,
        fault=fault,
        fault_at=0.3,
        pause=PAUSE,
    )
    done = report["fault"]
    assert done["fault"] == fault, done
    if fault.endswith("-pause"):
        assert done["paused_s"] == PAUSE, done
    else:
        assert done["back_after_s"] is not None, done  # the supervisor started it again
    integrity = report["integrity"]
    assert integrity["attempted"] == WRITES
    assert integrity["acknowledged"] == WRITES, report  # every write got through, retried with its key
    assert (integrity["stored"], integrity["lost"], integrity["duplicated"]) == (WRITES, 0, 0), report
    assert report["errors_without_retry_after"] == [], report
    assert running.proc.poll() is None  # the stack is still up
