"""What the dashboard's forms accept, parsed into typed values; everything else is refused with a message."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from django import forms

from memory import recall_constants as rc
from memory.authority import AUTHORITIES
from memory.on_behalf import CONTRADICTION_CHOICES, KIND_NAMES
from memory.scope_facet import ScopeFacetForm
from memory.templatetags.dashboard import AUTHORITY_WORDS
from memory.validation import FACT_TYPES, MAX_SHORT_CHARS, MAX_TEXT_CHARS
from tenants.tokens import MAX_NAME_CHARS, SCOPES

TYPE_LABELS = {"semantic": "Facts", "procedural": "Playbooks", "episodic": "Conversations", "catalog": "Catalog"}
TYPE_NAMES = KIND_NAMES  # one memory's kind, in words
BULK_SHOWN_LIMIT = 500  # the review page shows at most 200 proposals


class NarrowingForm(forms.Form):
    """The filters a list and a search share (GET): a fact type, and a range of days in UTC (``until``
    includes its whole day)."""

    fact_type = forms.ChoiceField(
        required=False, choices=[("", "any"), *((t, t) for t in FACT_TYPES)], label="Fact type"
    )
    since = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            raise forms.ValidationError("The start date is after the end date.")
        return data

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        since, until = self.cleaned_data.get("since"), self.cleaned_data.get("until")
        return (
            datetime.combine(since, time.min, tzinfo=UTC) if since else None,
            datetime.combine(until + timedelta(days=1), time.min, tzinfo=UTC) if until else None,
        )


class ListFilterForm(ScopeFacetForm, NarrowingForm):
    """The list's filters (the search's Scope facet among them), its conversation and its page."""

    include_superseded = forms.BooleanField(required=False, label="Show replaced versions")
    authority = forms.ChoiceField(
        required=False,
        choices=[("", "anyone"), *((a, AUTHORITY_WORDS[a]) for a in AUTHORITIES)],
        label="Written by",
    )
    session = forms.CharField(required=False, max_length=128, widget=forms.HiddenInput)
    # Checked where every listing checks it (atlas_site.cursors): a refusal there is a page that says why,
    # where a hidden field's own error would show nothing.
    cursor = forms.CharField(required=False, widget=forms.HiddenInput)


class SearchForm(ScopeFacetForm, NarrowingForm):
    """A recall (GET): the question, which kinds of memory, whether replaced facts count, and the shared
    filters (a fact type searches facts only). Its ids differ from the list filters' on the same page."""

    q = forms.CharField(max_length=rc.MAX_QUERY_CHARS, label="Search your memories", strip=True)
    types = forms.MultipleChoiceField(
        required=False,
        choices=list(TYPE_LABELS.items()),
        widget=forms.CheckboxSelectMultiple,
        label="Kinds",
    )
    include_superseded = forms.BooleanField(required=False, label="Include replaced versions")
    turns_apart = forms.BooleanField(required=False, label="List the conversation a fact was learnt from apart")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, auto_id="search_%s", **kwargs)

    def clean(self):
        data = super().clean()
        if data.get("fact_type") and data.get("types") and "semantic" not in data["types"]:
            self.add_error("fact_type", "A fact type searches facts only: tick Facts too, or no kind at all.")
        return data


class FactEditForm(forms.Form):
    """A correction: the new text, whether the old version changed or was wrong (natural or harsh), and
    the version (ETag) the editor read, so no edit overwrites another."""

    text = forms.CharField(max_length=MAX_TEXT_CHARS, widget=forms.Textarea(attrs={"rows": 3}), label="Corrected text")
    contradiction = forms.ChoiceField(
        choices=CONTRADICTION_CHOICES,
        initial="natural",
        required=False,  # a form without the choice is the default correction, natural
        widget=forms.RadioSelect,
        label="What happened to the old version?",
    )
    etag = forms.CharField(max_length=80, widget=forms.HiddenInput)

    def clean_contradiction(self) -> str:
        return self.cleaned_data["contradiction"] or "natural"


class ForgetAllForm(forms.Form):
    confirm = forms.CharField(max_length=128, label="Type your id to confirm", strip=True)

    def __init__(self, *args, expected: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.expected = expected

    def clean_confirm(self) -> str:
        value = self.cleaned_data["confirm"]
        if value != self.expected:
            raise forms.ValidationError(f"Type {self.expected} exactly: forgetting everything cannot be undone.")
        return value


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=MAX_NAME_CHARS, label="Name", help_text="Where you will use it, e.g. “laptop”.")
    scopes = forms.MultipleChoiceField(
        choices=[
            ("read", "read — recall and list my memories"),
            ("write", "write — store new memories"),
            ("forget", "forget — delete my memories"),
            ("review", "review — accept or reject proposals for me, as if I clicked (only for an agent I trust)"),
        ],
        widget=forms.CheckboxSelectMultiple,
        initial=["read", "write"],
        label="What it may do",
    )

    def clean_scopes(self) -> list[str]:
        return [s for s in SCOPES if s in self.cleaned_data["scopes"]]


class ProposalRejectForm(forms.Form):
    """Reject a proposal: ``version`` is the version the page showed (a change since is refused)."""

    version = forms.CharField(max_length=100)


class ProposalAcceptForm(ProposalRejectForm):
    """Accept a proposal as it is, or with the text corrected (``original`` tells an edit from none)."""

    text = forms.CharField(required=False, max_length=MAX_TEXT_CHARS, strip=True, widget=forms.Textarea)
    original = forms.CharField(required=False, max_length=MAX_TEXT_CHARS, strip=True, widget=forms.HiddenInput)


class ProposalsDecideForm(forms.Form):
    """Accept or reject every proposal of one writer (a consolidation run, an agent's token)."""

    decision = forms.ChoiceField(choices=[("accept", "accept"), ("reject", "reject")])
    written_by = forms.CharField(max_length=300)

    def shown(self, data: Any) -> dict[str, str]:
        """The proposals the page showed for this writer, by id, with the version shown of each."""
        pairs = (value.partition(":") for value in data.getlist("shown")[:BULK_SHOWN_LIMIT])
        return {memory_id: version for memory_id, _, version in pairs if memory_id and version}


class CatalogEntryForm(forms.Form):
    title = forms.CharField(max_length=MAX_SHORT_CHARS, label="Title")
    text = forms.CharField(max_length=MAX_TEXT_CHARS, widget=forms.Textarea(attrs={"rows": 4}), label="Text")
    category = forms.CharField(max_length=MAX_SHORT_CHARS, required=False, label="Category")
    tags = forms.CharField(max_length=1000, required=False, label="Tags", help_text="Comma-separated.")
    etag = forms.CharField(max_length=80, required=False, widget=forms.HiddenInput)

    def entry_fields(self) -> dict:
        data = self.cleaned_data
        return {
            "title": data["title"],
            "text": data["text"],
            "category": data["category"] or None,
            "tags": [t.strip() for t in data["tags"].split(",") if t.strip()],
        }
