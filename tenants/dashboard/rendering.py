"""How a tenant-section page links, renders, pages and shows a refusal: shared by every app's pages in
the section (this app's and the memory app's, which register under the same ``tenant`` URL names)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from atlas_site.errors import AtlasError, ValidationFailed

from .contributions import section_notices


def section_url(request: HttpRequest, name: str, *args: Any) -> str:
    return reverse(f"tenant:{name}", args=[request.tenant.slug, *args])


def section_render(request: HttpRequest, template: str, status: int = 200, **context: Any) -> HttpResponse:
    context.update(
        tenant=request.tenant,
        membership=request.membership,
        section=template.split(".")[0],
        notices=section_notices(request.tenant),
    )
    return render(request, f"dashboard/tenant/{template}", context, status=status)


def form_error(form: Any, error: AtlasError) -> None:
    """A service's refusal shown on the form field it names (or on the form)."""
    field = error.field if error.field in form.fields else None
    form.add_error(field, error.message)


def page_number(request: HttpRequest) -> int:
    raw = request.GET.get("page", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise ValidationFailed("page must be a positive whole number", field="page")
    return int(raw)
