"""What the tenant section's forms accept; the services behind them check the rest (and say why)."""

from __future__ import annotations

from django import forms

from tenants.models import Membership, Tenant
from tenants.tokens import MAX_NAME_CHARS, SCOPES


class SubjectCreateForm(forms.Form):
    external_id = forms.CharField(
        max_length=128,
        label="External id",
        help_text="How your application names this user (letters, digits, . _ @ : + -).",
    )
    display_name = forms.CharField(max_length=200, required=False, label="Display name")
    email = forms.EmailField(
        required=False,
        label="Person's email (optional)",
        help_text="Links someone who has signed up: they see these memories.",
    )


class SubjectLinkForm(forms.Form):
    email = forms.EmailField(required=False, label="Person's email", help_text="Leave empty to unlink.")


class TenantTokenForm(forms.Form):
    name = forms.CharField(max_length=MAX_NAME_CHARS, label="Name", help_text="Which agent or service will use it.")
    scopes = forms.MultipleChoiceField(
        choices=[
            ("read", "read — recall and list any subject's memories"),
            ("write", "write — store memories and catalog entries"),
            ("forget", "forget — delete memories"),
            ("review", "review — accept or reject what agents and the nightly job propose, for the people"),
        ],
        widget=forms.CheckboxSelectMultiple,
        initial=["read", "write"],
        label="What it may do",
    )

    def clean_scopes(self) -> list[str]:
        return [s for s in SCOPES if s in self.cleaned_data["scopes"]]


class MemberRemoveForm(forms.Form):
    email = forms.EmailField(label="Email")


class MemberForm(forms.Form):
    email = forms.EmailField(label="Email", help_text="They must have signed up already.")
    role = forms.ChoiceField(choices=Membership.Role.choices, label="Role")


class TenantSettingsForm(forms.Form):
    review_mode = forms.ChoiceField(
        choices=Tenant.ReviewMode.choices,
        label="Review mode",
        help_text="What waits for the person's review before agents' recall may use it. A person's own facts "
        "are never replaced without their review, in every mode.",
    )
    llm_token_budget = forms.IntegerField(
        required=False,
        min_value=0,
        label="Monthly LLM token budget",
        help_text="Tokens (in + out) the nightly consolidation may spend per calendar month (UTC). Empty: no limit.",
    )
    daily_write_quota = forms.IntegerField(
        required=False,
        min_value=0,
        label="Daily write quota",
        help_text="Memories agents and people may write per UTC day; past it writes are refused (429) until "
        "midnight UTC. Empty: no limit.",
    )
