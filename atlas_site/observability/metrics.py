"""Every Prometheus metric of the service, and the bounded tenant label.

Multiprocess-safe: with ``PROMETHEUS_MULTIPROC_DIR`` set before the process starts, prometheus-client keeps
each metric in a memory-mapped file per process there, and /metrics sums every process's files (several
uvicorn workers, a Celery worker's pool). No metric here is a gauge kept by a process (those need the
per-process bookkeeping of gauge modes): the one gauge, the queue depth, is read at scrape time.
"""

from __future__ import annotations

import threading

from prometheus_client import Counter, Histogram

#: Seconds: from a cached embedding (under a millisecond) to a stalled dependency (tens of seconds).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

HTTP_REQUESTS = Counter(
    "atlas_http_requests",
    "HTTP requests answered by Django, by URL pattern (never the raw path), method and status.",
    ["route", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "atlas_http_request_duration_seconds",
    "Time from the request reaching Django to its response, by URL pattern, method and status.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
RECALLS = Counter("atlas_recalls", "Recalls run, by tenant (see ATLAS_METRICS_TENANT_LABELS).", ["tenant"])
RECALL_LATENCY = Histogram(
    "atlas_recall_duration_seconds", "One recall from its arguments to its hits.", buckets=LATENCY_BUCKETS
)
RECALL_STAGE = Histogram(
    "atlas_recall_stage_duration_seconds",
    "A recall's own time in one stage: embedding (waiting for the query vectors), engine (the legs' "
    "_msearch round trips), folding, fusion, rerank, evidence. A stage inside another counts only in its own.",
    ["stage"],
    buckets=LATENCY_BUCKETS,
)
RECALL_LEG = Histogram(
    "atlas_recall_leg_duration_seconds",
    "The engine round trip that carried a recall leg (legs share _msearch calls: each is observed once per leg).",
    ["leg"],
    buckets=LATENCY_BUCKETS,
)
WRITES = Counter("atlas_memory_writes", "Memories stored by a write, by tenant and memory type.", ["tenant", "type"])
MODEL_INFERENCE = Histogram(
    "atlas_model_inference_duration_seconds",
    "One inference of a model (a query, a batch of documents, a rerank), by model id and kind.",
    ["model", "kind"],
    buckets=LATENCY_BUCKETS,
)
ENGINE_LATENCY = Histogram(
    "atlas_engine_request_duration_seconds",
    "One Elasticsearch call of the app (its retries included), by operation (_search, _msearch, _doc …).",
    ["operation"],
    buckets=LATENCY_BUCKETS,
)
ENGINE_ERRORS = Counter(
    "atlas_engine_errors",
    "Elasticsearch calls that failed: an HTTP status of 400 or more (the status is the kind), or a "
    "connection failure or timeout.",
    ["operation", "kind"],
)
LLM_LATENCY = Histogram(
    "atlas_llm_request_duration_seconds",
    "One HTTP request to the consolidation LLM, by model and outcome (the HTTP status, or error).",
    ["model", "outcome"],
    buckets=LATENCY_BUCKETS,
)
CONSOLIDATION_TOKENS = Counter(
    "atlas_consolidation_tokens", "LLM tokens a consolidation run spent, by model and kind.", ["model", "kind"]
)
CONSOLIDATION_COST = Counter(
    "atlas_consolidation_cost",
    "What consolidation's LLM calls cost, from ATLAS_LLM_PRICE_PROMPT / _COMPLETION (their currency).",
    ["model"],
)
CELERY_TASKS = Counter(
    "atlas_celery_tasks",
    "Celery tasks finished, by task name and state (SUCCESS, FAILURE, RETRY, …).",
    ["task", "state"],
)
CELERY_TASK_LATENCY = Histogram(
    "atlas_celery_task_duration_seconds", "One Celery task's run, by task name.", ["task"], buckets=LATENCY_BUCKETS
)
WEBHOOK_EVENTS = Counter(
    "atlas_webhook_events", "Webhook events recorded for at least one endpoint, by event type.", ["type"]
)
WEBHOOK_DELIVERIES = Counter(
    "atlas_webhook_deliveries",
    "Webhook delivery attempts, by event type and outcome: delivered, retry (failed, tried again later) or "
    "gave_up (failed for ATLAS_WEBHOOKS_RETRY_HOURS).",
    ["type", "outcome"],
)
WEBHOOK_LATENCY = Histogram(
    "atlas_webhook_delivery_duration_seconds",
    "One webhook delivery attempt that reached the endpoint, from connecting to its answer.",
    buckets=LATENCY_BUCKETS,
)

OTHER_TENANTS = "other"
_tenants_lock = threading.Lock()
_tenants_labelled: set[str] = set()


def tenant_label(slug: str) -> str:
    """The tenant's slug while fewer than ATLAS_METRICS_TENANT_LABELS tenants have been labelled by this
    process, else "other": a series per tenant is useful until it is a cardinality bomb."""
    from django.conf import settings

    with _tenants_lock:
        if slug in _tenants_labelled:
            return slug
        if len(_tenants_labelled) < settings.ATLAS_METRICS_TENANT_LABELS:
            _tenants_labelled.add(slug)
            return slug
    return OTHER_TENANTS


def tenant_labels_reset() -> None:
    """Forget which tenants were labelled (tests)."""
    with _tenants_lock:
        _tenants_labelled.clear()
