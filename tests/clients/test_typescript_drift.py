"""The TypeScript SDK cannot drift from the API's snapshot or from the Python SDK silently: its types are
generated from ``memory/api/openapi.yaml``; every Python SDK method has a TypeScript one of the same name
in camelCase, sending the same method and path, taking the same options and retried the same way; and
it has the same error classes."""

from __future__ import annotations

import inspect
import json
import re

import atlas_memory
import pytest
from atlas_memory import AtlasError
from atlas_memory._operations import Operations

from . import typescript_types
from .node import PACKAGE, node_run, output_of
from .test_schema_drift import _call

#: The Python SDK's arguments sent as headers, by their TypeScript option's name.
OWN_OPTIONS = {"idempotency_key": "idempotencyKey", "if_match": "ifMatch"}
PYTHON = sorted(name for name, _ in inspect.getmembers(Operations, inspect.isfunction) if not name.startswith("_"))

DUMP = """
import * as sdk from "./src/index.js";
import { optionsOf, requiredOf } from "./src/operations.js";
const operations = Object.fromEntries(Object.entries(sdk.OPERATIONS).map(([name, op]) =>
  [name, { ...op, options: optionsOf(op), required: requiredOf(op) }]));
const methods = Object.getOwnPropertyNames(sdk.Atlas.prototype).filter((n) => !n.startsWith("_") && n !== "constructor");
const errors = Object.keys(sdk).filter((n) => sdk[n] === sdk.AtlasError || sdk[n].prototype instanceof sdk.AtlasError);
console.log(JSON.stringify({ operations, methods, errors, retry: sdk.DEFAULT_RETRY, version: sdk.VERSION }));
"""


def camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


@pytest.fixture(scope="module")
def sdk() -> dict:
    result = node_run("--input-type=module", "-e", DUMP)
    assert result.returncode == 0, output_of(result)
    return json.loads(result.stdout)


def test_the_types_are_generated_from_the_snapshot() -> None:
    committed = (PACKAGE / "src" / "types.d.ts").read_text()
    assert committed == typescript_types.types(), (
        "regenerate them: .venv/bin/python -m tests.clients.typescript_types > clients/typescript/src/types.d.ts"
    )


def test_every_python_method_has_its_typescript_counterpart_and_nothing_else(sdk) -> None:
    assert sorted(sdk["methods"]) == sorted(camel(name) for name in PYTHON)
    iterators = {f"{name}Iter" for name, op in sdk["operations"].items() if op.get("pages")}
    assert set(sdk["operations"]) | iterators == set(sdk["methods"])


@pytest.mark.parametrize("name", [n for n in PYTHON if not n.endswith("_iter")])
def test_each_operation_sends_and_retries_as_the_python_sdks(sdk, name: str) -> None:
    operation = sdk["operations"][camel(name)]
    parameters = inspect.signature(getattr(Operations, name)).parameters.values()
    arguments = [p for p in parameters if p.name != "self"]
    assert set(operation["options"]) == {OWN_OPTIONS.get(p.name, p.name) for p in arguments}
    assert set(operation["required"]) == {p.name for p in arguments if p.default is inspect.Parameter.empty}
    call = _call(name)
    path = "/api/v1/" + "/".join("x" if s.startswith("{") else s for s in operation["path"])
    assert (operation["method"], path, operation["kind"]) == (call.method, call.path, call.kind.value)
    assert bool(operation.get("body")) == (call.json is not None)  # the fields sent in a JSON body, or the query


def test_paged_lists_are_walked_as_the_python_sdks(sdk) -> None:
    for name, operation in sdk["operations"].items():
        if operation.get("pages"):
            python = re.sub(r"([A-Z])", r"_\1", name).lower()
            source = inspect.getsource(getattr(Operations, f"{python}_iter"))
            assert f', "{operation["pages"]}"' in source, name
            by = operation.get("pagesBy", "cursor")
            assert f'"{by}": {by}}}' in source, name  # the same page marker as the Python iterator's


def test_the_error_classes_and_retry_defaults_are_the_python_sdks(sdk) -> None:
    python = {name for name in atlas_memory.__all__ if isinstance(getattr(atlas_memory, name), type)}
    errors = {name for name in python if issubclass(getattr(atlas_memory, name), AtlasError)}
    assert set(sdk["errors"]) == errors
    defaults = atlas_memory.Retry()
    assert sdk["retry"] == {
        "attempts": defaults.attempts,
        "totalSeconds": defaults.total_seconds,
        "backoff": defaults.backoff,
        "maxWait": defaults.max_wait,
    }


def test_the_version_is_the_packages(sdk) -> None:
    assert sdk["version"] == json.loads((PACKAGE / "package.json").read_text())["version"]
