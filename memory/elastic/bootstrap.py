"""Idempotent set-up of the cluster: versioned indices behind aliases and the archive ILM policy."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from elasticsearch import BadRequestError, Elasticsearch

from atlas_site.elastic.client import bootstrap_client, es_errors

from .indices import (
    alias_name,
    archive_generation_pattern,
    archive_keep_policy_name,
    archive_policy_name,
    archive_template_name,
    first_index_name,
)
from .mappings import DOCUMENT_CLASS_BY_TYPE, DOCUMENT_CLASSES

INITIAL_VERSION = 1
# Superseded facts move to the archive nightly. ILM rolls the archive's write index over monthly (or at
# 50 GB a shard) and deletes each generation a year after its rollover, so an archived fact is kept
# 12–13 months. Without rollover the delete phase would drop the one archive index whole — every fact
# ever archived, yesterday's too — a year after it was created. The embedded engine stores policies but
# never runs a phase (docs/embedded-elasticsearch.md).
ARCHIVE_POLICY = {
    "phases": {
        "hot": {"actions": {"rollover": {"max_age": "30d", "max_primary_shard_size": "50gb"}}},
        "delete": {"min_age": "365d", "actions": {"delete": {}}},
    }
}
# For an archive index from before generations (``<alias>-v<N>``): it cannot roll over (ILM needs a
# name ending in a number), so it keeps everything until `atlas_reindex archive` moves it.
ARCHIVE_KEEP_POLICY = {"phases": {"hot": {"actions": {}}}}
GENERATION = re.compile(r".*-v\d+-\d+")


def index_settings(memory_type: str) -> dict:
    settings: dict = {"index": {"number_of_shards": 1, "number_of_replicas": 0}}
    if memory_type == "archive":
        settings["index"]["lifecycle"] = {"name": archive_policy_name(), "rollover_alias": alias_name("archive")}
    return settings


def archive_template() -> dict:
    """The archive's index template: the explicit mapping and the lifecycle for every generation."""
    return {
        "index_patterns": [archive_generation_pattern()],
        "priority": 500,
        "template": {
            "settings": index_settings("archive"),
            "mappings": DOCUMENT_CLASS_BY_TYPE["archive"]._doc_type.mapping.to_dict(),
        },
    }


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
                if doc_class.memory_type_name == "archive" and not _archive_lifecycle_apply(es, index):
                    report.outdated.append(alias)
                    return
        except BadRequestError:
            report.outdated.append(alias)
            return
        report.updated.append(alias)
        return
    index = first_index_name(doc_class.memory_type_name, INITIAL_VERSION)
    es.options(ignore_status=400).indices.create(
        index=index,
        mappings=mapping,
        settings=index_settings(doc_class.memory_type_name),
        aliases={alias: {"is_write_index": True}},
    )
    if not es.indices.exists_alias(name=alias):
        raise RuntimeError(f"could not create {index} behind the alias {alias}")
    report.created.append(alias)


def _archive_lifecycle_apply(es: Elasticsearch, index: str) -> bool:
    """Attach the archive policy to an archive index made before it was set (idempotent); an index
    without generations gets the keep policy instead, and False (it needs `atlas_reindex archive`)."""
    if GENERATION.fullmatch(index):
        # Only the lifecycle: shards and replicas are static settings, refused on an open index.
        es.indices.put_settings(
            index=index, settings={"index": {"lifecycle": index_settings("archive")["index"]["lifecycle"]}}
        )
        return True
    es.indices.put_settings(index=index, settings={"index": {"lifecycle": {"name": archive_keep_policy_name()}}})
    return False


def cluster_bootstrap() -> BootstrapReport:
    """Create what is missing, update what is there; safe to run any number of times."""
    es = bootstrap_client()
    report = BootstrapReport()
    with es_errors("bootstrap the indices"):
        es.ilm.put_lifecycle(name=archive_policy_name(), policy=ARCHIVE_POLICY)
        es.ilm.put_lifecycle(name=archive_keep_policy_name(), policy=ARCHIVE_KEEP_POLICY)
        es.indices.put_index_template(name=archive_template_name(), **archive_template())
        for doc_class in DOCUMENT_CLASSES:
            _ensure_index(es, doc_class, report)
    return report
