"""Who a memory operation acts for: the subject (and so the tenant), resolved once per call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

from atlas_site.elastic.keys import owner_filter
from atlas_site.elastic.licence import isolation_mode
from atlas_site.errors import NotFound
from tenants.selectors import subject_es_client, writer_es_client

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from tenants.models import MemorySubject


@dataclass(frozen=True)
class SubjectScope:
    """A subject's identity in the cluster, and the two clients that may act for it."""

    subject: MemorySubject
    tenant_id: str
    user_id: str

    @classmethod
    def of(cls, subject: MemorySubject) -> SubjectScope:
        if not subject.is_active or not subject.tenant.is_active:
            raise NotFound(f"subject {subject.external_id} is not active")
        return cls(subject=subject, tenant_id=str(subject.tenant.es_id), user_id=str(subject.es_id))

    def reader(self) -> Elasticsearch:
        """Reads run with the subject's own key (DLS), never a broader one."""
        return subject_es_client(subject=self.subject)

    @staticmethod
    def writer() -> Elasticsearch:
        return writer_es_client()

    def read_filters(self) -> list[dict]:
        """The code-level guard behind DLS; ATLAS_CODE_FILTER=false switches it off (tests prove DLS
        alone) — except in app-filter mode, where it is the only guard and can never be off."""
        if not settings.ATLAS_CODE_FILTER and isolation_mode() == "dls":
            return []
        return [owner_filter(tenant_id=self.tenant_id, user_id=self.user_id)]


def tenant_read_filters(tenant_id: str) -> list[dict]:
    """The code-level guard behind a tenant key's DLS (the tenant's own documents), off like
    ``SubjectScope.read_filters`` only where DLS stands alone."""
    if not settings.ATLAS_CODE_FILTER and isolation_mode() == "dls":
        return []
    return [owner_filter(tenant_id=tenant_id, user_id=None)]
