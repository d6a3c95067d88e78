"""``/api/v1/me`` (what this token is and may do) and ``/api/v1/subjects`` (tenant tokens)."""

from __future__ import annotations

from datetime import date, timedelta

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
from tenants.selectors import usage_range
from tenants.usage import llm_budget_state, usage_today

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


class UsageDayOut(serializers.Serializer):
    day = serializers.DateField()
    writes = serializers.IntegerField(help_text="Memories agents and people stored (consolidation's not).")
    recalls = serializers.IntegerField(
        help_text="Recalls served: REST, MCP, the dashboard's and support view's searches, atlas_recall."
    )
    documents = serializers.IntegerField(allow_null=True, help_text="The tenant's documents when sampled (null: not).")
    bytes_stored = serializers.IntegerField(allow_null=True, help_text="Their bytes on disk, estimated when sampled.")
    llm_prompt_tokens = serializers.IntegerField()
    llm_completion_tokens = serializers.IntegerField()
    llm_tokens = serializers.IntegerField()
    llm_requests = serializers.IntegerField()
    llm_cost = serializers.FloatField(help_text="USD, from ATLAS_LLM_PRICES.")


class BudgetOut(serializers.Serializer):
    llm_token_budget = serializers.IntegerField(allow_null=True, help_text="Per UTC month; null: no limit.")
    llm_tokens_this_month = serializers.IntegerField()
    llm_tokens_remaining = serializers.IntegerField(allow_null=True)
    resumes_on = serializers.DateField(help_text="The first day of the next month: when a spent budget is new.")
    daily_write_quota = serializers.IntegerField(allow_null=True, help_text="Per UTC day; null: no limit.")
    writes_today = serializers.IntegerField()


class UsageOut(serializers.Serializer):
    tenant = serializers.CharField()
    days = UsageDayOut(many=True)
    budgets = BudgetOut()


#: Days ``GET /usage`` covers when ``since`` is not given.
USAGE_DEFAULT_DAYS = 30


def _date_param(value: str, name: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValidationFailed(f"{name} must be a date, YYYY-MM-DD", field=name) from None


class UsageView(APIView):
    @extend_schema(
        operation_id="usage_get",
        summary="The tenant's usage per UTC day and its budgets (tenant tokens)",
        parameters=[
            OpenApiParameter("since", OpenApiTypes.DATE, description="First UTC day (default: 29 days before until)."),
            OpenApiParameter("until", OpenApiTypes.DATE, description="Last UTC day, included (default: today)."),
        ],
        responses={200: UsageOut, **PROBLEM},
    )
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        principal.require_tenant_token()
        principal.require("read")
        # since/until, as recall names a window of days (``from`` is a keyword in the SDKs' languages).
        query = query_params(request, {"since", "until"})
        today = usage_today()
        end = _date_param(query["until"], "until") if "until" in query else today
        if "since" in query:
            start = _date_param(query["since"], "since")
        elif end >= date.min + timedelta(days=USAGE_DEFAULT_DAYS):
            start = end - timedelta(days=USAGE_DEFAULT_DAYS - 1)
        else:
            raise ValidationFailed("until is too early: give since too", field="until")
        tenant = principal.tenant
        rows = usage_range(tenant=tenant, start=start, end=end)
        budget = llm_budget_state(tenant=tenant, day=today)
        writes_today = usage_range(tenant=tenant, start=today, end=today)[0]["writes"]
        return Response(
            {
                "tenant": tenant.slug,
                "days": rows,
                "budgets": {
                    "llm_token_budget": budget.budget,
                    "llm_tokens_this_month": budget.used,
                    "llm_tokens_remaining": budget.remaining,
                    "resumes_on": budget.resumes_on,
                    "daily_write_quota": tenant.daily_write_quota,
                    "writes_today": writes_today,
                },
            }
        )
