"""The navigation's link to the tenant section: the tenants the logged-in person administers."""

from __future__ import annotations

from django import template

from tenants.selectors import person_admin_tenants

register = template.Library()


@register.simple_tag(takes_context=True)
def admin_tenants(context) -> list:
    request = context.get("request")
    return person_admin_tenants(person=getattr(request, "user", None)) if request is not None else []
