"""One process per data directory: an OS lock on a file in it, held for the life of the process.

Two processes on one data directory each keep their own copy of what it holds and overwrite each
other's files: the writes one of them acknowledged are lost. ``flock`` is the kernel's: it is released
when the process ends however it ends (a SIGKILL or a crash too), so a lock file left behind by a dead
process never blocks the next start. The file holds the owner's pid, for the message of the one refused.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

#: How long a refused process waits for the owner's pid to appear in the file (the owner writes it just
#: after it takes the lock).
PID_WAIT_SECONDS = 1.0


class DataDirInUse(Exception):
    """Another live process holds the data directory's lock; ``pid`` is that process (None if unknown)."""

    def __init__(self, directory: Path, pid: int | None) -> None:
        self.directory = directory
        self.pid = pid
        self.holder = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(f"{directory} is in use by another process ({self.holder})")


def data_dir_lock(directory: Path, name: str) -> int:
    """Lock ``directory/name`` for this process and write its pid there; the open descriptor, which
    holds the lock until it is closed or the process ends. DataDirInUse when another process holds it.
    ``directory`` must exist: nothing else in it is created or changed."""
    fd = os.open(directory / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder_pid(fd)
        os.close(fd)
        raise DataDirInUse(directory, holder) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _holder_pid(fd: int) -> int | None:
    deadline = time.monotonic() + PID_WAIT_SECONDS
    while True:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if text.isdigit():
            return int(text)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)
