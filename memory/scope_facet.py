"""The Scope facet every memory page offers (docs/scoping.md): agent, app, run and one metadata key = value,
parsed into recall's and the lists' ``filters``. The dashboard's search and list and the support pages
(a tenant admin's, an operator's) all take it from here, so a page never parses a scope of its own."""

from __future__ import annotations

import math
from typing import Any

from django import forms

from memory.scoping import MAX_METADATA_STRING, METADATA_KEY
from memory.validation import MAX_ID_CHARS


class ScopeFacetForm(forms.Form):
    """Who wrote it, from where, in which run, and one key of the agent's metadata; every field optional.
    A page's own form inherits it (its fields and its checks come along) or uses it alone."""

    agent_id = forms.CharField(required=False, max_length=MAX_ID_CHARS, label="Agent")
    app_id = forms.CharField(required=False, max_length=MAX_ID_CHARS, label="App")
    run_id = forms.CharField(required=False, max_length=MAX_ID_CHARS, label="Run")
    metadata_key = forms.RegexField(
        required=False,
        regex=rf"^{METADATA_KEY.pattern}\Z",  # anchored: the validator searches
        max_length=40,
        label="Metadata key",
        error_messages={"invalid": "A metadata key starts with a lower-case letter: a-z, 0-9 and _ only."},
    )
    metadata_value = forms.CharField(required=False, max_length=MAX_METADATA_STRING, label="equals")

    SCOPE_FIELDS = ("agent_id", "app_id", "run_id", "metadata_key", "metadata_value")

    def clean(self):
        data = super().clean()
        # A key without its value (or a value without its key) would filter on nothing the person meant.
        if bool(data.get("metadata_key")) != bool(data.get("metadata_value")):
            self.add_error("metadata_key", "Give a metadata key and the value it equals, or neither.")
        return data

    def scope_query(self) -> dict[str, str]:
        """The scope as the page's query parameters, for links that keep it (pagination)."""
        return {name: self.cleaned_data[name] for name in self.SCOPE_FIELDS if self.cleaned_data.get(name)}

    def scope_errors(self) -> list[tuple[str, str]]:
        """(field, message) for each refused scope field, in the form's order."""
        return [(name, str(message)) for name in self.SCOPE_FIELDS for message in self.errors.get(name, [])]

    def scope_filters(self) -> dict[str, Any] | None:
        """The scope the person chose, as recall's ``filters``; None for none. A metadata value typed as a
        number or true/false also matches that number or boolean (a form sends only text)."""
        data = self.cleaned_data
        filters: dict[str, Any] = {name: data[name] for name in ("agent_id", "app_id", "run_id") if data.get(name)}
        if data.get("metadata_key"):
            filters[f"metadata.{data['metadata_key']}"] = {"in": _typed_alike(data["metadata_value"])}
        return filters or None


def _typed_alike(text: str) -> list[Any]:
    """``text``, and the number or boolean it spells."""
    alike: list[Any] = [text]
    if text in ("true", "false"):
        alike.append(text == "true")
    else:
        try:
            number = float(text)
        except ValueError:
            return alike
        if math.isfinite(number):
            alike.append(int(number) if number.is_integer() else number)
    return alike
