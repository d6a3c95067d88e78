"""The random order of test files (tests/_ordering.py) that .ci/run asks for with a seed a day."""

from __future__ import annotations

import pytest

from tests._ordering import SEED_VARIABLE, files_shuffled, order_seed

ITEMS = [f"tests/{name}.py::test_{n}" for name in "abcdefgh" for n in range(3)]


def _file(item: str) -> str:
    return item.split("::", 1)[0]


def test_a_seed_shuffles_the_files_and_keeps_each_file_together_in_order() -> None:
    shuffled = files_shuffled(ITEMS, file_of=_file, seed=338)
    assert sorted(shuffled) == sorted(ITEMS)
    files = [_file(item) for item in shuffled]
    runs = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
    assert len(runs) == 8  # each file's tests in one stretch
    assert runs != sorted(runs)
    for name in runs:
        assert [i for i in shuffled if _file(i) == name] == [i for i in ITEMS if _file(i) == name]


def test_the_same_seed_gives_the_same_order_whatever_the_collection_order_and_another_seed_another() -> None:
    collected_backwards = [item for name in reversed("abcdefgh") for item in ITEMS if _file(item) == f"tests/{name}.py"]
    assert files_shuffled(collected_backwards, file_of=_file, seed=7) == files_shuffled(ITEMS, file_of=_file, seed=7)
    assert files_shuffled(ITEMS, file_of=_file, seed=7) != files_shuffled(ITEMS, file_of=_file, seed=8)


@pytest.mark.parametrize(("value", "seed"), [("", None), ("  ", None), ("0", 0), ("338", 338)])
def test_the_seed_comes_from_the_environment(monkeypatch, value: str, seed: int | None) -> None:
    monkeypatch.setenv(SEED_VARIABLE, value)
    assert order_seed() == seed


def test_a_seed_that_is_not_a_number_is_refused(monkeypatch) -> None:
    monkeypatch.setenv(SEED_VARIABLE, "tuesday")
    with pytest.raises(ValueError, match="non-negative integer"):
        order_seed()
