"""An index made before scoping gets the scope fields in place: bootstrap's put-mapping adds them (an
additive change, merged by Elasticsearch's MapperService without a reindex), and a filter then works on
what is written after. Why typed nested entries and not ``flattened``: a flattened field "treats all values
as keywords" and offers "no support for numeric range queries"
(https://www.elastic.co/guide/en/elasticsearch/reference/8.15/flattened.html), so a range compares "10" < "9"
as strings — the mem0#7157 class of silent miss. The embedded engine compares them as numbers (its flattened
range differs from Elasticsearch here: benchmarks/metadata_mapping.py, docs/scoping.md), so the typed mapping
is the only choice that behaves the same on both.
"""

from __future__ import annotations

import pytest

from atlas_site.elastic.client import bootstrap_client
from memory.elastic.bootstrap import cluster_bootstrap
from memory.elastic.mappings import DOCUMENT_CLASS_BY_TYPE
from memory.selectors import memory_list
from memory.services.writes import fact_write

SCOPE_FIELDS = ("agent_id", "app_id", "run_id", "session_id", "metadata", "metadata_entries")


@pytest.fixture
def before_scoping(atlas_es, settings):
    """A deployment whose semantic index predates scoping: its mapping without the scope fields."""
    settings.ATLAS_ES_INDEX_PREFIX = "atlas-prescope"
    es = bootstrap_client()
    mapping = DOCUMENT_CLASS_BY_TYPE["semantic"]._doc_type.mapping.to_dict()
    for name in SCOPE_FIELDS:
        del mapping["properties"][name]
    es.indices.create(index="atlas-prescope-semantic-v1", mappings=mapping, aliases={"atlas-prescope-semantic": {}})
    yield es
    es.indices.delete(index=",".join(es.indices.get(index="atlas-prescope-*")))
    es.options(ignore_status=404).ilm.delete_lifecycle(name="atlas-prescope-archive-policy")
    es.options(ignore_status=404).ilm.delete_lifecycle(name="atlas-prescope-archive-keep-policy")
    es.options(ignore_status=404).indices.delete_index_template(name="atlas-prescope-archive-template")


def test_bootstrap_adds_the_scope_fields_to_an_existing_index(before_scoping, maya):
    es = before_scoping
    before = es.indices.get_mapping(index="atlas-prescope-semantic-v1")["atlas-prescope-semantic-v1"]["mappings"]
    assert "metadata_entries" not in before["properties"]
    report = cluster_bootstrap()
    assert "atlas-prescope-semantic" in report.updated and report.outdated == []
    after = es.indices.get_mapping(index="atlas-prescope-semantic-v1")["atlas-prescope-semantic-v1"]["mappings"]
    assert after["properties"]["metadata_entries"]["type"] == "nested"
    assert after["properties"]["metadata_entries"]["properties"]["num"] == {"type": "double"}
    assert after["properties"]["metadata"] == {"type": "object", "enabled": False}
    assert after["properties"]["app_id"] == {"type": "keyword"}
    fact_write(subject=maya, text="Ten is more than nine", metadata={"priority": 10})
    fact_write(subject=maya, text="Nine is less than ten", metadata={"priority": 9})
    found = memory_list(subject=maya, filters={"metadata.priority": {"gt": 9}})["memories"]
    assert [m["text"] for m in found] == ["Ten is more than nine"]
