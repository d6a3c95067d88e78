"""The suite in a random order of files, so a test that passes only after (or before) another cannot hide.

``ATLAS_TEST_ORDER_SEED=N`` shuffles the files with that seed (the tests inside a file keep their order:
module fixtures load a model once per file). Every pytest-xdist worker collects and shuffles alike, so
they agree on the order. .ci/run sets the seed to the day of the year and prints it: each day's CI runs
another order, and a failure replays with the seed it printed.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import TypeVar

Item = TypeVar("Item")
SEED_VARIABLE = "ATLAS_TEST_ORDER_SEED"


def order_seed() -> int | None:
    """The seed asked for, or None (the collection order)."""
    value = os.environ.get(SEED_VARIABLE, "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise ValueError(f"{SEED_VARIABLE} must be a non-negative integer, not {value!r}")
    return int(value)


def files_shuffled(items: Sequence[Item], *, file_of, seed: int) -> list[Item]:
    """``items`` with their files in the seed's random order; each file's items stay together, in order."""
    by_file: dict[str, list[Item]] = {}
    for item in items:
        by_file.setdefault(file_of(item), []).append(item)
    files = sorted(by_file)
    random.Random(seed).shuffle(files)
    return [item for name in files for item in by_file[name]]
