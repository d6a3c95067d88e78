"""What every API route shares in its shapes: the strict base of every input serializer (no unknown field;
text only where text is expected) and the problem-details answer every error has (RFC 9457), as the
OpenAPI schema documents them."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from atlas_site.api import PROBLEM_JSON
from atlas_site.echo import echoed, names_shown

NOT_TEXT = "must be a string (text), not {kind}"


def _not_text(value: Any) -> str | None:
    """Why ``value`` is not text for a text field (None when it is, or is null: the field's own rule)."""
    if value is None or isinstance(value, str):
        return None
    kind = "a boolean" if isinstance(value, bool) else "a number" if isinstance(value, int | float) else "JSON data"
    return NOT_TEXT.format(kind=kind)


def unknown_fields(names: list[Any]) -> dict[str, list[str]]:
    """Each unknown field's error, for the first ECHO_NAMES of them (a body of 60,000 unknown keys made a
    4 MB 400): the others are counted in one error of the body's."""
    shown, more = names_shown(names)
    errors = {name: ["unknown field"] for name in shown}
    if more:
        errors["non_field_errors"] = [f"… and {more} more unknown fields"]
    return errors


class Strict(serializers.Serializer):
    """Refuses fields it does not declare: a typo is an error, not a silently dropped value."""

    # It also refuses anything but a string for a text field: DRF's CharField turns 1 into "1" and 1e999
    # into "inf", so a number sent as a name or a fact would be stored as text nobody wrote. Every input
    # serializer (memory and tenants APIs) derives from this one: one place for every text field.

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields), key=str)
            if unknown:
                raise serializers.ValidationError(unknown_fields(unknown))
            not_text = self._not_text_fields(data)
            if not_text:
                raise serializers.ValidationError(not_text)
        return super().to_internal_value(data)

    def _not_text_fields(self, data: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, Any] = {}
        for name, field in self.fields.items():
            if field.read_only or name not in data:
                continue
            value = data[name]
            if isinstance(field, serializers.CharField) and not isinstance(field, serializers.ChoiceField):
                if reason := _not_text(value):
                    errors[name] = [reason]
            elif isinstance(field, serializers.ListField) and isinstance(field.child, serializers.CharField):
                if isinstance(value, list):
                    items = {n: [r] for n, item in enumerate(value) if (r := _not_text(item))}
                    if items:
                        errors[name] = items
        return errors

    def given(self) -> dict[str, Any]:
        """The validated fields the caller actually sent (defaults belong to the services)."""
        return {k: v for k, v in self.validated_data.items() if k in self.initial_data}


class Choice(serializers.ChoiceField):
    """A choice whose refusal lists the choices (DRF's says only that the value is not one of them)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and data in self.choice_strings_to_values:
            return self.choice_strings_to_values[data]
        raise serializers.ValidationError(f"must be one of {', '.join(map(str, self.choices))}, not {echoed(data)}")


class FieldErrorOut(serializers.Serializer):
    field = serializers.CharField()
    message = serializers.CharField()


class NewestOut(serializers.Serializer):
    id = serializers.CharField()
    external_id = serializers.CharField(allow_null=True, help_text="Your own id for it, if it has one.")


class ProblemOut(serializers.Serializer):
    """RFC 9457 problem details: every error of every route has this shape."""

    type = serializers.CharField(help_text="urn:atlas-memory:problem:<code>")
    title = serializers.CharField()
    status = serializers.IntegerField()
    detail = serializers.CharField()
    errors = FieldErrorOut(many=True, required=False)
    newest = NewestOut(
        required=False,
        help_text="A 409 or 412 about a fact replaced already: its chain's newest version (edit that one instead).",
    )


def problems(*statuses: int) -> dict:
    """The error answers a route documents, as problem details (every route can also be 401 and 429)."""
    return {(code, PROBLEM_JSON): ProblemOut for code in sorted({400, 401, 403, 404, 429, *statuses})}


PROBLEM = problems()
WRITE_PROBLEMS = problems(413, 415, 409, 422)
EDIT_PROBLEMS = problems(409, 412, 413, 415)
