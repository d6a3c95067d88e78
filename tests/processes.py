"""Processes of the stack as tests see them: their state in /proc, and pausing one for real."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def process_state(pid: int) -> str:
    """The one-letter state of ``pid`` from /proc/<pid>/stat (R, S, T stopped, Z zombie …)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _all_threads_stopped(pid: int) -> bool:
    states = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            states.add(task.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0])
        except OSError:  # a thread that ended meanwhile
            continue
    return states == {"T"}


@contextmanager
def paused(pid: int, *, within: float = 10.0) -> Iterator[None]:
    """``pid`` stopped (SIGSTOP) for the block, then continued.

    kill() only makes the signal pending: on a busy machine the process can still answer a request
    before the kernel stops it (a CI run saw a "stalled" engine answer a search). The block starts
    once /proc says every thread of the process is stopped: each thread stops itself when it next
    enters the kernel, and a threaded engine answers from whichever thread still runs."""
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + within
        while not _all_threads_stopped(pid):
            if time.monotonic() > deadline:
                raise AssertionError(f"process {pid} did not stop within {within:g} s of SIGSTOP")
            time.sleep(0.01)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
