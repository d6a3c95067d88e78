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


def _refs(node) -> set[str]:
    if isinstance(node, dict):
        return {node["$ref"]} if "$ref" in node else set().union(*map(_refs, node.values()))
    return set().union(*map(_refs, node)) if isinstance(node, list) else set()


def test_every_reference_names_a_component_and_the_forget_all_body_is_documented() -> None:
    schema = yaml.safe_load(SNAPSHOT.read_text())
    defined = {f"#/components/schemas/{name}" for name in schema["components"]["schemas"]}
    assert _refs(schema) - defined == set()  # StepIn was referenced and never defined
    forget_all = schema["paths"]["/api/v1/subjects/{subject}/memories"]["delete"]
    body = forget_all["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/ForgetAllInRequest"}
    assert schema["components"]["schemas"]["ForgetAllInRequest"]["required"] == ["confirm"]


def test_post_facts_is_described_for_its_callers_not_by_an_internal_note() -> None:
    schema = yaml.safe_load(SNAPSHOT.read_text())
    described = [op.get("description", "") for item in schema["paths"].values() for op in item.values()]
    assert not any("A route under" in text for text in described)
    fact_write = schema["paths"]["/api/v1/subjects/{subject}/facts"]["post"]["description"]
    assert fact_write.startswith("A durable statement about the subject. `supersedes` names the facts it replaces")


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
