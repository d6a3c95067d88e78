"""``/api/v1/me`` (what this token is and may do) and ``/api/v1/subjects`` (tenant tokens)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from atlas_site.api import actor_of, idempotent, int_param, principal_of, query_params
from atlas_site.cursors import cursor_decode, cursor_encode, sort_id
from atlas_site.errors import ValidationFailed
from atlas_site.serializers import PROBLEM, WRITE_PROBLEMS, Strict
from tenants import services
from tenants.models import MemorySubject

MAX_PAGE = 200


class MeOut(serializers.Serializer):
    tenant = serializers.CharField()
    kind = serializers.ChoiceField(choices=["tenant", "subject"])
    subject = serializers.CharField(allow_null=True, help_text="A subject token's own subject.")
    scopes = serializers.ListField(child=serializers.CharField())
    token = serializers.CharField(help_text="The token's prefix (never the secret).")
    name = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True)


class SubjectOut(serializers.Serializer):
    id = serializers.CharField(help_text="The external id: {subject} in memory routes.")
    display_name = serializers.CharField()
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class SubjectPageOut(serializers.Serializer):
    subjects = SubjectOut(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="Pass as ?cursor= for the next page.")


class SubjectIn(Strict):
    id = serializers.CharField(help_text="Your id for the end user (1-128 letters, digits, . _ @ : + -).")
    display_name = serializers.CharField(required=False, allow_blank=True)


def _subject(subject: MemorySubject) -> dict:
    return {
        "id": subject.external_id,
        "display_name": subject.display_name,
        "active": subject.is_active,
        "created_at": subject.created_at,
    }


class MeView(APIView):
    @extend_schema(operation_id="me", summary="What this token is and may do", responses={200: MeOut, **PROBLEM})
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        token = principal.token
        return Response(
            {
                "tenant": principal.tenant.slug,
                "kind": token.kind,
                "subject": principal.subject.external_id if principal.subject else None,
                "scopes": sorted(principal.scopes),
                "token": f"atlas_{token.prefix}_…",
                "name": token.name,
                "expires_at": token.expires_at,
            }
        )


class SubjectsView(APIView):
    @extend_schema(
        operation_id="subject_list",
        summary="The tenant's subjects (tenant tokens)",
        parameters=[OpenApiParameter("page_size", OpenApiTypes.INT), OpenApiParameter("cursor", OpenApiTypes.STR)],
        responses={200: SubjectPageOut, **PROBLEM},
    )
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        principal.require_tenant_token()
        principal.require("read")
        query = query_params(request, {"page_size", "cursor"})
        size = int_param(query.get("page_size", "50"), "page_size")
        if not 1 <= size <= MAX_PAGE:
            raise ValidationFailed(f"page_size must be from 1 to {MAX_PAGE}", field="page_size")
        subjects = MemorySubject.objects.filter(tenant=principal.tenant).order_by("external_id")
        if "cursor" in query:
            (after,) = cursor_decode(query["cursor"], parts=(sort_id,))
            subjects = subjects.filter(external_id__gt=after)
        page = list(subjects[: size + 1])
        more = len(page) > size
        page = page[:size]
        return Response(
            {
                "subjects": [_subject(x) for x in page],
                "next_cursor": cursor_encode([page[-1].external_id]) if more else None,
            }
        )

    @extend_schema(
        operation_id="subject_create",
        summary="Create a subject (mints its Elasticsearch key)",
        request=SubjectIn,
        responses={201: SubjectOut, **WRITE_PROBLEMS},
        examples=[OpenApiExample("a new end user", value={"id": "alice", "display_name": "Alice"})],
    )
    @idempotent
    def post(self, request: Request) -> Response:
        principal = principal_of(request)
        principal.require_tenant_token()
        principal.require("write")
        serializer = SubjectIn(data=request.data if isinstance(request.data, dict) else {})
        serializer.is_valid(raise_exception=True)
        fields = serializer.validated_data
        subject = services.subject_create(
            tenant=principal.tenant,
            external_id=fields["id"],
            display_name=fields.get("display_name", ""),
            actor=actor_of(request),
        )
        return Response(_subject(subject), status=201)
