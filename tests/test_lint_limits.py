"""The complexity limits (ruff's C901 at 12 and PLR0915 at 50 statements) may only tighten: the files
excused from them when they came are listed in pyproject.toml, and that list may only shrink (issue 33)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMITS = ("C901", "PLR0915")
#: Files excused from a limit when the limits came. Lower it when one is fixed; it never grows.
EXCUSED_AT_MOST = 8
#: Whole folders the limits do not apply to: a test, a benchmark or a data generator is one scenario.
SCENARIO_FOLDERS = ("tests/**", "benchmarks/**", "eval/**")


def _excused() -> dict[str, list[str]]:
    ignores = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]["per-file-ignores"]
    return {
        pattern: [rule for rule in rules if rule in LIMITS]
        for pattern, rules in ignores.items()
        if pattern not in SCENARIO_FOLDERS and any(rule in LIMITS for rule in rules)
    }


def _offences(path: str) -> set[str]:
    """The limits ``path`` breaks, checked with the project's settings but without its excuses."""
    answer = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", ",".join(LIMITS),
         "--config", "lint.mccabe.max-complexity=12", "--output-format", "concise", path],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return {rule for rule in LIMITS if f" {rule} " in answer.stdout}


def test_the_limits_are_on_for_the_products_code() -> None:
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"C90", "PLR0915"} <= set(lint["select"]) and lint["mccabe"]["max-complexity"] == 12


def test_the_excused_files_only_shrink() -> None:
    excused = _excused()
    assert all(not any(c in pattern for c in "*?[") for pattern in excused)  # named files, never a folder
    assert [path for path in excused if not (ROOT / path).is_file()] == []  # moved or gone: the excuse goes too
    assert len(excused) <= EXCUSED_AT_MOST, f"a file was added to the complexity excuses: {sorted(excused)}"


def test_every_excuse_is_still_needed() -> None:
    stale = {path: sorted(set(rules) - _offences(path)) for path, rules in _excused().items()}
    assert {path: rules for path, rules in stale.items() if rules} == {}, "fixed: remove the excuse, lower the bound"


def test_an_offence_is_found_where_there_is_one(tmp_path) -> None:
    branches = "\n".join(f"    if x == {n}:\n        return {n}" for n in range(14))
    module = tmp_path / "tangled.py"
    module.write_text(f"def tangled(x):\n{branches}\n    return -1\n")
    assert _offences(str(module)) == {"C901"}


#: No module of the product's code over this many lines (../shared/CONVENTIONS.md, STRUCTURE.md): past
#: it a file holds more than one thing; split it along what it holds before adding to it.
MODULE_LINES_AT_MOST = 700
PRODUCT_PACKAGES = ("atlas_site", "embedded_es", "memory", "tenants", "webhooks", "clients")


def test_no_module_of_the_product_outgrows_the_limit() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "--", *(f"{package}/*.py" for package in PRODUCT_PACKAGES)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert len(tracked) > 200  # the product's modules were found
    sizes = {path: len((ROOT / path).read_text().splitlines()) for path in tracked}
    assert {path: n for path, n in sizes.items() if n > MODULE_LINES_AT_MOST} == {}
