"""The OpenAPI schema: valid, warning-free, every operation documented, and equal to the committed snapshot.

After a deliberate API change, regenerate the snapshot with ``make schema`` and review the diff.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import yaml
from django.core.management import call_command

SNAPSHOT = Path(__file__).resolve().parents[3] / "memory" / "api" / "openapi.yaml"


def _generate() -> str:
    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    return out.getvalue()


def test_schema_matches_the_committed_snapshot() -> None:
    assert _generate() == SNAPSHOT.read_text(), "the API changed: run `make schema` and commit memory/api/openapi.yaml"


def test_every_operation_has_a_summary_an_id_and_its_errors() -> None:
    schema = yaml.safe_load(SNAPSHOT.read_text())
    operations = [(path, method, op) for path, item in schema["paths"].items() for method, op in item.items()]
    assert len(operations) >= 20
    for path, method, op in operations:
        assert op.get("summary") and op.get("operationId"), (path, method)
        if method in ("post", "patch") and "requestBody" in op:
            content = op["requestBody"]["content"]["application/json"]
            assert "examples" in content, (path, method)
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
