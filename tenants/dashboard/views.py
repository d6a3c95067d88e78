"""The tenant section's own pages: form → one service or selector, for the tenant the admin's membership
names (``access.tenant_admin_view``) → a template. A subject's memories, the catalog and the job runs are the
memory app's pages in the same section (memory/dashboard/tenant_views.py, under the same ``tenant`` names)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from atlas_site.errors import AtlasError, ValidationFailed
from tenants import services, tokens
from tenants.issued import issued_keep, issued_take
from tenants.models import AuditRecord, Membership, MemorySubject, Person
from tenants.usage import tenant_budgets_set

from .access import actor_of, tenant_admin_view, tenant_subject
from .contributions import subject_counts
from .forms import (
    MemberForm,
    MemberRemoveForm,
    SubjectCreateForm,
    SubjectLinkForm,
    TenantSettingsForm,
    TenantTokenForm,
)
from .rendering import form_error, page_number, section_render, section_url

SUBJECTS_PER_PAGE = 25
AUDIT_PER_PAGE = 50


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
                form_error(form, error)
            else:
                messages.success(request, f"Subject {subject.external_id} created, with its own Elasticsearch key.")
                return redirect(section_url(request, "subject", subject.external_id))
        status = 400
    page = Paginator(
        MemorySubject.objects.filter(tenant=request.tenant).select_related("person").order_by("external_id"),
        SUBJECTS_PER_PAGE,
    ).get_page(page_number(request))
    rows = [(subject, subject_counts(subject)) for subject in page]
    return section_render(request, "subjects.html", status=status, form=form, page=page, rows=rows)


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
                form_error(form, error)
            else:
                messages.success(request, "Saved.")
                return redirect(section_url(request, "subject", who.external_id))
        return section_render(request, "subject.html", status=400, subject=who, form=form, counts=subject_counts(who))
    return section_render(request, "subject.html", subject=who, form=form, counts=subject_counts(who))


@tenant_admin_view
@require_http_methods(["GET", "POST"])
def subject_deactivate(request: HttpRequest, external_id: str) -> HttpResponse:
    who = tenant_subject(request, external_id)
    if request.method == "POST":
        services.subject_deactivate(subject=who, actor=actor_of(request))
        messages.success(request, f"Subject {who.external_id} is deactivated: its key and its tokens are revoked.")
        return redirect(section_url(request, "subject", who.external_id))
    active_tokens = tokens.tokens_list(tenant=request.tenant, subject=who, active_only=True).count()
    return section_render(request, "subject_deactivate.html", subject=who, active_tokens=active_tokens)


@tenant_admin_view
@require_http_methods(["GET", "POST"])
def tenant_settings(request: HttpRequest) -> HttpResponse:
    tenant = request.tenant
    initial = {
        "review_mode": tenant.review_mode,
        "llm_token_budget": tenant.llm_token_budget,
        "daily_write_quota": tenant.daily_write_quota,
    }
    form = TenantSettingsForm(request.POST or None, initial=initial)
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                with transaction.atomic():  # both or neither
                    services.tenant_review_mode_set(
                        tenant=tenant, review_mode=data["review_mode"], actor=actor_of(request)
                    )
                    tenant_budgets_set(
                        tenant=tenant,
                        actor=actor_of(request),
                        **{name: data[name] for name in ("llm_token_budget", "daily_write_quota")},
                    )
            except AtlasError as error:
                form_error(form, error)
            else:
                messages.success(request, "Saved.")
                return redirect(section_url(request, "settings"))
        return section_render(request, "settings.html", status=400, form=form)
    return section_render(request, "settings.html", form=form)


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
                form_error(form, error)
            else:
                # Post/redirect/get: a reload of the page that shows the secret creates nothing again.
                issued_keep(session=request.session, issued=issued)
                return redirect(section_url(request, "tokens"))
    issued = issued_take(session=request.session, tenant=request.tenant)
    listed = tokens.tokens_list(tenant=request.tenant)
    api_url = settings.ATLAS_PUBLIC_URL.rstrip("/") + "/api/v1/"
    return section_render(
        request, "tokens.html", status=status, form=form, issued=issued, tokens=listed, api_url=api_url
    )


@tenant_admin_view
@require_POST
def tenant_token_revoke(request: HttpRequest, prefix: str) -> HttpResponse:
    token = tokens.token_get(tenant=request.tenant, prefix=prefix)
    if tokens.token_revoke(token=token, actor=actor_of(request)):
        messages.success(request, f"Token “{token.name}” revoked: it stops working now.")
    return redirect(section_url(request, "tokens"))


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
                form_error(form, error)
            else:
                messages.success(request, f"{membership.person.email} is now {membership.role}.")
                return redirect(section_url(request, "members"))
    listed = Membership.objects.filter(tenant=request.tenant).select_related("person").order_by("person__email")
    return section_render(request, "members.html", status=status, form=form, members=listed)


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
    return redirect(section_url(request, "members"))


@tenant_admin_view
def audit(request: HttpRequest) -> HttpResponse:
    records = AuditRecord.objects.filter(tenant=request.tenant).order_by("-created_at", "-id")
    page = Paginator(records, AUDIT_PER_PAGE).get_page(page_number(request))
    return section_render(request, "audit.html", page=page)


@tenant_admin_view
def overview(request: HttpRequest) -> HttpResponse:
    return redirect(section_url(request, "subjects"))
