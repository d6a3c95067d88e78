"""Reads of tenancy, and the Elasticsearch client each kind of principal must use.

``subject_es_client`` is the request-scoped way to read as one subject: it
returns the client of that subject's own key, or raises — it never falls back to
the tenant's key, the writer or the bootstrap superuser.
"""

from __future__ import annotations

from datetime import UTC, date, timedelta
from typing import TYPE_CHECKING, TypeVar

from django.db.models import QuerySet
from django.utils import timezone

from atlas_site.echo import echoed
from atlas_site.elastic.client import api_key_client
from atlas_site.elastic.licence import isolation_mode
from atlas_site.errors import IsolationUnavailable, NotFound, ValidationFailed

from .models import ApiKeyCredential, Membership, MemorySubject, Tenant, UsageDay
from .secrets import secret_decrypt

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

T = TypeVar("T")


def unique_row(queryset: QuerySet[T]) -> T | None:
    """The one row a filter on a unique key selects, or None — without the ORDER BY that ``first()``
    adds from the model's ``Meta.ordering``: compiling it (a join, for a subject's tenant slug) was most
    of a bearer token's authentication on the API's hot path (py-spy on uvicorn)."""
    rows = list(queryset.order_by()[:1])
    return rows[0] if rows else None


def tenant_get(*, slug: str) -> Tenant:
    try:
        return Tenant.objects.get(slug=slug)
    except Tenant.DoesNotExist:
        raise NotFound(f"no tenant '{slug}'", field="tenant") from None


def subject_get(*, tenant: Tenant, external_id: str) -> MemorySubject:
    """A subject of ``tenant``; another tenant's subject is "not found", like a missing one."""
    try:
        return MemorySubject.objects.select_related("tenant").get(tenant=tenant, external_id=external_id)
    except MemorySubject.DoesNotExist:
        raise NotFound(f"no subject {echoed(external_id)} in tenant {tenant.slug}", field="user_id") from None


def person_subjects(*, person) -> list[MemorySubject]:
    """The active subjects linked to ``person`` (one per tenant they are a user of), of active tenants."""
    if not getattr(person, "is_authenticated", False):
        return []
    return list(
        MemorySubject.objects.select_related("tenant")
        .filter(person=person, is_active=True, tenant__is_active=True)
        .order_by("tenant__name", "external_id")
    )


def person_admin_tenants(*, person) -> list[Tenant]:
    """The active tenants ``person`` administers (membership role owner or admin)."""
    if not getattr(person, "is_authenticated", False):
        return []
    return list(
        Tenant.objects.filter(
            is_active=True,
            memberships__person=person,
            memberships__role__in=[Membership.Role.OWNER, Membership.Role.ADMIN],
        ).order_by("name")
    )


def tenant_membership_admin(*, person, slug: str) -> Membership:
    """The person's owner/admin membership of the active tenant ``slug``; anything else is "not found"."""
    membership = (
        Membership.objects.select_related("tenant")
        .filter(
            person=person,
            tenant__slug=slug,
            tenant__is_active=True,
            role__in=[Membership.Role.OWNER, Membership.Role.ADMIN],
        )
        .first()
        if getattr(person, "is_authenticated", False)
        else None
    )
    if membership is None:
        raise NotFound(f"no tenant '{slug}'", field="tenant")
    return membership


def credential_active(
    *, kind: str, tenant: Tenant | None = None, subject: MemorySubject | None = None
) -> ApiKeyCredential | None:
    # One active key per owner (a rotation invalidates the old key in the transaction that records the
    # new); the newest first all the same, by the primary key alone.
    return (
        ApiKeyCredential.objects.filter(kind=kind, tenant=tenant, subject=subject, invalidated_at__isnull=True)
        .order_by("-pk")
        .first()
    )


def _client_for(credential: ApiKeyCredential | None, who: str) -> Elasticsearch:
    if credential is None:
        raise IsolationUnavailable(f"{who} has no active Elasticsearch key; rotate it or run the bootstrap command")
    return api_key_client(key_id=credential.es_key_id, encoded=secret_decrypt(credential.secret_encrypted))


def subject_es_client(*, subject: MemorySubject) -> Elasticsearch:
    """The client that reads as ``subject`` (own memories + tenant catalog, enforced by DLS)."""
    if not subject.is_active or not subject.tenant.is_active:
        raise NotFound(f"subject {subject} is deactivated")
    if isolation_mode() == "app-filter":
        return _client_for(credential_active(kind=ApiKeyCredential.Kind.READER), "the shared reader")
    return _client_for(
        credential_active(kind=ApiKeyCredential.Kind.SUBJECT, tenant=subject.tenant, subject=subject), str(subject)
    )


def tenant_es_client(*, tenant: Tenant) -> Elasticsearch:
    """The client that reads as ``tenant`` (every memory of the tenant, enforced by DLS)."""
    if not tenant.is_active:
        raise NotFound(f"tenant {tenant.slug} is deactivated")
    if isolation_mode() == "app-filter":
        return _client_for(credential_active(kind=ApiKeyCredential.Kind.READER), "the shared reader")
    return _client_for(credential_active(kind=ApiKeyCredential.Kind.TENANT, tenant=tenant), f"tenant {tenant.slug}")


def writer_es_client() -> Elasticsearch:
    """The service's write-only client; services use it after authorising the caller."""
    return _client_for(credential_active(kind=ApiKeyCredential.Kind.WRITER), "the service writer")


# ------------------------------------------------------------------ usage ledger (tenants/usage.py)
#: The most days one usage read covers (REST's ?since=&until=, atlas_usage --days).
USAGE_MAX_DAYS = 366


def usage_range(*, tenant: Tenant, start: date, end: date) -> list[dict]:
    """One row per UTC day from ``start`` to ``end`` (both included, oldest first); a day without a ledger
    row reads as zeros and ``documents``/``bytes_stored`` None (not sampled)."""
    if end < start:
        raise ValidationFailed("until must not be before since", field="until")
    if (end - start).days >= USAGE_MAX_DAYS:
        raise ValidationFailed(f"at most {USAGE_MAX_DAYS} days at once", field="since")
    stored = {row.day: row for row in UsageDay.objects.filter(tenant=tenant, day__gte=start, day__lte=end)}
    rows = []
    for offset in range((end - start).days + 1):
        day = start + timedelta(days=offset)
        row = stored.get(day) or UsageDay(tenant=tenant, day=day)
        rows.append(
            {
                "day": day.isoformat(),
                "writes": row.writes,
                "recalls": row.recalls,
                "documents": row.documents,
                "bytes_stored": row.bytes_stored,
                "llm_prompt_tokens": row.llm_prompt_tokens,
                "llm_completion_tokens": row.llm_completion_tokens,
                "llm_tokens": row.llm_prompt_tokens + row.llm_completion_tokens,
                "llm_requests": row.llm_requests,
                "llm_cost": float(row.llm_cost),
            }
        )
    return rows


def usage_days(*, tenant: Tenant, days: int = 30) -> list[dict]:
    """The last ``days`` UTC days up to today, oldest first (the dashboard's table and charts)."""
    if not 1 <= days <= USAGE_MAX_DAYS:
        raise ValidationFailed(f"days must be 1 to {USAGE_MAX_DAYS}", field="days")
    today = timezone.now().astimezone(UTC).date()
    return usage_range(tenant=tenant, start=today - timedelta(days=days - 1), end=today)
