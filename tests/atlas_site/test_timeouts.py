"""The order of the timeouts (issue 25): the embedded gateway gives up on its engine before the app's
Elasticsearch client gives up on the gateway, and one Elasticsearch call of the app ends before the web
request's ceiling — so a stalled layer reaches the caller as a 503 with Retry-After, never as an outer
timeout cutting a request whose fate is unknown. A wrong order stops the start with one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from atlas_site.timeouts import es_call_ceiling, timeouts_order_problem
from embedded_es.engine import ENGINE_TIMEOUT_SECONDS

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_timeouts_are_ordered_innermost_first() -> None:
    assert (ENGINE_TIMEOUT_SECONDS, settings.ATLAS_ES_ENGINE_TIMEOUT) == (8.0, 8.0)
    assert (settings.ATLAS_ES_REQUEST_TIMEOUT, settings.ATLAS_ES_MAX_RETRIES) == (10.0, 2)
    ceiling = es_call_ceiling(es_request=settings.ATLAS_ES_REQUEST_TIMEOUT, es_retries=settings.ATLAS_ES_MAX_RETRIES)
    assert settings.ATLAS_ES_ENGINE_TIMEOUT < settings.ATLAS_ES_REQUEST_TIMEOUT < ceiling == 30.0
    assert ceiling < settings.ATLAS_WEB_REQUEST_TIMEOUT == 60.0
    assert timeouts_order_problem(engine=8, es_request=10, es_retries=2, web_request=60) is None


@pytest.mark.parametrize(
    ("engine", "es_request", "es_retries", "web_request", "blamed"),
    [
        (10, 10, 2, 60, "EMBEDDED_ES_ENGINE_TIMEOUT (10 s) must be below ATLAS_ES_REQUEST_TIMEOUT (10 s)"),
        (9.5, 10, 0, 60, "EMBEDDED_ES_ENGINE_TIMEOUT (9.5 s) must be below"),
        (8, 10, 5, 60, "ATLAS_ES_REQUEST_TIMEOUT × (ATLAS_ES_MAX_RETRIES + 1) (60 s) must be below"),
        (8, 20, 2, 60, "(60 s) must be below ATLAS_WEB_REQUEST_TIMEOUT (60 s)"),
        (8, 10, 2, 0, "timeouts must be positive"),
        (8, 10, -1, 60, "ATLAS_ES_MAX_RETRIES at least 0"),
    ],
)
def test_a_wrong_order_is_named(engine, es_request, es_retries, web_request, blamed) -> None:
    problem = timeouts_order_problem(
        engine=engine, es_request=es_request, es_retries=es_retries, web_request=web_request
    )
    assert problem is not None and blamed in problem


def test_settings_refuse_to_start_with_timeouts_out_of_order() -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "atlas_site.settings",
        "ATLAS_ES_REQUEST_TIMEOUT": "30",  # × 3 = 90 s, beyond the web request's 60 s
    }
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: ATLAS_ES_REQUEST_TIMEOUT × (ATLAS_ES_MAX_RETRIES + 1) (90 s) "
        "must be below ATLAS_WEB_REQUEST_TIMEOUT (60 s) with a margin: the app answers a stalled Elasticsearch "
        "with a 503 before the proxy or the client gives up on the app"
    )
