"""The memory app's pages in the tenant section: a subject's memories (support, read-only), the tenant's
catalog and the job runs that touched the tenant. Form → one service or selector, for the tenant the admin's
membership names (tenants' ``access.tenant_admin_view``) → a template. Subjects' memories are read with each
subject's own key (:mod:`memory.on_behalf`, audited); the catalog with the tenant's key."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from atlas_site.errors import AtlasError, ValidationFailed
from memory import on_behalf, selectors
from memory.consolidation.outcomes import consolidation_runs_outcomes
from memory.models import ConsolidationRun
from memory.services import catalog
from memory.services.writes import memory_etag
from tenants.dashboard.access import actor_of, tenant_admin_view, tenant_subject
from tenants.dashboard.rendering import form_error, page_number, section_render, section_url
from tenants.models import MemorySubject
from tenants.selectors import usage_days
from tenants.usage import BudgetState, llm_budget_state

from .forms import CatalogEntryForm
from .pictures.charts import chart_svg, daily_chart_svg

CATALOG_PAGE_SIZE = 25
JOB_RUNS_PER_PAGE = 50
RUNS_CHARTED = 30
USAGE_DAYS_SHOWN = 30


def _memory_link(request: HttpRequest, who: MemorySubject) -> Callable[..., str]:
    def link(view: str, memory_id: str | None = None) -> str:
        names = {"browse": "subject_memories", "memory": "subject_memory", "chain": "subject_memory_chain"}
        return section_url(request, names[view], who.external_id, *([memory_id] if memory_id else []))

    return link


@tenant_admin_view
def subject_memories(request: HttpRequest, external_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    link = _memory_link(request, who)
    if (renamed := on_behalf.query_renamed(request.GET)) is not None:
        return HttpResponsePermanentRedirect(f"{request.path}?{renamed}")
    context = on_behalf.browse(subject=who, query=request.GET, actor=actor_of(request), link=link)
    return section_render(request, "memories.html", subject=who, browse_url=link("browse"), **context)


@tenant_admin_view
def subject_memory(request: HttpRequest, external_id: str, memory_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    link = _memory_link(request, who)
    context = on_behalf.detail(subject=who, memory_id=memory_id, actor=actor_of(request), link=link)
    chain_url = link("chain", memory_id=context["memory"]["id"])
    return section_render(
        request, "memory.html", subject=who, browse_url=link("browse"), chain_url=chain_url, **context
    )


@tenant_admin_view
def subject_memory_chain(request: HttpRequest, external_id: str, memory_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    link = _memory_link(request, who)
    context = on_behalf.chain(subject=who, memory_id=memory_id, actor=actor_of(request), link=link)
    return section_render(request, "chain.html", subject=who, browse_url=link("browse"), **context)


@tenant_admin_view
def subject_proposals(request: HttpRequest, external_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    link = _memory_link(request, who)
    context = on_behalf.proposals(subject=who, actor=actor_of(request), link=link)
    return section_render(request, "proposals.html", subject=who, browse_url=link("browse"), **context)


@tenant_admin_view
@require_http_methods(["GET", "POST"])
def catalog_entries(request: HttpRequest) -> HttpResponse:
    form = CatalogEntryForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                entry = catalog.catalog_entry_write(
                    tenant=request.tenant, actor=actor_of(request), **form.entry_fields()
                )
            except AtlasError as error:
                form_error(form, error)
            else:
                messages.success(request, f"Catalog entry “{entry['title']}” added.")
                return redirect(section_url(request, "catalog"))
        status = 400
    cursor = request.GET.get("cursor") or None
    page = selectors.catalog_list(tenant=request.tenant, page_size=CATALOG_PAGE_SIZE, cursor=cursor)
    return section_render(
        request, "catalog.html", status=status, form=form, entries=page["memories"],
        next_cursor=page["next_cursor"], first_page=cursor is None,
    )  # fmt: skip


@tenant_admin_view
@require_http_methods(["GET", "POST"])
def catalog_entry(request: HttpRequest, entry_id: str) -> HttpResponse:
    hit = catalog.catalog_entry_fetch(tenant=request.tenant, entry_id=entry_id)
    source = hit["_source"]
    initial = {
        "title": source.get("title", ""),
        "text": source.get("text", ""),
        "category": source.get("category") or "",
        "tags": ", ".join(source.get("tags") or []),
        "etag": memory_etag(source),
    }
    form = CatalogEntryForm(request.POST or None, initial=initial)
    if request.method == "POST":
        if form.is_valid():
            try:
                catalog.catalog_entry_update(
                    tenant=request.tenant,
                    entry_id=hit["_id"],
                    actor=actor_of(request),
                    if_match=form.cleaned_data["etag"] or None,
                    **form.entry_fields(),
                )
            except AtlasError as error:
                form_error(form, error)
                return section_render(
                    request, "catalog_entry.html", status=error.status, form=form, entry_id=hit["_id"]
                )
            messages.success(request, "Catalog entry saved.")
            return redirect(section_url(request, "catalog"))
        return section_render(request, "catalog_entry.html", status=400, form=form, entry_id=hit["_id"])
    return section_render(request, "catalog_entry.html", form=form, entry_id=hit["_id"])


@tenant_admin_view
@require_http_methods(["GET", "POST"])
def catalog_entry_delete(request: HttpRequest, entry_id: str) -> HttpResponse:
    hit = catalog.catalog_entry_fetch(tenant=request.tenant, entry_id=entry_id)
    if request.method == "POST":
        catalog.catalog_entry_delete(tenant=request.tenant, entry_id=hit["_id"], actor=actor_of(request))
        messages.success(request, f"Catalog entry “{hit['_source'].get('title')}” deleted.")
        return redirect(section_url(request, "catalog"))
    return section_render(request, "catalog_delete.html", entry=hit["_source"], entry_id=hit["_id"])


@tenant_admin_view
def job_runs(request: HttpRequest) -> HttpResponse:
    """The background job runs that touched this tenant: each subject's consolidation runs, newest first
    (retention and the archive write audit lines, on the audit trail)."""
    status = request.GET.get("status", "")
    if status and status not in ConsolidationRun.Status.values:
        raise ValidationFailed(f"status must be one of {', '.join(ConsolidationRun.Status.values)}", field="status")
    runs = ConsolidationRun.objects.filter(tenant=request.tenant).select_related("subject")
    if status:
        runs = runs.filter(status=status)
    page = Paginator(runs.order_by("-started_at", "-id"), JOB_RUNS_PER_PAGE).get_page(page_number(request))
    on_behalf.runs_listed(tenant=request.tenant, runs=list(page), actor=actor_of(request))  # errors may quote memories
    query = urlencode({"status": status}) if status else ""
    return section_render(
        request, "jobs.html", page=page, chosen=status, statuses=ConsolidationRun.Status.choices, query=query,
        chart=_runs_chart(runs), budget=llm_budget_state(tenant=request.tenant),
    )  # fmt: skip


def _runs_chart(runs) -> str | None:
    """The newest runs that planned something (oldest on the left): what the LLM proposed and what became
    of it; None when no run planned anything."""
    planned = list(runs.filter(plan__isnull=False).order_by("-started_at", "-id")[:RUNS_CHARTED])[::-1]
    if not planned:
        return None
    outcomes = consolidation_runs_outcomes(runs=planned)
    return chart_svg(
        title=f"What the last {len(planned)} consolidation runs proposed, and what became of it",
        categories=[f"#{o.run.pk} {o.run.subject.external_id[:12]} {o.run.started_at:%m-%d}" for o in outcomes],
        series={
            "proposed": [o.proposed for o in outcomes],
            "accepted": [o.accepted for o in outcomes],
            "rejected by the person": [o.rejected for o in outcomes],
            "dropped by validation and the guards": [o.dropped for o in outcomes],
            "waiting for review": [o.waiting for o in outcomes],
        },
        category_heading="Run",
    )


@tenant_admin_view
def usage(request: HttpRequest) -> HttpResponse:
    """The tenant's usage ledger, the last 30 UTC days (charts, and the numbers newest first), and where it
    stands against its budgets."""
    tenant = request.tenant
    rows = usage_days(tenant=tenant, days=USAGE_DAYS_SHOWN)
    budget = llm_budget_state(tenant=tenant)
    return section_render(
        request,
        "usage.html",
        rows=list(reversed(rows)),
        budget=budget,
        writes_today=rows[-1]["writes"],
        days=USAGE_DAYS_SHOWN,
        charts=_usage_charts(rows, budget),
    )


def _usage_charts(rows: list[dict], budget: BudgetState) -> list[str]:
    """Writes and recalls per day; LLM tokens as each month's running total against the monthly budget
    (the total starts again on the 1st, as the budget does)."""
    days = [date.fromisoformat(row["day"]) for row in rows]
    running, month = [], None
    for day, row in zip(days, rows, strict=True):
        total = (running[-1] if running and day.month == month else 0) + row["llm_tokens"]
        running.append(total)
        month = day.month
    return [
        daily_chart_svg(
            title=f"Writes and recalls per day, the last {len(days)} days (UTC)",
            days=days,
            series={"writes": [row["writes"] for row in rows], "recalls": [row["recalls"] for row in rows]},
        ),
        daily_chart_svg(
            title="LLM tokens this month, running total" + (" against the budget" if budget.budget else ""),
            days=days,
            series={"LLM tokens (in + out)": running},
            budget_line=budget.budget,
            kind="line",
        ),
    ]
