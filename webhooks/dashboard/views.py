"""The tenant section's webhook pages: the endpoints (add — the secret shown once —, enable/disable,
rotate, delete) and each one's delivery log with "send again". Form → one service or selector, for the
tenant the admin's membership names (tenants' ``access.tenant_admin_view``) → a template. The log shows
events' payloads: owners and admins may read every subject's memories (the support view) already."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from atlas_site.errors import AtlasError
from tenants.dashboard.access import actor_of, tenant_admin_view
from tenants.dashboard.rendering import form_error, section_render, section_url
from tenants.issued import secret_keep, secret_take
from webhooks import selectors, services
from webhooks.events import EVENT_TYPES

SESSION_KEY = "atlas.webhook_secret"
DELIVERIES_SHOWN = 100


class WebhookForm(forms.Form):
    url = forms.CharField(max_length=2000, label="URL", help_text="https:// only; it must answer 2xx.")
    events = forms.MultipleChoiceField(
        choices=[(e, e) for e in EVENT_TYPES], widget=forms.CheckboxSelectMultiple, label="Events"
    )
    description = forms.CharField(max_length=200, required=False, label="Description")


def _secret_keep(request: HttpRequest, endpoint_id: int, secret: str) -> None:
    """Carried across the redirect encrypted (sessions are stored), taken by the first page that shows it."""
    secret_keep(session=request.session, key=SESSION_KEY, owner=endpoint_id, secret=secret)


def _secret_take(request: HttpRequest) -> dict | None:
    kept = secret_take(session=request.session, key=SESSION_KEY)
    if kept is None:
        return None
    endpoint = selectors.endpoints_list(tenant=request.tenant).filter(pk=kept[0]).first()
    return {"endpoint": endpoint, "secret": kept[1]} if endpoint else None


@never_cache  # the page after a creation holds the secret, shown this once
@tenant_admin_view
@require_http_methods(["GET", "POST"])
def webhooks(request: HttpRequest) -> HttpResponse:
    form = WebhookForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                endpoint, secret = services.endpoint_create(
                    tenant=request.tenant, actor=actor_of(request), **form.cleaned_data
                )
            except AtlasError as error:
                form_error(form, error)
            else:
                _secret_keep(request, endpoint.pk, secret)
                return redirect(section_url(request, "webhooks"))
    endpoints = selectors.endpoints_list(tenant=request.tenant)
    return section_render(
        request, "webhooks.html", status=status, form=form, endpoints=endpoints, issued=_secret_take(request)
    )


@never_cache
@tenant_admin_view
def webhook(request: HttpRequest, webhook_id: str) -> HttpResponse:
    endpoint = selectors.endpoint_get(tenant=request.tenant, endpoint_id=webhook_id)
    deliveries = [
        selectors.delivery_view(d, payload=True)
        for d in selectors.deliveries_list(endpoint=endpoint, limit=DELIVERIES_SHOWN)
    ]
    services.deliveries_viewed(endpoint=endpoint, deliveries=deliveries, actor=actor_of(request))
    return section_render(
        request, "webhook.html", endpoint=endpoint, deliveries=deliveries, issued=_secret_take(request)
    )


@tenant_admin_view
@require_POST
def webhook_enabled(request: HttpRequest, webhook_id: str) -> HttpResponse:
    endpoint = selectors.endpoint_get(tenant=request.tenant, endpoint_id=webhook_id)
    enable = request.POST.get("enabled") == "true"
    services.endpoint_update(endpoint=endpoint, enabled=enable, actor=actor_of(request))
    messages.success(request, f"Webhook {endpoint.url} {'enabled' if enable else 'disabled'}.")
    return redirect(section_url(request, "webhook", endpoint.pk))


@tenant_admin_view
@require_POST
def webhook_rotate(request: HttpRequest, webhook_id: str) -> HttpResponse:
    endpoint = selectors.endpoint_get(tenant=request.tenant, endpoint_id=webhook_id)
    _secret_keep(request, endpoint.pk, services.endpoint_secret_rotate(endpoint=endpoint, actor=actor_of(request)))
    return redirect(section_url(request, "webhook", endpoint.pk))


@tenant_admin_view
@require_POST
def webhook_delete(request: HttpRequest, webhook_id: str) -> HttpResponse:
    endpoint = selectors.endpoint_get(tenant=request.tenant, endpoint_id=webhook_id)
    services.endpoint_delete(endpoint=endpoint, actor=actor_of(request))
    messages.success(request, f"Webhook {endpoint.url} removed, with its delivery log.")
    return redirect(section_url(request, "webhooks"))


@tenant_admin_view
@require_POST
def delivery_again(request: HttpRequest, webhook_id: str, delivery_id: str) -> HttpResponse:
    endpoint = selectors.endpoint_get(tenant=request.tenant, endpoint_id=webhook_id)
    delivery = selectors.delivery_get(endpoint=endpoint, delivery_id=delivery_id)
    try:
        services.delivery_redeliver(delivery=delivery, actor=actor_of(request))
    except AtlasError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Event {delivery.event_id} will be sent again.")
    return redirect(section_url(request, "webhook", endpoint.pk))
