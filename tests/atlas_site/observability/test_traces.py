"""Traces with the SDK's in-memory exporter: a recall over the live server is one request span with the
recall, its stages, legs, model inferences and engine calls beneath it; a Celery task with its LLM call is
another tree; and no attribute anywhere holds a memory's text, the question or a token."""

from __future__ import annotations

import uuid

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from atlas_site.observability.tracing import span, tracing_configure, tracing_enabled, tracing_reset
from memory.tasks import consolidation_subject_task
from tenants import selectors, services
from tests.atlas_site.observability.conftest import sample
from tests.fake_llm import empty_plan, fact, llm_serving

pytestmark = pytest.mark.django_db(transaction=True)
SECRET_TEXT = "Alice hides the spare key under the blue flowerpot"


@pytest.fixture(scope="module")
def exporter():
    if tracing_enabled():
        pytest.skip("traces were configured for this process already (OTEL_* variables)")
    spans = InMemorySpanExporter()
    assert tracing_configure(processor=SimpleSpanProcessor(spans))
    yield spans
    tracing_reset()


def _tree(spans) -> tuple[dict, dict]:
    by_id = {s.context.span_id: s for s in spans}
    children: dict[int | None, list] = {}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in by_id else None
        children.setdefault(parent, []).append(s)
    return by_id, children


def _names(spans) -> list[str]:
    return sorted(s.name for s in spans)


def _values(spans) -> list[str]:
    return [str(value) for s in spans for value in s.attributes.values()] + [s.name for s in spans]


def test_a_recall_is_one_request_span_with_its_stages_legs_and_calls_beneath(exporter, agent_api) -> None:
    tenant, api = agent_api()
    written = api("POST", "subjects/alice/facts", json={"text": SECRET_TEXT, "fact_type": "world"})
    assert written.status_code == 201, written.text
    question = f"where is the spare key {uuid.uuid4().hex[:6]}?"
    exporter.clear()
    answer = api("POST", "subjects/alice/recall", json={"query": question, "k": 3})
    assert answer.status_code == 200 and answer.json()["hits"][0]["text"] == SECRET_TEXT
    spans = exporter.get_finished_spans()
    by_id, children = _tree(spans)
    [root] = children[None]
    assert root.name == "POST api/v1/subjects/<str:subject>/recall"
    subject = selectors.subject_get(tenant=tenant, external_id="alice")
    ids = {"atlas.tenant": tenant.slug, "atlas.tenant_id": str(tenant.pk)}
    assert {k: root.attributes[k] for k in (*ids, "http.route", "http.response.status_code")} == {
        **ids,
        "http.route": "api/v1/subjects/<str:subject>/recall",
        "http.response.status_code": 200,
    }
    [recall] = children[root.context.span_id]
    assert recall.name == "recall" and {k: recall.attributes[k] for k in ids} == ids
    assert recall.attributes["atlas.subject_id"] == root.attributes["atlas.subject_id"] == str(subject.pk)
    stages = children[recall.context.span_id]
    names = _names(stages)
    for expected in ("recall.embedding", "recall.engine", "recall.fusion", "recall.folding", "recall.evidence"):
        assert expected in names, names
    # The query's embeddings run on worker threads, as children of the recall that asked for them.
    inferences = [s for s in stages if s.name == "model.inference"]
    assert {s.attributes["atlas.inference.kind"] for s in inferences} == {"query"}
    assert len(inferences) == len({s.attributes["atlas.model"] for s in inferences}) >= 2
    # Each engine round trip: a span per leg it carried, and the client's own span of the _msearch call.
    legs = []
    for engine in (s for s in stages if s.name == "recall.engine"):
        beneath = children[engine.context.span_id]
        assert "elasticsearch _msearch" in _names(beneath)
        carried = [s.attributes["atlas.recall.leg"] for s in beneath if s.name.startswith("recall.leg.")]
        assert carried == list(engine.attributes["atlas.recall.legs"])
        legs += carried
    assert sorted(legs) == sorted(answer.json()["legs"])
    # elasticsearch-py's own spans (which would record an error's message) stay off: the transport's are the ones.
    assert not [s.name for s in spans if s.attributes.get("db.system") == "elasticsearch" and " " not in s.name]
    # Ids and names only: neither the memory's text nor the question nor the token is in any span.
    for value in _values(spans):
        assert "spare key" not in value and "flowerpot" not in value
        assert api.session.headers["Authorization"].split()[1] not in value


