"""Operators' admin of the memory app."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from .models import ConsolidationRun, ConsolidationState


# ------------------------------------------------------------------------------------------------
# Consolidation runs and per-subject state: read-only (the job writes them; `atlas_consolidate
# --approve RUN` applies a run that waits for review). Self-contained block: other memory admin views
# live beside it.
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
        "error_short",
    ]
    list_filter = ["status", "tenant", "llm_model", "started_at"]
    search_fields = ["subject__external_id", "tenant__slug", "error", "window_key"]
    list_select_related = ["tenant", "subject"]
    date_hierarchy = "started_at"
    readonly_fields = [
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
        "attempts",
        "llm_model",
        "prompt_tokens",
        "completion_tokens",
        "llm_requests",
        "cost",
        "duration_ms",
        "error",
        "started_at",
        "finished_at",
        "changes_pretty",
        "rejected_pretty",
        "plan_pretty",
    ]
    exclude = ["changes", "rejected", "plan"]

    @admin.display(description="changes")
    def changes_summary(self, run: ConsolidationRun) -> str:
        return ", ".join(f"{n} {kind}" for kind, n in run.change_counts().items()) or "—"

    @admin.display(description="dropped")
    def rejected_count(self, run: ConsolidationRun) -> int:
        return len(run.rejected or [])

    @admin.display(description="tokens (prompt + completion)")
    def tokens(self, run: ConsolidationRun) -> str:
        return f"{run.prompt_tokens} + {run.completion_tokens}"

    @admin.display(description="error")
    def error_short(self, run: ConsolidationRun) -> str:
        return run.error[:80]

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
