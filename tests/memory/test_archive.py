"""The archive of superseded facts: an explicit, strict mapping (vectors stay vectors) on every
generation, the rollover ILM policy applied, chains followed across the hot index and the archive."""

from __future__ import annotations

import pytest
from elasticsearch import BadRequestError

from atlas_site.elastic.client import bootstrap_client
from memory.elastic.bootstrap import ARCHIVE_POLICY, cluster_bootstrap
from memory.elastic.indices import alias_name, archive_policy_name, archive_template_name
from memory.elastic.mappings import VECTOR_FIELDS
from memory.recall import RecallOptions, memory_recall
from memory.selectors import memory_chain_get
from memory.services.archive import superseded_facts_archive
from memory.services.writes import fact_write
from tests.external_cluster import side_prefix

OLDARCH = side_prefix("oldarch")  # a deployment of its own beside the session's (atlas-oldarch here)


def test_the_archive_mapping_is_explicit_strict_and_in_its_template(atlas_es) -> None:
    es = bootstrap_client()
    alias = alias_name("archive")
    (index,) = es.indices.get_alias(name=alias)
    assert index.endswith("-000001")  # a generation: ILM can roll it over to -000002
    mapping = es.indices.get_mapping(index=index)[index]["mappings"]
    assert mapping["dynamic"] == "strict"
    for name in VECTOR_FIELDS:
        assert mapping["properties"][name]["type"] == "dense_vector"
        assert mapping["properties"][name]["element_type"] == "byte"
    assert mapping["properties"]["superseded_by"] == {"type": "keyword"}
    lifecycle = es.indices.get_settings(index=index)[index]["settings"]["index"]["lifecycle"]
    assert lifecycle == {"name": archive_policy_name(), "rollover_alias": alias}
    template = es.indices.get_index_template(name=archive_template_name())["index_templates"][0]["index_template"]
    assert template["index_patterns"] == [f"{alias}-v*"]
    assert template["template"]["mappings"]["properties"]["embedding"]["type"] == "dense_vector"
    assert template["template"]["settings"]["index"]["lifecycle"]["name"] == archive_policy_name()
    policy = es.ilm.get_lifecycle(name=archive_policy_name())[archive_policy_name()]["policy"]
    assert policy["phases"] == ARCHIVE_POLICY["phases"]
    assert "rollover" in policy["phases"]["hot"]["actions"] and policy["phases"]["delete"]["min_age"] == "365d"


def test_a_field_the_mapping_does_not_name_is_refused(atlas_es) -> None:
    es = bootstrap_client()
    with pytest.raises(BadRequestError, match="strict_dynamic_mapping_exception|strict"):
        es.index(index=alias_name("archive"), id="stray", document={"tenant_id": "t", "surprise": "a hex vector?"})


def test_archived_facts_stay_searchable_by_their_vectors_and_chains_cross_the_archive(maya, settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"
    old = fact_write(subject=maya, text="Maya's favourite fruit is the mango")
    mid = fact_write(subject=maya, text="Maya's favourite fruit is the lychee", supersedes=[old["id"]])
    new = fact_write(subject=maya, text="Maya's favourite fruit is the fig", supersedes=[mid["id"]])
    assert superseded_facts_archive(tenant=maya.tenant) == 2
    dense_only = RecallOptions(bm25=False, multilingual=False, crosslingual=False)
    found = memory_recall(
        subject=maya, query="tropical fruit she liked before", k=3, include_superseded=True, options=dense_only
    )
    assert {h["type"] for h in found.hits} == {"archive", "semantic"} and len(found.hits) == 3
    current = memory_recall(subject=maya, query="favourite fruit", k=5, memory_types=["semantic"])
    assert [h["text"] for h in current.hits] == ["Maya's favourite fruit is the fig"]
    for start in (old, mid, new):
        chain = memory_chain_get(subject=maya, memory_id=start["id"])
        assert [(m["id"], m["type"]) for m in chain] == [
            (old["id"], "archive"),
            (mid["id"], "archive"),
            (new["id"], "semantic"),
        ]
    # A later supersession of the current fact links across too, and the next archive run moves it.
    newest = fact_write(subject=maya, text="Maya's favourite fruit is the pear", supersedes=[new["id"]])
    assert superseded_facts_archive(tenant=maya.tenant) == 1
    assert [m["id"] for m in memory_chain_get(subject=maya, memory_id=old["id"])] == [
        old["id"],
        mid["id"],
        new["id"],
        newest["id"],
    ]


@pytest.fixture
def pre_generation_prefix(atlas_es, settings):
    """A deployment whose archive predates generations: ``<alias>-v1`` with the delete-whole-index policy."""
    from memory.elastic.mappings import DOCUMENT_CLASS_BY_TYPE

    settings.ATLAS_ES_INDEX_PREFIX = OLDARCH
    es = bootstrap_client()
    mapping = DOCUMENT_CLASS_BY_TYPE["semantic"]._doc_type.mapping.to_dict()
    es.indices.create(index=f"{OLDARCH}-archive-v1", mappings=mapping, aliases={f"{OLDARCH}-archive": {}})
    es.index(index=f"{OLDARCH}-archive", id="f1", document={"tenant_id": "t", "text": "old"}, refresh=True)
    yield es
    es.indices.delete(index=",".join(es.indices.get(index=f"{OLDARCH}-*")))
    for name in (f"{OLDARCH}-archive-policy", f"{OLDARCH}-archive-keep-policy"):
        es.options(ignore_status=404).ilm.delete_lifecycle(name=name)
    es.options(ignore_status=404).indices.delete_index_template(name=f"{OLDARCH}-archive-template")


def test_an_archive_without_generations_keeps_everything_until_reindexed(pre_generation_prefix) -> None:
    from memory.services.reindex import index_reindex

    es = pre_generation_prefix
    report = cluster_bootstrap()
    assert report.outdated == [f"{OLDARCH}-archive"]
    settings_now = es.indices.get_settings(index=f"{OLDARCH}-archive-v1")[f"{OLDARCH}-archive-v1"]["settings"]
    assert settings_now["index"]["lifecycle"]["name"] == f"{OLDARCH}-archive-keep-policy"
    moved = index_reindex(memory_type="archive")
    assert (moved.source_index, moved.target_index, moved.copied) == (
        f"{OLDARCH}-archive-v1",
        f"{OLDARCH}-archive-v2-000001",
        1,
    )
    assert list(es.indices.get_alias(name=f"{OLDARCH}-archive")) == [f"{OLDARCH}-archive-v2-000001"]
    assert cluster_bootstrap().outdated == []
