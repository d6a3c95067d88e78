"""The one-line hooks the service's code calls where it measures: a recall and its stages, a write, a
model's inference, an LLM request, a consolidation run's usage. Each records its metric and, while traces
are on, is a span; none takes or records a text."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from . import metrics as m
from .tracing import span, span_started, span_tag, tracer

# The time spent in stages inside the running stage, so that each stage's histogram has its own time only.
_inner_seconds: ContextVar[list[float] | None] = ContextVar("atlas_inner_stage_seconds", default=None)


def _ids(subject: Any) -> dict[str, str]:
    """A subject's ids as span attributes: numbers and the tenant's slug, never the subject's external id
    (an agent may use a person's e-mail address as that)."""
    return {
        "atlas.tenant": subject.tenant.slug,
        "atlas.tenant_id": str(subject.tenant_id),
        "atlas.subject_id": str(subject.pk),
    }


def subject_tagged(subject: Any) -> None:
    """The subject's ids on the current span (the request's): every API call made for a subject carries them."""
    span_tag(**_ids(subject))


def recall_observed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """For ``memory_recall``: a "recall" span with the subject's ids, and the recall counted by tenant and timed."""

    @functools.wraps(fn)
    def observed(*, subject: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        with span("recall", **_ids(subject)):
            result = fn(subject=subject, **kwargs)
        m.RECALL_LATENCY.observe(time.perf_counter() - started)
        m.RECALLS.labels(m.tenant_label(subject.tenant.slug)).inc()
        return result

    return observed


@contextmanager
def stage(name: str, *, legs: list[str] | tuple[str, ...] = ()) -> Iterator[None]:
    """One stage of a recall (embedding, engine, folding, fusion, rerank, evidence): its own time in
    ``atlas_recall_stage_duration_seconds`` and, for an engine round trip, its time for each leg it carried."""
    inner = [0.0]
    outer = _inner_seconds.get()
    token = _inner_seconds.set(inner)
    started = time.perf_counter()
    try:
        with span_started(f"recall.{name}", **({"atlas.recall.legs": list(legs)} if legs else {})) as current:
            leg_spans = (
                [tracer().start_span(f"recall.leg.{leg}", attributes={"atlas.recall.leg": leg}) for leg in legs]
                if current is not None
                else []
            )
            try:
                yield
            finally:
                for leg_span in leg_spans:
                    leg_span.end()
    finally:
        elapsed = time.perf_counter() - started
        _inner_seconds.reset(token)
        if outer is not None:
            outer[0] += elapsed
        m.RECALL_STAGE.labels(name).observe(max(elapsed - inner[0], 0.0))
        for leg in legs:
            m.RECALL_LEG.labels(leg).observe(elapsed)


def memory_write_observed(*, subject: Any, memory_type: str) -> None:
    """A memory stored by a write (REST, MCP, dashboard, consolidation), counted by tenant and type."""
    m.WRITES.labels(m.tenant_label(subject.tenant.slug), memory_type).inc()


@contextmanager
def inference(model: str, kind: str) -> Iterator[None]:
    """One inference of ``model`` (kind: query, documents, rerank): timed, and a span."""
    started = time.perf_counter()
    try:
        with span("model.inference", **{"atlas.model": model, "atlas.inference.kind": kind}):
            yield
    finally:
        m.MODEL_INFERENCE.labels(model, kind).observe(time.perf_counter() - started)


class LlmRequest:
    """What :func:`llm_request`'s block learnt: the HTTP status (None: no answer)."""

    status: int | None = None


@contextmanager
def llm_request(model: str) -> Iterator[LlmRequest]:
    """One HTTP request to the LLM: timed by model and outcome (its status, or "error"), and a span."""
    call = LlmRequest()
    started = time.perf_counter()
    try:
        with span_started("llm.chat", **{"atlas.llm.model": model}) as current:
            yield call
            if current is not None and call.status is not None:
                current.set_attribute("http.response.status_code", call.status)
    finally:
        outcome = str(call.status) if call.status is not None else "error"
        m.LLM_LATENCY.labels(model, outcome).observe(time.perf_counter() - started)


def consolidation_usage_observed(*, model: str, prompt_tokens: int, completion_tokens: int, cost: float) -> None:
    """The tokens and cost a consolidation run's LLM calls spent (as its run record keeps them)."""
    model = model or "unknown"
    m.CONSOLIDATION_TOKENS.labels(model, "prompt").inc(prompt_tokens)
    m.CONSOLIDATION_TOKENS.labels(model, "completion").inc(completion_tokens)
    if cost:
        m.CONSOLIDATION_COST.labels(model).inc(cost)
