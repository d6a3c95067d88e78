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


BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


def test_a_browser_gets_the_documentation_page_not_a_download(client, db) -> None:
    response = client.get("/api/v1/schema/", headers={"Accept": BROWSER_ACCEPT})
    assert (response.status_code, response["Location"]) == (302, "/api/v1/docs/")
    docs = client.get("/api/v1/docs/", headers={"Accept": BROWSER_ACCEPT})
    assert docs.status_code == 200
    assert docs["Content-Type"].startswith("text/html")


def test_api_clients_still_get_the_schema(client, db) -> None:
    plain = client.get("/api/v1/schema/", headers={"Accept": "*/*"})
    assert plain.status_code == 200
    assert plain["Content-Type"].startswith("application/vnd.oai.openapi")
    assert yaml.safe_load(plain.content)["info"]["title"] == "Atlas Memory API"
    as_json = client.get("/api/v1/schema/", headers={"Accept": "application/json"})
    assert as_json["Content-Type"].startswith("application/json")
    assert as_json.json()["info"]["title"] == "Atlas Memory API"
    # An explicit format wins over a browser's Accept (a "download the schema" link).
    forced = client.get("/api/v1/schema/?format=json", headers={"Accept": BROWSER_ACCEPT})
    assert (forced.status_code, forced.json()["openapi"]) == (200, "3.0.3")
