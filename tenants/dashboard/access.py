"""Who may use a tenant page: a logged-in owner or admin of that (active) tenant — decided once, here.

The tenant comes from the URL's slug but is only ever one of the person's own owner/admin memberships;
another tenant's slug, a deactivated tenant, or a plain member's is the same 404 as a missing tenant.
Subjects and tokens are then looked up within that tenant only.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse

from atlas_site.echo import echoed
from atlas_site.error_pages import error_page
from atlas_site.errors import AtlasError, NotFound
from tenants.models import MemorySubject
from tenants.selectors import tenant_membership_admin


def actor_of(request: HttpRequest) -> str:
    """How the audit trail names a tenant admin acting in the tenant section."""
    return f"tenant-admin:{request.user.email}"


def tenant_subject(request: HttpRequest, external_id: str) -> MemorySubject:
    """A subject of the request's tenant (active or not); any other is "not found"."""
    subject = (
        MemorySubject.objects.select_related("tenant", "person")
        .filter(tenant=request.tenant, external_id=external_id)
        .first()
    )
    if subject is None:
        raise NotFound(f"no subject {echoed(external_id)} in this tenant", field="subject")
    return subject


def tenant_admin_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Log-in required; sets ``request.tenant`` and ``request.membership`` from the slug, maps AtlasError."""

    @wraps(view)
    def wrapped(request: HttpRequest, slug: str, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        try:
            request.membership = tenant_membership_admin(person=request.user, slug=slug)
            request.tenant = request.membership.tenant
            return view(request, *args, **kwargs)
        except AtlasError as error:
            return error_page(request, error)

    return wrapped
