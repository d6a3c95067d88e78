"""What the running product prints: each event once, and no warnings that are not about a real problem."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_a_404_is_logged_once_in_development(tmp_path: Path) -> None:
    """`make run` sets DJANGO_DEBUG=true, where Django's own console handler used to print it a second time."""
    env = {
        **os.environ,
        "DJANGO_DEBUG": "true",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "ATLAS_DATA_DIR": str(tmp_path),
        "ATLAS_ENV_FILE": os.devnull,
    }
    script = "from django.test import Client; print(Client().get('/no-such-page').status_code)"
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout == "404\n"
    assert [line.split(" ", 2)[2] for line in done.stderr.splitlines() if "no-such-page" in line] == [
        "WARNING django.request Not Found: /no-such-page"
    ]


def test_the_embedded_broker_names_its_host(caplog, settings) -> None:
    """kombu warned "No hostname was supplied" in every Celery process when the URL had no host."""
    from atlas_site.celery import app

    if settings.REDIS_URL:
        pytest.skip("with REDIS_URL the broker is Redis, not the embedded one (CI's second run)")

    with caplog.at_level(logging.WARNING, logger="kombu"), app.connection_for_write() as connection:
        assert connection.info()["hostname"] == "localhost"
    assert caplog.records == []
