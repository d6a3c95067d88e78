"""The data directory's files are the owner's alone: 0700 directories, 0600 files, written atomically.

Keys, licence state and the engine's snapshot hold every tenant's data or the means to reach it, so
nothing in the data directory may be readable by another local user. ``serve()`` also sets the
umask to 0o077, which covers what the engine writes; this module covers what the gateway writes,
and tightens what an older version left world-readable.
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


def make_private_dir(data_dir: Path, *, owned: tuple[str, ...]) -> None:
    """Create ``data_dir`` 0700 and tighten the entries ``owned`` below it (0700 dirs, 0600 files).

    Only what the server itself writes is walked: a data directory pointed at by mistake (``.``)
    must not lose its other files' modes.
    """
    data_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    data_dir.chmod(DIR_MODE)
    for name in owned:
        top = data_dir / name
        if top.is_symlink() or not top.exists():
            continue
        if top.is_file():
            top.chmod(FILE_MODE)
            continue
        top.chmod(DIR_MODE)
        for root, dirs, files in os.walk(top):
            for entry in dirs + files:
                path = Path(root, entry)
                if not path.is_symlink():
                    path.chmod(DIR_MODE if path.is_dir() else FILE_MODE)
