"""Operators' admin of the memory app."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from tenants.models import MemorySubject

from . import on_behalf
from .admin_memory import SubjectWithMemoriesAdmin, memory_permitted
from .models import ConsolidationRun, ConsolidationState

# ------------------------------------------------------------------------------------------------
# Consolidation runs and per-subject state: read-only (the job writes them; `atlas_consolidate
# --approve RUN` applies a run that waits for review). Self-contained block: other memory admin views
# live beside it.
#
# A run's plan, dropped items and error quote the subject's episodes and facts: only an operator holding
# the memory view permission sees them (each look audited, as on the memory pages); everyone else sees
# what the run did in numbers. Nothing that quotes them is listed or searched (docs/security.md).
RUN_SUMMARY_FIELDS = [
    "tenant",
    "subject",
    "status",
    "worker",
    "window_start_at",
    "window_start_id",
    "window_end_at",
    "window_end_id",
    "window_key",
    "episodes",
    "changes_summary",
    "rejected_count",
    "attempts",
    "llm_model",
    "prompt_tokens",
    "completion_tokens",
    "llm_requests",
    "cost",
    "duration_ms",
    "started_at",
    "finished_at",
]
RUN_TEXT_FIELDS = ["error", "changes_pretty", "rejected_pretty", "plan_pretty"]


class ConsolidationRunAdmin(admin.ModelAdmin):
    list_display = [
        "started_at",
        "tenant",
        "subject",
        "status",
        "episodes",
        "changes_summary",
        "rejected_count",
        "llm_model",
        "tokens",
        "duration_ms",
    ]
    list_filter = ["status", "tenant", "llm_model", "started_at"]
    search_fields = ["subject__external_id", "tenant__slug", "window_key"]
    list_select_related = ["tenant", "subject"]
    date_hierarchy = "started_at"
    readonly_fields = RUN_SUMMARY_FIELDS + RUN_TEXT_FIELDS

    def get_fields(self, request, obj=None):
        return RUN_SUMMARY_FIELDS + (RUN_TEXT_FIELDS if memory_permitted(request) else [])

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        run = getattr(response, "context_data", {}).get("original")
        if request.method == "GET" and response.status_code == 200 and run is not None and memory_permitted(request):
            on_behalf.run_viewed(run=run, actor=f"admin:{request.user.email}")
        return response

    @admin.display(description="changes")
    def changes_summary(self, run: ConsolidationRun) -> str:
        return ", ".join(f"{n} {kind}" for kind, n in run.change_counts().items()) or "—"

    @admin.display(description="dropped")
    def rejected_count(self, run: ConsolidationRun) -> int:
        return len(run.rejected or [])

    @admin.display(description="tokens (prompt + completion)")
    def tokens(self, run: ConsolidationRun) -> str:
        return f"{run.prompt_tokens} + {run.completion_tokens}"

    @staticmethod
    def _pretty(value) -> str:
        return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))

    @admin.display(description="changes (ids)")
    def changes_pretty(self, run: ConsolidationRun) -> str:
        return self._pretty(run.changes)

    @admin.display(description="dropped by validation")
    def rejected_pretty(self, run: ConsolidationRun) -> str:
        return self._pretty(run.rejected)

    @admin.display(description="plan")
    def plan_pretty(self, run: ConsolidationRun) -> str:
        return self._pretty(run.plan)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class ConsolidationStateAdmin(admin.ModelAdmin):
    list_display = ["subject", "watermark_at", "lease_owner", "lease_expires_at", "queued_at", "last_run_at"]
    list_select_related = ["subject__tenant"]
    search_fields = ["subject__external_id", "subject__tenant__slug"]
    readonly_fields = list_display + ["watermark_id"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


def consolidation_admin_register(site: admin.AdminSite) -> None:
    site.register(ConsolidationRun, ConsolidationRunAdmin)
    site.register(ConsolidationState, ConsolidationStateAdmin)


consolidation_admin_register(admin.site)
# ------------------------------------------------------------------------------------------------

# A subject's memory pages mount under the subject's admin (tenants.admin, which imports nothing of memory).
admin.site.unregister(MemorySubject)
admin.site.register(MemorySubject, SubjectWithMemoriesAdmin)
