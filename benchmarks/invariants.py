"""The invariant machine (tests/memory/test_invariants.py) for a long run: ≥ 5,000 steps of random
operations by every principal through REST, MCP, the dashboard, the admin, import and forgetting, each
step followed by every invariant. Prints the table of steps, operations, answers and checks.

    .venv/bin/python benchmarks/invariants.py [--steps 5000] [--seed N]

It runs the test under pytest (the test's fixtures start the embedded Elasticsearch and the live server)
with ATLAS_INVARIANT_STEPS, and reads the report the test writes. Progress goes to stderr every 100
steps. A violation fails the run with Hypothesis's shrunk sequence: make it an ordinary regression test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=None, help="replay the run of this Hypothesis seed")
    parser.add_argument(
        "--print-steps", action="store_true", help="print every step as it runs (a failure that does not replay)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        env = {**os.environ, "ATLAS_INVARIANT_STEPS": str(args.steps), "ATLAS_INVARIANT_REPORT": str(report)}
        if args.seed is not None:
            env["ATLAS_INVARIANT_SEED"] = str(args.seed)
        if args.print_steps:
            env["ATLAS_INVARIANT_PRINT_STEPS"] = "1"
        started = time.monotonic()
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
            "tests/memory/test_invariants.py",
        ]
        outcome = subprocess.run(command, cwd=ROOT, env=env, check=False)
        elapsed = time.monotonic() - started
        if outcome.returncode != 0 or not report.exists():
            print(f"the invariant machine failed (exit {outcome.returncode}) after {elapsed:.0f} s", file=sys.stderr)
            return outcome.returncode or 1
        data = json.loads(report.read_text())
    print(
        f"\n{data['steps']} steps in {elapsed:.0f} s ({elapsed / max(data['steps'], 1):.2f} s a step), no violation\n"
    )
    print("| operation | count |\n|---|---:|")
    for name, count in sorted(data["operations"].items(), key=lambda item: -item[1]):
        print(f"| {name} | {count} |")
    print("\n| answers | count |\n|---|---:|")
    for status, count in sorted(data["answers"].items()):
        print(f"| {status[0]}xx | {count} |")
    print("\n| invariant | checked |\n|---|---:|")
    for name, count in sorted(data["checks"].items()):
        print(f"| {name} | {count} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
