"""The tenant section's pages: form → one service or selector, for the tenant the admin's membership names
(``access.tenant_admin_view``) → a template. Subjects' memories are read with each subject's own key
(:mod:`memory.on_behalf`, audited); the catalog with the tenant's key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from atlas_site.errors import AtlasError, ValidationFailed
from memory import on_behalf, selectors
from memory.services import catalog
from memory.services.writes import memory_etag
from tenants import services, tokens
from tenants.issued import issued_keep, issued_take
from tenants.models import AuditRecord, Membership, MemorySubject, Person

from .access import actor_of, tenant_admin_view, tenant_subject
from .forms import (
    CatalogEntryForm,
    MemberForm,
    MemberRemoveForm,
    SubjectCreateForm,
    SubjectLinkForm,
    TenantSettingsForm,
    TenantTokenForm,
)

SUBJECTS_PER_PAGE = 25
AUDIT_PER_PAGE = 50
CATALOG_PAGE_SIZE = 25


def _url(request: HttpRequest, name: str, *args: Any) -> str:
    return reverse(f"tenant:{name}", args=[request.tenant.slug, *args])


def _render(request: HttpRequest, template: str, status: int = 200, **context: Any) -> HttpResponse:
    context.update(tenant=request.tenant, membership=request.membership, section=template.split(".")[0])
    return render(request, f"dashboard/tenant/{template}", context, status=status)


def _form_error(form: Any, error: AtlasError) -> None:
    """A service's refusal shown on the form field it names (or on the form)."""
    field = error.field if error.field in form.fields else None
    form.add_error(field, error.message)


