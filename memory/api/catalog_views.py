"""The tenant catalog's routes of ``/api/v1/`` (tenant tokens only): validate → one service or selector → shape."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from atlas_site.api import actor_of, idempotent, int_param, principal_of, query_params
from atlas_site.serializers import EDIT_PROBLEMS, PROBLEM, WRITE_PROBLEMS
from memory import selectors
from memory.services import catalog, writes

from . import serializers as s
from .views import IDEMPOTENCY_KEY, IF_MATCH, _shaped, _valid


class CatalogView(APIView):
    @extend_schema(
        operation_id="catalog_list",
        summary="The tenant's catalog (tenant tokens)",
        parameters=[OpenApiParameter("page_size", OpenApiTypes.INT), OpenApiParameter("cursor", OpenApiTypes.STR)],
        responses={200: s.MemoryPageOut, **PROBLEM},
    )
    def get(self, request: Request) -> Response:
        principal = _tenant_principal(request, "read")
        query = query_params(request, {"page_size", "cursor"})
        return Response(
            selectors.catalog_list(
                tenant=principal.tenant,
                page_size=int_param(query.get("page_size", "50"), "page_size"),
                cursor=query.get("cursor"),
            )
        )

    @extend_schema(
        operation_id="catalog_write",
        summary="Add a catalog entry (tenant tokens with write)",
        parameters=[IDEMPOTENCY_KEY],
        request=s.CatalogIn,
        responses={201: s.MemoryOut, **WRITE_PROBLEMS},
        examples=[
            OpenApiExample(
                "an entry", value={"title": "Return policy", "text": "Returns within 30 days.", "tags": ["policy"]}
            )
        ],
    )
    @idempotent
    def post(self, request: Request) -> Response:
        principal = _tenant_principal(request, "write")
        fields = _valid(s.CatalogIn, request.data)
        return Response(
            _shaped(catalog.catalog_entry_write(tenant=principal.tenant, actor=actor_of(request), **fields)), status=201
        )


ENTRY_ID = OpenApiParameter("entry_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="A catalog entry id.")


class CatalogEntryView(APIView):
    @extend_schema(
        operation_id="catalog_get",
        summary="One catalog entry",
        parameters=[ENTRY_ID],
        responses={200: s.MemoryOut, **PROBLEM},
    )
    def get(self, request: Request, entry_id: str) -> Response:
        principal = _tenant_principal(request, "read")
        hit = catalog.catalog_entry_fetch(tenant=principal.tenant, entry_id=entry_id)
        response = Response(selectors.memory_shape(hit))
        response["ETag"] = writes.memory_etag(hit["_source"])
        return response

    @extend_schema(
        operation_id="catalog_edit",
        summary="Edit a catalog entry in place",
        parameters=[ENTRY_ID, IF_MATCH],
        request=s.CatalogEditIn,
        responses={200: s.MemoryOut, **EDIT_PROBLEMS},
        examples=[OpenApiExample("a longer period", value={"text": "Returns within 60 days."})],
    )
    def patch(self, request: Request, entry_id: str) -> Response:
        principal = _tenant_principal(request, "write")
        fields = _valid(s.CatalogEditIn, request.data)
        updated = catalog.catalog_entry_update(
            tenant=principal.tenant,
            entry_id=entry_id,
            actor=actor_of(request),
            if_match=request.headers.get("If-Match"),
            **fields,
        )
        response = Response(_shaped(updated))
        response["ETag"] = writes.memory_etag(updated)
        return response

    @extend_schema(
        operation_id="catalog_delete",
        summary="Delete a catalog entry",
        parameters=[ENTRY_ID],
        responses={200: s.ForgottenOut, **PROBLEM},
    )
    def delete(self, request: Request, entry_id: str) -> Response:
        principal = _tenant_principal(request, "write")
        return Response(
            catalog.catalog_entry_delete(tenant=principal.tenant, entry_id=entry_id, actor=actor_of(request))
        )


def _tenant_principal(request: Request, scope: str):
    principal = principal_of(request)
    principal.require_tenant_token()
    principal.require(scope)
    return principal
