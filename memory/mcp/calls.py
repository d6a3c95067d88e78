"""One MCP tool call: validate the arguments against the tool's schema → check the token's scope →
resolve the subject → run the tool's handler (memory.mcp.tools) → its answer, or a tool error result
(``isError: true``) naming code, message and field — never an exception, never a traceback."""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from atlas_site.echo import MESSAGE_CHARS, schema_message, shortened
from atlas_site.elastic.client import es_errors
from atlas_site.errors import AtlasError, ValidationFailed
from memory.validation import memory_types_refusal
from tenants.models import MemorySubject
from tenants.tokens import TokenPrincipal

from .tools import TOOLS, ToolSpec

log = logging.getLogger(__name__)

_VALIDATORS = {spec.name: Draft202012Validator(spec.input_schema) for spec in TOOLS}


def _arguments_validate(spec: ToolSpec, arguments: dict[str, Any]) -> None:
    """Refuse arguments the tool's schema does not accept, naming the field (``steps.0.instruction``)."""
    error = best_match(_VALIDATORS[spec.name].iter_errors(arguments))
    if error is None:
        return
    path = [str(part) for part in error.absolute_path]
    if error.validator == "required" and isinstance(error.instance, dict):
        path += [name for name in error.validator_value if name not in error.instance][:1]
    elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
        path += [shortened(name) for name in sorted(set(error.instance) - set(error.schema.get("properties", {})))[:1]]
    where = ".".join(str(part) for part in error.absolute_path)
    said = schema_message(error)
    if error.validator == "enum" and path[:1] == ["types"]:  # as REST says it: the types, and what was meant
        said = memory_types_refusal([error.instance], allowed=error.validator_value) or said
    message = f"invalid arguments for {spec.name}: " + (f"{where}: " if where else "") + said
    raise ValidationFailed(message, field=".".join(path) or None)


def _subject_resolve(principal: TokenPrincipal, external_id: Any) -> MemorySubject:
    if external_id is None and not principal.is_tenant_token:
        return principal.subject
    return principal.subject_for(external_id)


def error_result(
    *, code: str, message: str, field: str | None = None, extensions: dict[str, Any] | None = None
) -> types.CallToolResult:
    """A tool error result: the text names code, message and field; structuredContent holds them too, and
    the error's extension members (``newest`` of a replaced fact) as REST's problem details carry them."""
    message = shortened(message, MESSAGE_CHARS)  # whatever built it: a tool error repeats no input whole
    detail = {**(extensions or {}), "code": code, "message": message, "field": field}
    text = f"{code}: {message}" + (f" (field: {field})" if field else "")
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content={"error": detail}, is_error=True
    )


def tool_call(*, principal: TokenPrincipal, spec: ToolSpec, arguments: dict[str, Any]) -> types.CallToolResult:
    """Run one tool for ``principal``: its answer, or a tool error result — never an exception."""
    try:
        _arguments_validate(spec, arguments)
        principal.require(spec.scope)
        arguments = dict(arguments)
        subject = _subject_resolve(principal, arguments.pop("subject", None))
        with es_errors(f"run {spec.name}"):
            result = spec.handler(subject=subject, principal=principal, **arguments)
    except AtlasError as error:
        return error_result(code=error.code, message=error.message, field=error.field, extensions=error.extensions)
    except Exception:
        log.exception("MCP tool %s failed", spec.name)
        return error_result(code="internal", message="the tool failed unexpectedly; the error is logged")
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(result, ensure_ascii=False, default=str))],
        structured_content=result,
    )