def _page_number(request: HttpRequest) -> int:
    raw = request.GET.get("page", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise ValidationFailed("page must be a positive whole number", field="page")
    return int(raw)


# ----------------------------------------------------------------------- subjects
@tenant_admin_view
@require_http_methods(["GET", "POST"])
def subjects(request: HttpRequest) -> HttpResponse:
    form = SubjectCreateForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                person = None
                if data["email"]:
                    person = Person.objects.filter(email=data["email"].lower(), is_active=True).first()
                    if person is None:
                        raise ValidationFailed("no person with that email; they must sign up first", field="email")
                subject = services.subject_create(
                    tenant=request.tenant,
                    external_id=data["external_id"],
                    display_name=data["display_name"],
                    person=person,
                    actor=actor_of(request),
                )
            except AtlasError as error:
                _form_error(form, error)
            else:
                messages.success(request, f"Subject {subject.external_id} created, with its own Elasticsearch key.")
                return redirect(_url(request, "subject", subject.external_id))
        status = 400
    page = Paginator(
        MemorySubject.objects.filter(tenant=request.tenant).select_related("person").order_by("external_id"),
        SUBJECTS_PER_PAGE,
    ).get_page(_page_number(request))
    rows = [(subject, _counts(subject)) for subject in page]
    return _render(request, "subjects.html", status=status, form=form, page=page, rows=rows)


def _counts(subject: MemorySubject) -> dict[str, int] | None:
    """The subject's memories per type, or None when they cannot be read (a deactivated subject's key is revoked)."""
    if not subject.is_active:
        return None
    return selectors.memory_counts(subject=subject)


@tenant_admin_view
@require_http_methods(["GET", "POST"])
def subject(request: HttpRequest, external_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    form = SubjectLinkForm(request.POST or None, initial={"email": who.person.email if who.person else ""})
    if request.method == "POST":
        if form.is_valid():
            try:
                services.subject_person_link(subject=who, email=form.cleaned_data["email"], actor=actor_of(request))
            except AtlasError as error:
                _form_error(form, error)
            else:
                messages.success(request, "Saved.")
                return redirect(_url(request, "subject", who.external_id))
        return _render(request, "subject.html", status=400, subject=who, form=form, counts=_counts(who))
    return _render(request, "subject.html", subject=who, form=form, counts=_counts(who))


@tenant_admin_view
@require_http_methods(["GET", "POST"])
def subject_deactivate(request: HttpRequest, external_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    if request.method == "POST":
        services.subject_deactivate(subject=who, actor=actor_of(request))
        messages.success(request, f"Subject {who.external_id} is deactivated: its key and its tokens are revoked.")
        return redirect(_url(request, "subject", who.external_id))
    active_tokens = tokens.tokens_list(tenant=request.tenant, subject=who, active_only=True).count()
    return _render(request, "subject_deactivate.html", subject=who, active_tokens=active_tokens)


# ------------------------------------------------------- a subject's memories (support)
def _memory_link(request: HttpRequest, who: MemorySubject) -> Callable[..., str]:
    def link(view: str, memory_id: str | None = None) -> str:
        names = {"browse": "subject_memories", "memory": "subject_memory", "chain": "subject_memory_chain"}
        return _url(request, names[view], who.external_id, *([memory_id] if memory_id else []))

    return link


@tenant_admin_view
def subject_memories(request: HttpRequest, external_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    link = _memory_link(request, who)
    if (renamed := on_behalf.query_renamed(request.GET)) is not None:
        return HttpResponsePermanentRedirect(f"{request.path}?{renamed}")
    context = on_behalf.browse(subject=who, query=request.GET, actor=actor_of(request), link=link)
    return _render(request, "memories.html", subject=who, browse_url=link("browse"), **context)


@tenant_admin_view
def subject_memory(request: HttpRequest, external_id: str, memory_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    link = _memory_link(request, who)
    context = on_behalf.detail(subject=who, memory_id=memory_id, actor=actor_of(request), link=link)
    chain_url = link("chain", memory_id=context["memory"]["id"])
    return _render(request, "memory.html", subject=who, browse_url=link("browse"), chain_url=chain_url, **context)


@tenant_admin_view
def subject_memory_chain(request: HttpRequest, external_id: str, memory_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    link = _memory_link(request, who)
    context = on_behalf.chain(subject=who, memory_id=memory_id, actor=actor_of(request), link=link)
    return _render(request, "chain.html", subject=who, browse_url=link("browse"), **context)


@tenant_admin_view
def subject_proposals(request: HttpRequest, external_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    link = _memory_link(request, who)
    context = on_behalf.proposals(subject=who, actor=actor_of(request), link=link)
    return _render(request, "proposals.html", subject=who, browse_url=link("browse"), **context)


@tenant_admin_view
@require_http_methods(["GET", "POST"])
def tenant_settings(request: HttpRequest) -> HttpResponse:
    form = TenantSettingsForm(request.POST or None, initial={"review_mode": request.tenant.review_mode})
    if request.method == "POST":
        if form.is_valid():
            try:
                services.tenant_review_mode_set(
                    tenant=request.tenant, review_mode=form.cleaned_data["review_mode"], actor=actor_of(request)
                )
            except AtlasError as error:
                _form_error(form, error)
            else:
                messages.success(request, "Saved.")
                return redirect(_url(request, "settings"))
        return _render(request, "settings.html", status=400, form=form)
    return _render(request, "settings.html", form=form)


# ------------------------------------------------------------------------- catalog
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
                _form_error(form, error)
            else:
                messages.success(request, f"Catalog entry “{entry['title']}” added.")
                return redirect(_url(request, "catalog"))
        status = 400
    cursor = request.GET.get("cursor") or None
    page = selectors.catalog_list(tenant=request.tenant, page_size=CATALOG_PAGE_SIZE, cursor=cursor)
    return _render(
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
                _form_error(form, error)
                return _render(request, "catalog_entry.html", status=error.status, form=form, entry_id=hit["_id"])
            messages.success(request, "Catalog entry saved.")
            return redirect(_url(request, "catalog"))
        return _render(request, "catalog_entry.html", status=400, form=form, entry_id=hit["_id"])
    return _render(request, "catalog_entry.html", form=form, entry_id=hit["_id"])


@tenant_admin_view
@require_http_methods(["GET", "POST"])
def catalog_entry_delete(request: HttpRequest, entry_id: str) -> HttpResponse:
    hit = catalog.catalog_entry_fetch(tenant=request.tenant, entry_id=entry_id)
    if request.method == "POST":
        catalog.catalog_entry_delete(tenant=request.tenant, entry_id=hit["_id"], actor=actor_of(request))
        messages.success(request, f"Catalog entry “{hit['_source'].get('title')}” deleted.")
        return redirect(_url(request, "catalog"))
    return _render(request, "catalog_delete.html", entry=hit["_source"], entry_id=hit["_id"])


# -------------------------------------------------------------------------- tokens
@never_cache  # the answer to a creation holds the token, shown this once
@tenant_admin_view
@require_http_methods(["GET", "POST"])
def tenant_tokens(request: HttpRequest) -> HttpResponse:
    form = TenantTokenForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                issued = tokens.token_create(
                    tenant=request.tenant,
                    name=form.cleaned_data["name"],
                    scopes=form.cleaned_data["scopes"],
                    actor=actor_of(request),
                )
            except AtlasError as error:
                _form_error(form, error)
            else:
                # Post/redirect/get: a reload of the page that shows the secret creates nothing again.
                issued_keep(session=request.session, issued=issued)
                return redirect(_url(request, "tokens"))
    issued = issued_take(session=request.session, tenant=request.tenant)
    listed = tokens.tokens_list(tenant=request.tenant)
    api_url = settings.ATLAS_PUBLIC_URL.rstrip("/") + "/api/v1/"
    return _render(request, "tokens.html", status=status, form=form, issued=issued, tokens=listed, api_url=api_url)


@tenant_admin_view
@require_POST
def tenant_token_revoke(request: HttpRequest, prefix: str) -> HttpResponse:
    token = tokens.token_get(tenant=request.tenant, prefix=prefix)
    if tokens.token_revoke(token=token, actor=actor_of(request)):
        messages.success(request, f"Token “{token.name}” revoked: it stops working now.")
    return redirect(_url(request, "tokens"))


# ------------------------------------------------------------------ members, audit
@tenant_admin_view
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest) -> HttpResponse:
    form = MemberForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                membership = services.membership_role_set(
                    tenant=request.tenant,
                    email=form.cleaned_data["email"],
                    role=form.cleaned_data["role"],
                    by=request.membership,
                    actor=actor_of(request),
                )
            except AtlasError as error:
                _form_error(form, error)
            else:
                messages.success(request, f"{membership.person.email} is now {membership.role}.")
                return redirect(_url(request, "members"))
    listed = Membership.objects.filter(tenant=request.tenant).select_related("person").order_by("person__email")
    return _render(request, "members.html", status=status, form=form, members=listed)


@tenant_admin_view
@require_POST
def member_remove(request: HttpRequest) -> HttpResponse:
    """Remove someone from the tenant: their subjects here are unlinked and their personal tokens revoked."""
    form = MemberRemoveForm(request.POST)
    if not form.is_valid():
        raise ValidationFailed("the email of the member to remove is required", field="email")
    email = form.cleaned_data["email"]
    services.membership_remove(tenant=request.tenant, email=email, by=request.membership, actor=actor_of(request))
    messages.success(request, f"{email} is no longer a member: their subjects here are unlinked, their tokens revoked.")
    return redirect(_url(request, "members"))


@tenant_admin_view
def audit(request: HttpRequest) -> HttpResponse:
    records = AuditRecord.objects.filter(tenant=request.tenant).order_by("-created_at", "-id")
    page = Paginator(records, AUDIT_PER_PAGE).get_page(_page_number(request))
    return _render(request, "audit.html", page=page)


@tenant_admin_view
def job_runs(request: HttpRequest) -> HttpResponse:
    """The background job runs that touched this tenant: each subject's consolidation runs, newest first
    (retention and the archive write audit lines, on the audit trail)."""
    from memory.models import ConsolidationRun

    status = request.GET.get("status", "")
    if status and status not in ConsolidationRun.Status.values:
        raise ValidationFailed(f"status must be one of {', '.join(ConsolidationRun.Status.values)}", field="status")
    runs = ConsolidationRun.objects.filter(tenant=request.tenant).select_related("subject")
    if status:
        runs = runs.filter(status=status)
    page = Paginator(runs.order_by("-started_at", "-id"), AUDIT_PER_PAGE).get_page(_page_number(request))
    on_behalf.runs_listed(tenant=request.tenant, runs=list(page), actor=actor_of(request))  # errors may quote memories
    query = urlencode({"status": status}) if status else ""
    return _render(
        request, "jobs.html", page=page, chosen=status, statuses=ConsolidationRun.Status.choices, query=query
    )


@tenant_admin_view
def overview(request: HttpRequest) -> HttpResponse:
    return redirect(_url(request, "subjects"))
