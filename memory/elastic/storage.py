"""What a tenant keeps in the engine, for the usage ledger: its documents per memory index, and the bytes
each index takes on disk (the bootstrap credential's ``_stats``, the only place the engine says it)."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from atlas_site.elastic.client import bootstrap_client, es_errors

from .indices import alias_name

#: Every index a tenant's documents live in: the hot memory indices, the catalog and the archive.
STORED_TYPES = ("episodic", "semantic", "procedural", "catalog", "archive")


def tenant_documents_count(reader: Elasticsearch, *, tenant_id: str) -> dict[str, int]:
    """{memory type: the tenant's documents}, read with the tenant's own key (DLS) and the tenant filter as
    the second guard (the only one in app-filter mode)."""
    tolerant = reader.options(ignore_status=404)  # an index not created yet holds nothing
    counts: dict[str, int] = {}
    with es_errors("count the tenant's documents"):
        for memory_type in STORED_TYPES:
            answer = tolerant.count(index=alias_name(memory_type), query={"term": {"tenant_id": tenant_id}})
            counts[memory_type] = int(answer.body.get("count", 0)) if answer.meta.status == 200 else 0
    return counts


def indices_store_sizes(es: Elasticsearch | None = None) -> dict[str, tuple[int, int]]:
    """{memory type: (documents, bytes on disk)} of each whole index (every tenant's)."""
    es = es or bootstrap_client()
    tolerant = es.options(ignore_status=404)
    sizes: dict[str, tuple[int, int]] = {}
    with es_errors("read the indices' sizes"):
        for memory_type in STORED_TYPES:
            answer = tolerant.indices.stats(index=alias_name(memory_type), metric="docs,store")
            total = answer.body.get("_all", {}).get("primaries", {}) if answer.meta.status == 200 else {}
            sizes[memory_type] = (
                int(total.get("docs", {}).get("count", 0)),
                int(total.get("store", {}).get("size_in_bytes", 0)),
            )
    return sizes
