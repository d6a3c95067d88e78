"""The SDK README's example, run as printed against the live server (its URL and token swapped in)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "clients" / "python" / "README.md"

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_readme_example_runs_as_printed(world) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert '"http://127.0.0.1:8000", "atlas_…"' in example
    runnable = example.replace('"http://127.0.0.1:8000", "atlas_…"', f"{world.url!r}, {world.svc!r}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(runnable, str(README), "exec"), {})  # noqa: S102 - the README's own code
    assert "Alice is allergic to peanuts" in printed.getvalue()
