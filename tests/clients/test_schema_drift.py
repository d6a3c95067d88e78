"""The SDK and the REST API's committed OpenAPI snapshot cannot drift apart silently: every operation has a
method of its operationId's name, sending that method and path; its keyword arguments are the operation's
parameters and body properties; the writes the server replays by Idempotency-Key are the ones the SDK
retries as such; and every answer class has its component's properties as fields."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import atlas_memory
import pytest
import yaml
from atlas_memory import AsyncAtlas, Atlas, AtlasError, FieldError, models
from atlas_memory._operations import Call, Operations
from atlas_memory._retry import Kind

from . import async_stub

SNAPSHOT = yaml.safe_load((Path(__file__).resolve().parents[2] / "memory/api/openapi.yaml").read_text())
SCHEMAS = SNAPSHOT["components"]["schemas"]

#: Operations of the snapshot the SDK deliberately has no method for, with the reason. None today (the
#: webhook endpoints were, until a tenant administrator could script them as subjects and the catalog).
DELIBERATELY_ABSENT: dict[str, str] = {}
#: Parameters and body properties deliberately not offered: the deprecated old names (docs/vocabulary.md).
NOT_OFFERED = {
    "memory_list": {"type", "superseded"},
    "recall": {"memory_types"},
    "episode_write": {"at"},
    "turn": {"at"},
    # The reviewed version goes in the body (``version``); the API also takes it as If-Match.
    "proposal_accept": {"If-Match"},
    "proposal_reject": {"If-Match"},
}
#: Arguments the API takes that its snapshot does not show, and why. None today (a DELETE's body, the
#: confirmation of memory_forget_all, is documented: atlas_site.openapi).
NOT_IN_SNAPSHOT: dict[str, set[str]] = {}
#: Component properties deliberately not fields of their class: deprecated old names again.
NOT_FIELDS = {"RecallOptionsInRequest": {"memory_types"}}
#: The SDK's own additions: one iterator over every page of each paged list.
ITERATORS = {
    "memory_list_iter",
    "subject_list_iter",
    "catalog_list_iter",
    "proposal_list_iter",
    "webhook_deliveries_iter",
}
#: How a paged list names the page after this one: a cursor, or (the delivery log) the id to read before.
PAGE_MARKERS = ("cursor", "before")
HEADER_ARGUMENTS = {"Idempotency-Key": "idempotency_key", "If-Match": "if_match"}


def _operations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    return {
        op["operationId"]: (method.upper(), path, op)
        for path, methods in SNAPSHOT["paths"].items()
        for method, op in methods.items()
    }


OPERATIONS = _operations()


def _schema(ref_or_schema: dict[str, Any]) -> dict[str, Any]:
    return SCHEMAS[ref_or_schema["$ref"].rsplit("/", 1)[-1]] if "$ref" in ref_or_schema else ref_or_schema


def _body_schema(op: dict[str, Any]) -> dict[str, Any]:
    content = op.get("requestBody", {}).get("content", {}).get("application/json")
    return _schema(content["schema"]) if content else {}


def _answer_component(op: dict[str, Any]) -> str | None:
    for status, answer in op["responses"].items():
        if status.startswith("2"):
            schema = answer.get("content", {}).get("application/json", {}).get("schema", {})
            return schema["$ref"].rsplit("/", 1)[-1] if "$ref" in schema else None
    return None


class Recorder(Operations):
    """The operations with the call each would send, instead of sending it."""

    def _run(self, call: Call) -> Call:
        return call

    _lines = _run


def _call(name: str) -> Call:
    """The call the method ``name`` makes, with a placeholder for each argument it requires."""
    method = getattr(Recorder(), name)
    required = {
        p.name: ["x"] if "list" in str(p.annotation) else "x"
        for p in inspect.signature(method).parameters.values()
        if p.default is inspect.Parameter.empty
    }
    return method(**required)


def _offered(op_id: str) -> set[str]:
    """What the method for ``op_id`` must take: the operation's parameters and body properties."""
    _, _, op = OPERATIONS[op_id]
    names = {p["name"] for p in op.get("parameters", [])} | set(_body_schema(op).get("properties", {}))
    names = names - NOT_OFFERED.get(op_id, set()) | NOT_IN_SNAPSHOT.get(op_id, set())
    return {HEADER_ARGUMENTS.get(name, name) for name in names}


