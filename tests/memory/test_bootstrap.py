"""Cluster bootstrap: versioned indices behind aliases, the archive policy, the service keys — idempotent."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from memory.elastic.bootstrap import cluster_bootstrap
from memory.elastic.client import bootstrap_client
from memory.elastic.indices import MEMORY_TYPES, alias_name, archive_policy_name, versioned_name
from tenants.models import ApiKeyCredential


def test_bootstrap_is_idempotent(atlas_es) -> None:
    es = bootstrap_client()
    first = cluster_bootstrap()
    second = cluster_bootstrap()
    assert first.created == [] and second.created == []  # the session fixture already created them
    assert sorted(second.updated) == sorted(alias_name(t) for t in MEMORY_TYPES)
    for memory_type in MEMORY_TYPES:
        (index,) = es.indices.get_alias(name=alias_name(memory_type))
        assert index.startswith(versioned_name(memory_type, 0)[:-1])  # <alias>-v<N>; the reindex test may have moved it
    mapping = es.indices.get_mapping(index=alias_name("semantic"))
    properties = next(iter(mapping.values()))["mappings"]["properties"]
    assert properties["tenant_id"] == {"type": "keyword"}
    assert properties["embedding"]["type"] == "dense_vector"
    assert archive_policy_name() in es.ilm.get_lifecycle(name=archive_policy_name())


def test_bootstrap_command_mints_the_writer_once(atlas_es, db) -> None:
    out = StringIO()
    call_command("atlas_es_bootstrap", stdout=out)
    call_command("atlas_es_bootstrap", stdout=out)
    writers = ApiKeyCredential.objects.filter(kind="writer")
    assert writers.count() == 1
    assert f"service writer key: {writers.get().es_key_id}" in out.getvalue()
    assert "licence: trial (active); isolation mode: dls" in out.getvalue()
