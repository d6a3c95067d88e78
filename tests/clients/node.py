"""Running Node for the TypeScript SDK's tests: the binary (its absence is a failure, never a skip), and
one run's output kept whole for the failure message."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "typescript"
MINIMUM = 20


def node() -> str:
    """The ``node`` binary, at least version 20; the test fails (not skips) without it."""
    found = shutil.which("node")
    if found is None:
        pytest.fail(
            "node is not installed: the TypeScript SDK's tests need Node >= 20 "
            "(`.ci/run` installs Debian's nodejs; locally: apt-get install nodejs)",
            pytrace=False,
        )
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(re.match(r"v(\d+)", version).group(1)) < MINIMUM:
        pytest.fail(f"node {version} is too old: the TypeScript SDK needs Node >= {MINIMUM}", pytrace=False)
    return found


def node_run(*args: str, env: dict[str, str] | None = None, cwd: Path = PACKAGE) -> subprocess.CompletedProcess:
    """``node *args`` in the package (the live server keeps serving from its thread meanwhile)."""
    return subprocess.run(
        [node(), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def output_of(result: subprocess.CompletedProcess) -> str:
    return f"node exited {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def node_tests(*files: str, env: dict[str, str]) -> str:
    """Runs Node's test runner on ``files`` (of ``test/``); fails with its whole output unless every test
    passed. Returns the output."""
    result = node_run("--test", *(f"test/{name}" for name in files), env=env)
    assert result.returncode == 0, output_of(result)
    assert re.search(r"^# fail 0$", result.stdout, flags=re.MULTILINE), output_of(result)
    print(result.stdout)  # node's report, with each test's duration: shown by pytest -rP
    return result.stdout


def node_test_files() -> list[str]:
    return sorted(path.name for path in (PACKAGE / "test").glob("*.test.js"))