def test_every_operation_has_a_method_and_nothing_else_is_public() -> None:
    public = {name for name, _ in inspect.getmembers(Operations, inspect.isfunction) if not name.startswith("_")}
    assert public == (set(OPERATIONS) - set(DELIBERATELY_ABSENT)) | ITERATORS
    for client in (Atlas, AsyncAtlas):
        assert public <= {name for name in dir(client) if not name.startswith("_")}


@pytest.mark.parametrize("op_id", sorted(set(OPERATIONS) - set(DELIBERATELY_ABSENT)))
def test_each_method_sends_its_operation_with_its_parameters(op_id: str) -> None:
    method, path, op = OPERATIONS[op_id]
    signature = inspect.signature(getattr(Operations, op_id))
    arguments = [p for p in signature.parameters.values() if p.name != "self"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in arguments), op_id
    assert {p.name for p in arguments} == _offered(op_id)
    required_body = set(_body_schema(op).get("required", []))
    required_path = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
    # A decision names the version reviewed: the body's ``version`` or If-Match, one of them is required.
    required = required_body | required_path | NOT_IN_SNAPSHOT.get(op_id, set()) | {"version"}
    assert {p.name for p in arguments if p.default is inspect.Parameter.empty} <= required
    call = _call(op_id)
    assert call.method == method
    assert re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", path), call.path), (call.path, path)
    # Retried as the server allows: keyed writes replay, reads (recall is a POST that reads) repeat freely.
    if "idempotency_key" in _offered(op_id):
        assert call.kind is Kind.KEYED
    elif method == "GET" or op_id == "recall":
        assert call.kind is Kind.READ
    else:
        assert call.kind is Kind.UNKEYED
    answered = _answer_component(op)
    assert (call.model.__schema__ if call.model else None) == answered, op_id


def _page_marker(op_id: str) -> str | None:
    """What an operation answering a page names the next one by (``next_cursor``, the delivery log's
    ``next_before``); None for an answer of everything at once (webhook_list)."""
    component = _answer_component(OPERATIONS[op_id][2])
    properties = SCHEMAS[component]["properties"] if component else {}
    return next((marker for marker in PAGE_MARKERS if f"next_{marker}" in properties), None)


@pytest.mark.parametrize("op_id", [op for op in OPERATIONS if _page_marker(op) and op not in DELIBERATELY_ABSENT])
def test_each_paged_list_has_its_iterator(op_id: str) -> None:
    iterator = getattr(Operations, f"{op_id}_iter")
    page = inspect.signature(getattr(Operations, op_id))
    assert set(inspect.signature(iterator).parameters) == set(page.parameters) - {_page_marker(op_id)}
    # It follows the page's own marker: sent as that parameter, read from the page's next_<marker>.
    source, marker = inspect.getsource(iterator), _page_marker(op_id)
    assert f'"{marker}": {marker}}}' in source
    assert marker == "cursor" or re.search(rf', "{marker}"\s*\)', source)  # _pages reads next_cursor unless told


MODELS = [m for m in vars(models).values() if dataclasses.is_dataclass(m) and hasattr(m, "__schema__")]


def test_every_answer_component_has_a_class() -> None:
    answered = {_answer_component(op) for op_id, (_, _, op) in OPERATIONS.items() if op_id not in DELIBERATELY_ABSENT}
    answered -= {None}
    assert answered <= {m.__schema__ for m in MODELS}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_each_class_has_its_components_properties_as_fields(model: type) -> None:
    component = SCHEMAS[model.__schema__]
    fields = {f.name for f in dataclasses.fields(model)} - models.NOT_IN_SCHEMA
    assert fields == set(component["properties"]) - NOT_FIELDS.get(model.__schema__, set())
    required = {f.name for f in dataclasses.fields(model) if f.default is f.default_factory is dataclasses.MISSING}
    assert required == set(component.get("required", []))


def test_problem_details_and_their_field_errors_are_read_whole() -> None:
    problem = AtlasError("detail", status=400, type="urn:atlas-memory:problem:invalid", title="Bad request")
    assert all(hasattr(problem, name) for name in SCHEMAS["ProblemOut"]["properties"])
    assert {f.name for f in dataclasses.fields(FieldError)} == set(SCHEMAS["FieldErrorOut"]["properties"])


def test_the_async_clients_typed_signatures_are_generated_from_the_operations() -> None:
    committed = (Path(atlas_memory.__file__).parent / "_async.pyi").read_text()
    assert committed == async_stub.stub(), "regenerate it: .venv/bin/python -m tests.clients.async_stub > …/_async.pyi"
