"""Idempotent set-up of the cluster: versioned indices behind aliases and the archive ILM policy."""

from __future__ import annotations

from dataclasses import dataclass, field

from elasticsearch import BadRequestError, Elasticsearch

from .client import bootstrap_client, es_errors
from .documents import DOCUMENT_CLASSES
from .indices import alias_name, archive_policy_name, versioned_name

INITIAL_VERSION = 1
# Superseded facts move to the archive nightly; keep them a year, then delete.
ARCHIVE_POLICY = {
    "phases": {
        "hot": {"actions": {}},
        "delete": {"min_age": "365d", "actions": {"delete": {}}},
    }
}


def index_settings(memory_type: str) -> dict:
    settings: dict = {"index": {"number_of_shards": 1, "number_of_replicas": 0}}
    if memory_type == "archive":
        settings["index"]["lifecycle"] = {"name": archive_policy_name()}
    return settings


@dataclass
class BootstrapReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    # Aliases whose index has an incompatible older mapping: `atlas_reindex <type>` moves them.
    outdated: list[str] = field(default_factory=list)


def _ensure_index(es: Elasticsearch, doc_class, report: BootstrapReport) -> None:
    alias = alias_name(doc_class.memory_type_name)
    mapping = doc_class._doc_type.mapping.to_dict()
    if es.indices.exists_alias(name=alias):
        # Additive mapping changes apply in place; incompatible ones need the reindex command.
        try:
            for index in es.indices.get_alias(name=alias):
                es.indices.put_mapping(index=index, **mapping)
        except BadRequestError:
            report.outdated.append(alias)
            return
        report.updated.append(alias)
        return
    index = versioned_name(doc_class.memory_type_name, INITIAL_VERSION)
    es.options(ignore_status=400).indices.create(
        index=index,
        mappings=mapping,
        settings=index_settings(doc_class.memory_type_name),
        aliases={alias: {"is_write_index": True}},
    )
    if not es.indices.exists_alias(name=alias):
        raise RuntimeError(f"could not create {index} behind the alias {alias}")
    report.created.append(alias)


def cluster_bootstrap() -> BootstrapReport:
    """Create what is missing, update what is there; safe to run any number of times."""
    es = bootstrap_client()
    report = BootstrapReport()
    with es_errors("bootstrap the indices"):
        es.ilm.put_lifecycle(name=archive_policy_name(), policy=ARCHIVE_POLICY)
        for doc_class in DOCUMENT_CLASSES:
            _ensure_index(es, doc_class, report)
    return report
