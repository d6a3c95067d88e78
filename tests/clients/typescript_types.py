"""Writes the TypeScript SDK's ``src/types.d.ts``: one type per schema component of the REST API's OpenAPI
snapshot (``memory/api/openapi.yaml``), and one ``<Operation>Query`` per operation that takes query
parameters. A reference to a component the snapshot does not define becomes ``unknown``, listed in the
header (``StepIn`` was one, until the step's schema was written inline in memory/api/serializers.py).

    .venv/bin/python -m tests.clients.typescript_types > clients/typescript/src/types.d.ts
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

SNAPSHOT = Path(__file__).resolve().parents[2] / "memory" / "api" / "openapi.yaml"
SCALARS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}


class Writer:
    """The types of one snapshot; ``missing`` collects the references it does not define."""

    def __init__(self, snapshot: dict[str, Any]) -> None:
        self.snapshot = snapshot
        self.schemas: dict[str, Any] = snapshot["components"]["schemas"]
        self.missing: set[str] = set()
        self.request = False  # writing a request's type: a time may be given as a Date

    def type_of(self, schema: dict[str, Any], indent: str = "") -> str:
        text = self._bare(schema, indent)
        return f"{text} | null" if schema.get("nullable") and text != "null" else text

    def _bare(self, schema: dict[str, Any], indent: str) -> str:
        if "$ref" in schema:
            return self._ref(schema["$ref"])
        for combinator, joiner in (("allOf", " & "), ("oneOf", " | "), ("anyOf", " | ")):
            if combinator in schema:
                parts = [self.type_of(part, indent) for part in schema[combinator]]
                return parts[0] if len(parts) == 1 else "(" + joiner.join(parts) + ")"
        if "enum" in schema:
            return " | ".join(json.dumps(value) for value in schema["enum"])
        kind = schema.get("type")
        if kind == "array":
            return f"Array<{self.type_of(schema.get('items', {}), indent)}>"
        if kind == "object" or "properties" in schema or "additionalProperties" in schema:
            return self._object(schema, indent)
        if kind == "string" and schema.get("format") == "date-time" and self.request:
            return "string | Date"
        return SCALARS.get(kind, "unknown")

    def _ref(self, ref: str) -> str:
        name = ref.rsplit("/", 1)[-1]
        if name in self.schemas:
            return name
        self.missing.add(name)
        return "unknown"

    def _object(self, schema: dict[str, Any], indent: str) -> str:
        if "properties" in schema:
            return "{\n" + self.members(schema, indent + "  ") + indent + "}"
        extra = schema.get("additionalProperties", True)
        value = self.type_of(extra, indent) if isinstance(extra, dict) and extra else "unknown"
        return f"Record<string, {value}>"

    def members(self, schema: dict[str, Any], indent: str) -> str:
        required = set(schema.get("required", []))
        lines = []
        for name, prop in schema["properties"].items():
            lines.append(doc(prop, indent))
            optional = "" if name in required else "?"
            lines.append(f"{indent}{name}{optional}: {self.type_of(prop, indent)};\n")
        return "".join(lines)

    def component(self, name: str, schema: dict[str, Any]) -> str:
        self.request = name.endswith("InRequest")
        if schema.get("type") == "object" and "properties" in schema:
            return f"{doc(schema, '')}export interface {name} {{\n{self.members(schema, '  ')}}}\n"
        return f"{doc(schema, '')}export type {name} = {self.type_of(schema)};\n"

    def query(self, operation: dict[str, Any]) -> str | None:
        params = [p for p in operation.get("parameters", []) if p["in"] == "query"]
        if not params:
            return None
        self.request = True
        properties = {p["name"]: {**p["schema"], **_described(p)} for p in params}
        name = "".join(part.title() for part in operation["operationId"].split("_")) + "Query"
        schema = {"properties": properties, "required": [p["name"] for p in params if p.get("required")]}
        return f"/** The query parameters of {operation['operationId']}. */\nexport interface {name} {{\n" + (
            self.members(schema, "  ") + "}\n"
        )


def _described(parameter: dict[str, Any]) -> dict[str, Any]:
    keys = ("description", "deprecated")
    return {key: parameter[key] for key in keys if key in parameter}


def doc(schema: dict[str, Any], indent: str) -> str:
    lines = [line.rstrip() for line in str(schema.get("description", "")).strip().splitlines()]
    if schema.get("deprecated"):
        lines.append("@deprecated")
    lines = [line.replace("*/", "*\\/") for line in lines]
    if not lines:
        return ""
    if len(lines) == 1:
        return f"{indent}/** {lines[0]} */\n"
    body = "".join(f"{indent} *{' ' if line else ''}{line}\n" for line in lines)
    return f"{indent}/**\n{body}{indent} */\n"


def types(snapshot: dict[str, Any] | None = None) -> str:
    writer = Writer(snapshot or yaml.safe_load(SNAPSHOT.read_text()))
    blocks = [writer.component(name, schema) for name, schema in writer.schemas.items()]
    operations = [op for methods in writer.snapshot["paths"].values() for op in methods.values()]
    blocks += [q for q in (writer.query(op) for op in operations) if q]
    missing = ", ".join(sorted(writer.missing)) or "none"
    head = (
        "// Generated by tests/clients/typescript_types.py from memory/api/openapi.yaml: do not edit.\n"
        "//   .venv/bin/python -m tests.clients.typescript_types > clients/typescript/src/types.d.ts\n"
        f"// Referenced by the snapshot but not defined there, typed unknown: {missing}.\n"
    )
    return head + "".join("\n" + block for block in blocks)


if __name__ == "__main__":
    print(types(), end="")