def test_a_write_and_its_model_inference_carry_no_text(exporter, agent_api) -> None:
    tenant, api = agent_api()
    exporter.clear()
    assert api("POST", "subjects/alice/episodes", json={"text": SECRET_TEXT, "session_id": "s1"}).status_code == 201
    spans = exporter.get_finished_spans()
    _by_id, children = _tree(spans)
    assert [s.name for s in children[None]] == ["POST api/v1/subjects/<str:subject>/episodes"]
    [root] = children[None]
    assert root.attributes["atlas.tenant"] == tenant.slug
    kinds = {s.attributes.get("atlas.inference.kind") for s in spans if s.name == "model.inference"}
    assert kinds == {"documents"}
    for value in _values(spans):
        assert "spare key" not in value and "flowerpot" not in value


def test_a_celery_task_is_a_span_with_its_llm_call_and_engine_calls_beneath(exporter, atlas_es, settings) -> None:
    services.shared_credential_ensure(kind="writer", actor="test")
    tenant = services.tenant_create(slug=f"trace-{uuid.uuid4().hex[:6]}", name="Traces", actor="test")
    maya = services.subject_create(tenant=tenant, external_id="maya", actor="test")
    from memory.services import writes

    turn = writes.episode_write(subject=maya, text=SECRET_TEXT, session_id="s1")
    before_tokens = sample("atlas_consolidation_tokens_total", model="fake-model", kind="prompt")
    before_cost = sample("atlas_consolidation_cost_total", model="fake-model")
    with llm_serving(settings, ATLAS_LLM_RETRIES=0, ATLAS_LLM_PRICE_PROMPT=2.0, ATLAS_LLM_PRICE_COMPLETION=8.0) as llm:
        llm.script(empty_plan(facts=[fact("Maya keeps a spare key under a flowerpot", [turn["id"]])]))
        exporter.clear()
        outcome = consolidation_subject_task.apply(args=[maya.pk]).get()
    assert outcome["status"] == "done", outcome
    spans = exporter.get_finished_spans()
    _by_id, children = _tree(spans)
    [task] = children[None]
    assert task.name == "celery.task memory.consolidate_subject"
    assert task.attributes["celery.state"] == "SUCCESS"
    beneath = _names(children[task.context.span_id])
    # The run's reads by id (an mget since memories_fetch reads own ids so) and the fact it stores.
    assert {"llm.chat", "elasticsearch _mget", "elasticsearch _create"} <= set(beneath), beneath
    [chat] = [s for s in spans if s.name == "llm.chat"]
    assert dict(chat.attributes) == {"atlas.llm.model": "fake-model", "http.response.status_code": 200}
    for value in _values(spans):
        assert "spare key" not in value and "flowerpot" not in value
    # The run's tokens and cost, as its record keeps them (the fake LLM reports 100 + 50 tokens).
    assert sample("atlas_consolidation_tokens_total", model="fake-model", kind="prompt") == before_tokens + 100
    assert sample("atlas_consolidation_cost_total", model="fake-model") == pytest.approx(
        before_cost + (100 * 2.0 + 50 * 8.0) / 1e6
    )


def test_a_failure_marks_its_spans_with_the_exception_type_only(exporter) -> None:
    exporter.clear()
    with pytest.raises(ValueError), span("outer", **{"atlas.tenant": "acme"}), span("inner"):
        raise ValueError(SECRET_TEXT)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"outer", "inner"}
    for failed in spans.values():
        assert (failed.status.status_code, failed.status.description) == (StatusCode.ERROR, "ValueError")
        assert failed.attributes["error.type"] == "ValueError" and list(failed.events) == []
