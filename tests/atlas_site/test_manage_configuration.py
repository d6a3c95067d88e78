"""A management command run where no stack's settings are found: one line saying what to do, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_command_without_a_secret_key_says_in_one_line_to_run_make_run_or_set_atlas_data_dir(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "ATLAS_ENV_FILE")}
    env |= {"ATLAS_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "atlas_site.settings"}
    assert not (ROOT / ".env").exists()  # a developer's own .env would hold a key (and hide the case)
    done = subprocess.run(
        [sys.executable, "manage.py", "atlas_recall", "--tenant", "demo", "--subject", "alice", "hello"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"manage.py: DJANGO_SECRET_KEY is not set, nor in {tmp_path / 'dev.env'}: start the stack with `make run` "
        "(it writes that file), point ATLAS_DATA_DIR at the data directory of a running stack, or set "
        "DJANGO_SECRET_KEY\n"
    )
