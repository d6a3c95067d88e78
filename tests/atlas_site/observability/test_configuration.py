"""Traces are off unless the standard OTEL_* variables turn them on; the engine's operation label is bounded."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from atlas_site.observability.engine import engine_operation
from atlas_site.observability.tracing import _exporter, _exporters_from_env

OTEL = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SDK_DISABLED",
)


@pytest.fixture
def clean_env(monkeypatch):
    for name in OTEL:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("variables", "exporters"),
    [
        ({}, []),
        ({"OTEL_TRACES_EXPORTER": "none"}, []),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, ["otlp"]),
        ({"OTEL_TRACES_EXPORTER": "otlp,console"}, ["otlp", "console"]),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, []),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, []),
    ],
)
def test_traces_are_off_unless_the_otel_variables_ask(clean_env, variables, exporters) -> None:
    for name, value in variables.items():
        clean_env.setenv(name, value)
    assert _exporters_from_env() == exporters


def test_otlp_is_http_protobuf_and_other_protocols_are_refused_clearly(clean_env) -> None:
    assert isinstance(_exporter("otlp"), OTLPSpanExporter)
    clean_env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(ValueError, match="http/protobuf only"):
        _exporter("otlp")
    with pytest.raises(ValueError, match="Atlas knows otlp, console and none"):
        _exporter("zipkin")


@pytest.mark.parametrize(
    ("target", "operation"),
    [
        ("/atlas-semantic,atlas-catalog/_msearch?typed_keys=true", "_msearch"),
        ("/_msearch", "_msearch"),
        ("/atlas-episodic/_doc/a1b2c3?refresh=wait_for", "_doc"),
        ("/atlas-episodic/_create/a1b2c3", "_create"),
        ("/_security/api_key", "_security"),
        ("/atlas-episodic-v3", "index"),
        ("/", "root"),
    ],
)
def test_the_engine_operation_names_no_index_and_no_id(target, operation) -> None:
    assert engine_operation(target) == operation


def test_a_malformed_allow_list_stops_the_start_with_a_clear_message(tmp_path) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {
        **os.environ,
        "DJANGO_SECRET_KEY": "config-test",
        "ATLAS_ENCRYPTION_KEYS": "9CcI2YIb7ugLd6R0H0w1wu8S9ls0dI0bOBV3zEmDbBM=",
        "ATLAS_ENV_FILE": os.devnull,
        "ATLAS_DATA_DIR": str(tmp_path),
        "ATLAS_METRICS_ALLOW": "10.0.0.0/8,not-a-network",
    }
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "ATLAS_METRICS_ALLOW: 'not-a-network' does not appear to be an IPv4 or IPv6 network" in done.stderr
