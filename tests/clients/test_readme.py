"""The SDK README's example and the main README's tour example, run as printed against the live server (their
URL and token swapped in)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "clients" / "python" / "README.md"
MAIN_README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_readme_example_runs_as_printed(world) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert '"http://127.0.0.1:8000", "atlas_…"' in example
    runnable = example.replace('"http://127.0.0.1:8000", "atlas_…"', f"{world.url!r}, {world.svc!r}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(runnable, str(README), "exec"), {})  # noqa: S102 - the README's own code
    assert "Alice is allergic to peanuts" in printed.getvalue()


def test_the_main_readmes_python_example_runs_as_printed(world) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", MAIN_README.read_text(), flags=re.DOTALL)
    assert '"http://127.0.0.1:8000", "atlas_…"' in example and len(example.splitlines()) <= 15
    runnable = example.replace('"http://127.0.0.1:8000", "atlas_…"', f"{world.url!r}, {world.svc!r}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(runnable, str(MAIN_README), "exec"), {})  # noqa: S102 - the README's own code
    lines = printed.getvalue().splitlines()
    assert lines[0] == "edit the newest version instead: True"
    assert any(line.endswith("semantic Alice lives in Lisbon") for line in lines[1:]), lines
