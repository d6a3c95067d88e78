"""Cluster maintenance for backups: which indices exist, and the write block that freezes them.

``index.blocks.write`` is Elasticsearch's own way to stop every write to an index (index, update,
delete, bulk, by-query) while reads go on; Elasticsearch answers a blocked write with a 403
``cluster_block_exception``, which the store turns into a 503 (``client.es_errors``). The embedded
engine enforces it the same way. (It accepts ``cluster.blocks.read_only`` but does not enforce it, so
the block is set on each index.)
"""

from __future__ import annotations

from elasticsearch import Elasticsearch

from atlas_site.elastic.client import bootstrap_client, es_errors


def indices_settings(es: Elasticsearch | None = None) -> dict[str, dict]:
    """Every index of the cluster (hidden ones too) with its settings: {name: settings}."""
    es = es or bootstrap_client()
    with es_errors("list the indices"):
        answer = es.indices.get_settings(index="*", expand_wildcards="all")
    return {name: body.get("settings", {}) for name, body in answer.body.items()}


def index_write_blocked(settings: dict) -> bool:
    """Whether an index's settings (as GET _settings returns them) carry ``index.blocks.write``."""
    value = settings.get("index", {}).get("blocks", {}).get("write")
    return str(value).lower() == "true"


def indices_write_block_set(*, names: list[str], blocked: bool, es: Elasticsearch | None = None) -> None:
    """Set (or lift: the setting removed, as it was before) the write block of each named index."""
    es = es or bootstrap_client()
    # An index deleted meanwhile has nothing left to block or to lift the block from.
    tolerant = es.options(ignore_status=404)
    with es_errors("set the write block" if blocked else "lift the write block"):
        for name in names:
            tolerant.indices.put_settings(index=name, settings={"index.blocks.write": True if blocked else None})


def cluster_admin_client(*, url: str, password: str, username: str = "elastic") -> Elasticsearch:
    """A superuser client of a cluster other than the configured one (a restore's private engine)."""
    return Elasticsearch(url, basic_auth=(username, password), request_timeout=30)


def indices_doc_counts(es: Elasticsearch) -> dict[str, int]:
    """{index: number of documents}, every index, after a refresh (so the count is every document stored)."""
    with es_errors("count the documents of each index"):
        es.indices.refresh(index="*", expand_wildcards="all")
        names = list(es.indices.get_settings(index="*", expand_wildcards="all").body)
        return {name: es.count(index=name)["count"] for name in names}
