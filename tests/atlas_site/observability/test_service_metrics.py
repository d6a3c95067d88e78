"""What the service's own metrics count, through the REST API of a live server on the embedded
Elasticsearch: recalls and their stages and legs, writes by tenant with the tenant label bounded, model
inference, and the engine's calls and errors."""

from __future__ import annotations

import uuid

import pytest

from atlas_site.elastic.client import bootstrap_client
from atlas_site.observability.metrics import OTHER_TENANTS, tenant_labels_reset
from memory.inference.embeddings import embedding_provider
from tests.atlas_site.observability.conftest import sample

pytestmark = pytest.mark.django_db(transaction=True)
RECALL_ROUTE = {"route": "api/v1/subjects/<str:subject>/recall", "method": "POST", "status": "200"}


def test_a_recall_counts_once_for_its_tenant_and_times_each_stage_and_leg(agent_api) -> None:
    tenant_labels_reset()  # the tests before may have used this process's budget of tenant labels
    tenant, api = agent_api()
    assert api("POST", "subjects/alice/facts", json={"text": "Alice keeps bees", "fact_type": "identity"}).ok
    model = embedding_provider().model_id
    stages = ("embedding", "engine", "fusion", "folding", "evidence")
    before = {
        "recalls": sample("atlas_recalls_total", tenant=tenant.slug),
        "latency": sample("atlas_recall_duration_seconds_count"),
        "route": sample("atlas_http_requests_total", **RECALL_ROUTE),
        "inference": sample("atlas_model_inference_duration_seconds_count", model=model, kind="query"),
        "msearch": sample("atlas_engine_request_duration_seconds_count", operation="_msearch"),
        "bm25": sample("atlas_recall_leg_duration_seconds_count", leg="bm25"),
        "dense": sample("atlas_recall_leg_duration_seconds_count", leg="dense"),
        **{s: sample("atlas_recall_stage_duration_seconds_count", stage=s) for s in stages},
    }
    # A question never asked before: the query embedding is computed, not taken from the cache.
    question = f"what does alice keep {uuid.uuid4().hex[:6]}?"
    answer = api("POST", "subjects/alice/recall", json={"query": question, "k": 3})
    assert answer.status_code == 200, answer.text
    assert {"bm25", "dense"} <= set(answer.json()["legs"])
    assert sample("atlas_recalls_total", tenant=tenant.slug) == before["recalls"] + 1
    assert sample("atlas_recall_duration_seconds_count") == before["latency"] + 1
    assert sample("atlas_http_requests_total", **RECALL_ROUTE) == before["route"] + 1
    assert sample("atlas_model_inference_duration_seconds_count", model=model, kind="query") == before["inference"] + 1
    assert sample("atlas_recall_leg_duration_seconds_count", leg="bm25") == before["bm25"] + 1
    assert sample("atlas_recall_leg_duration_seconds_count", leg="dense") == before["dense"] + 1
    for stage in ("fusion", "folding", "evidence"):
        assert sample("atlas_recall_stage_duration_seconds_count", stage=stage) == before[stage] + 1, stage
    # One or two engine round trips and embedding waits (the legs' two _msearch calls, or one).
    for stage in ("embedding", "engine"):
        assert 1 <= sample("atlas_recall_stage_duration_seconds_count", stage=stage) - before[stage] <= 2, stage
    assert sample("atlas_engine_request_duration_seconds_count", operation="_msearch") >= before["msearch"] + 1


def test_tenants_past_the_configured_count_are_counted_as_other(agent_api, settings) -> None:
    settings.ATLAS_METRICS_TENANT_LABELS = 2
    tenant_labels_reset()
    tenants = [agent_api(prefix=f"card{i}") for i in range(4)]
    before_other = sample("atlas_memory_writes_total", tenant=OTHER_TENANTS, type="episodic")
    for _tenant, api in tenants:
        written = api("POST", "subjects/alice/episodes", json={"text": "I like quiet mornings", "session_id": "s"})
        assert written.status_code == 201, written.text
    first, second = (t.slug for t, _ in tenants[:2])
    assert sample("atlas_memory_writes_total", tenant=first, type="episodic") == 1
    assert sample("atlas_memory_writes_total", tenant=second, type="episodic") == 1
    for late, _ in tenants[2:]:
        assert sample("atlas_memory_writes_total", tenant=late.slug, type="episodic") == 0
    assert sample("atlas_memory_writes_total", tenant=OTHER_TENANTS, type="episodic") == before_other + 2
    # A labelled tenant keeps its label.
    assert tenants[0][1]("POST", "subjects/alice/episodes", json={"text": "And tea", "session_id": "s"}).ok
    assert sample("atlas_memory_writes_total", tenant=first, type="episodic") == 2
    tenant_labels_reset()


def test_engine_errors_are_counted_by_operation_and_status(atlas_es) -> None:
    before = sample("atlas_engine_errors_total", operation="_doc", kind="404")
    before_count = sample("atlas_engine_request_duration_seconds_count", operation="_doc")
    client = bootstrap_client()
    for _ in range(3):
        assert client.options(ignore_status=404).get(index="atlas-no-such-index", id="x").meta.status == 404
    assert sample("atlas_engine_errors_total", operation="_doc", kind="404") == before + 3
    assert sample("atlas_engine_request_duration_seconds_count", operation="_doc") == before_count + 3
