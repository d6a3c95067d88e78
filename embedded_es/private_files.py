"""The data directory's files are the owner's alone: 0700 directories, 0600 files, written atomically.

Keys, licence state and the engine's snapshot hold every tenant's data or the means to reach it, so
nothing in the data directory may be readable by another local user. This module covers what the
gateway writes.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: a 0600 temp file, fsynced, renamed over it, the directory fsynced.

    A crash leaves either the old file or the new one, never a torn one, and the file is never
    readable by others, not even for a moment (it is created 0600, not chmodded afterwards).
    """
    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
    with open(fd, "w") as fh:
        os.fchmod(fd, FILE_MODE)  # a leftover temp file keeps its old mode through O_CREAT
        fh.write(text)
        fh.flush()
        os.fsync(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
