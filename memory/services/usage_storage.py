"""The usage ledger's storage sample: a tenant's documents and bytes in the engine, once a day (beat) and
on demand (``atlas_usage --sample``)."""

from __future__ import annotations

from memory.elastic.storage import indices_store_sizes, tenant_documents_count
from tenants.models import Tenant, UsageDay
from tenants.selectors import tenant_es_client
from tenants.usage import usage_storage_record


def usage_storage_sample(*, tenant: Tenant, sizes: dict[str, tuple[int, int]] | None = None) -> UsageDay:
    """Count the tenant's documents (its own key) and estimate their bytes as each index's bytes in the
    tenant's share of its documents — the engine keeps sizes per index, not per tenant. ``sizes``: the
    indices' sizes read once for many tenants (the daily task)."""
    documents = tenant_documents_count(tenant_es_client(tenant=tenant), tenant_id=str(tenant.es_id))
    sizes = sizes if sizes is not None else indices_store_sizes()
    estimate = 0
    for memory_type, count in documents.items():
        index_docs, index_bytes = sizes.get(memory_type, (0, 0))
        if count and index_docs:
            estimate += round(index_bytes * min(count, index_docs) / index_docs)
    return usage_storage_record(tenant=tenant, documents=sum(documents.values()), bytes_stored=estimate)


def usage_storage_sample_all() -> dict[str, int]:
    """Every active tenant's sample: {slug: documents}."""
    sizes = indices_store_sizes()
    return {
        tenant.slug: usage_storage_sample(tenant=tenant, sizes=sizes).documents or 0
        for tenant in Tenant.objects.filter(is_active=True)
    }
