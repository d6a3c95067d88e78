"""``/api/v1/webhooks``: a tenant's webhook endpoints, for tenant tokens that may read and write (a
webhook receives the tenant's memories: registering one is a read of everything to come). Thin: each
verb calls one service or selector; errors are the API's problem details (atlas_site.api)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from atlas_site.api import actor_of, int_param, principal_of, query_params
from atlas_site.errors import ValidationFailed
from atlas_site.serializers import PROBLEM, WRITE_PROBLEMS, Choice, Strict
from tenants.tokens import TokenPrincipal
from webhooks import selectors, services
from webhooks.events import EVENT_TYPES
from webhooks.models import WebhookDelivery, WebhookEndpoint

MAX_PAGE = 200


class WebhookOut(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    description = serializers.CharField()
    enabled = serializers.BooleanField()
    disabled_reason = serializers.CharField(allow_null=True, help_text="Why it was disabled (it kept failing …).")
    failing_since = serializers.DateTimeField(allow_null=True)
    previous_secret_expires_at = serializers.DateTimeField(
        allow_null=True, help_text="Until then the secret before the last rotation signs too (a second v1)."
    )
    created_at = serializers.DateTimeField()


class WebhookCreatedOut(WebhookOut):
    secret = serializers.CharField(help_text="The signing secret: shown this once, stored encrypted.")


class WebhookListOut(serializers.Serializer):
    webhooks = WebhookOut(many=True)


class WebhookSecretOut(serializers.Serializer):
    secret = serializers.CharField(help_text="The new signing secret: shown this once.")
    previous_secret_expires_at = serializers.DateTimeField()


class DeliveryOut(serializers.Serializer):
    id = serializers.IntegerField()
    event_id = serializers.CharField(help_text="The event's id: receivers de-duplicate by it.")
    type = serializers.CharField()
    subject = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.values)
    attempts = serializers.IntegerField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    last_status_code = serializers.IntegerField(allow_null=True)
    last_latency_ms = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    data = serializers.JSONField(help_text="The event's data, as delivered (a forgotten memory's text is gone).")


class DeliveryPageOut(serializers.Serializer):
    deliveries = DeliveryOut(many=True)
    next_before = serializers.IntegerField(allow_null=True, help_text="Pass as ?before= for older deliveries.")


class WebhookIn(Strict):
    url = serializers.CharField(help_text="https:// only (docs/webhooks.md: where deliveries may go).")
    events = serializers.ListField(child=Choice(choices=list(EVENT_TYPES)), allow_empty=False)
    description = serializers.CharField(required=False, allow_blank=True)


class WebhookPatchIn(Strict):
    url = serializers.CharField(required=False)
    events = serializers.ListField(child=Choice(choices=list(EVENT_TYPES)), allow_empty=False, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    enabled = serializers.BooleanField(required=False)


def _admin(request: Request, *, change: bool) -> TokenPrincipal:
    principal = principal_of(request)
    principal.require_tenant_token()
    principal.require("read")
    if change:
        principal.require("write")
    return principal


def _endpoint(request: Request, webhook_id: str, *, change: bool = False) -> WebhookEndpoint:
    return selectors.endpoint_get(tenant=_admin(request, change=change).tenant, endpoint_id=webhook_id)


def _valid(serializer_class: type[Strict], request: Request) -> dict:
    serializer = serializer_class(data=request.data if isinstance(request.data, dict) else {})
    serializer.is_valid(raise_exception=True)
    return serializer.given()


class WebhooksView(APIView):
    @extend_schema(operation_id="webhook_list", summary="The tenant's webhook endpoints",
                   responses={200: WebhookListOut, **PROBLEM})  # fmt: skip
    def get(self, request: Request) -> Response:
        tenant = _admin(request, change=False).tenant
        return Response({"webhooks": [selectors.endpoint_view(e) for e in selectors.endpoints_list(tenant=tenant)]})

    @extend_schema(
        operation_id="webhook_create",
        summary="Register a webhook endpoint (its signing secret is in this answer only)",
        description="Not replayed by Idempotency-Key: the answer holds the secret, which is never stored in "
        "clear. After a lost answer, list the endpoints before trying again.",
        request=WebhookIn,
        responses={201: WebhookCreatedOut, **WRITE_PROBLEMS},
        examples=[
            OpenApiExample("a CRM", value={"url": "https://crm.example.com/atlas", "events": ["memory.created"]})
        ],
    )
    def post(self, request: Request) -> Response:
        principal = _admin(request, change=True)
        fields = _valid(WebhookIn, request)
        endpoint, secret = services.endpoint_create(
            tenant=principal.tenant, url=fields["url"], events=fields["events"],
            description=fields.get("description", ""), actor=actor_of(request),
        )  # fmt: skip
        return Response({**selectors.endpoint_view(endpoint), "secret": secret}, status=201)


class WebhookView(APIView):
    @extend_schema(operation_id="webhook_get", summary="One webhook endpoint",
                   responses={200: WebhookOut, **PROBLEM})  # fmt: skip
    def get(self, request: Request, webhook_id: str) -> Response:
        return Response(selectors.endpoint_view(_endpoint(request, webhook_id)))

    @extend_schema(
        operation_id="webhook_update",
        summary="Change or enable/disable a webhook endpoint",
        request=WebhookPatchIn,
        responses={200: WebhookOut, **WRITE_PROBLEMS},
        examples=[OpenApiExample("enable it again", value={"enabled": True})],
    )
    def patch(self, request: Request, webhook_id: str) -> Response:
        endpoint = _endpoint(request, webhook_id, change=True)
        fields = _valid(WebhookPatchIn, request)
        if not fields:
            raise ValidationFailed("give at least one of url, events, description, enabled")
        services.endpoint_update(endpoint=endpoint, actor=actor_of(request), **fields)
        return Response(selectors.endpoint_view(endpoint))

    @extend_schema(operation_id="webhook_delete", summary="Remove a webhook endpoint and its log",
                   responses={204: None, **PROBLEM})  # fmt: skip
    def delete(self, request: Request, webhook_id: str) -> Response:
        services.endpoint_delete(endpoint=_endpoint(request, webhook_id, change=True), actor=actor_of(request))
        return Response(status=204)


class WebhookSecretView(APIView):
    @extend_schema(
        operation_id="webhook_secret_rotate",
        summary="A new signing secret (the old one keeps signing for ATLAS_WEBHOOKS_SECRET_OVERLAP_HOURS)",
        request=None,
        responses={200: WebhookSecretOut, **PROBLEM},
    )
    def post(self, request: Request, webhook_id: str) -> Response:
        endpoint = _endpoint(request, webhook_id, change=True)
        secret = services.endpoint_secret_rotate(endpoint=endpoint, actor=actor_of(request))
        return Response({"secret": secret, "previous_secret_expires_at": endpoint.previous_secret_expires_at})


class DeliveriesView(APIView):
    @extend_schema(
        operation_id="webhook_deliveries",
        summary="A webhook endpoint's delivery log, newest first (kept ATLAS_WEBHOOKS_KEEP_DAYS)",
        parameters=[OpenApiParameter("page_size", OpenApiTypes.INT), OpenApiParameter("before", OpenApiTypes.INT)],
        responses={200: DeliveryPageOut, **PROBLEM},
    )
    def get(self, request: Request, webhook_id: str) -> Response:
        endpoint = _endpoint(request, webhook_id)
        query = query_params(request, {"page_size", "before"})
        size = int_param(query.get("page_size", "50"), "page_size")
        if not 1 <= size <= MAX_PAGE:
            raise ValidationFailed(f"page_size must be from 1 to {MAX_PAGE}", field="page_size")
        before = int_param(query["before"], "before") if "before" in query else None
        page = selectors.deliveries_list(endpoint=endpoint, limit=size + 1, before=before)
        more, page = len(page) > size, page[:size]
        return Response(
            {
                "deliveries": [selectors.delivery_view(d, payload=True) for d in page],
                "next_before": page[-1].pk if more else None,
            }
        )


class RedeliverView(APIView):
    @extend_schema(operation_id="webhook_redeliver", summary="Send a delivery's event again",
                   request=None, responses={202: DeliveryOut, **PROBLEM})  # fmt: skip
    def post(self, request: Request, webhook_id: str, delivery_id: str) -> Response:
        endpoint = _endpoint(request, webhook_id, change=True)
        delivery = selectors.delivery_get(endpoint=endpoint, delivery_id=delivery_id)
        again = services.delivery_redeliver(delivery=delivery, actor=actor_of(request))
        return Response(selectors.delivery_view(again, payload=True), status=202)
