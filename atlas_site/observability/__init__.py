"""What the service is doing, for operators: Prometheus metrics (``metrics``, served at /metrics by ``http``)
and OpenTelemetry traces (``tracing``, off unless the standard OTEL_* variables turn them on).

The hooks the rest of the code calls (``hooks``) are one line each at the place they measure: a recall's
stages, a write, a model's inference, an LLM call; the engine's calls are measured by the Elasticsearch
client's transport (``engine``) and Celery's tasks by its signals (``celery``). docs/operations.md
"Metrics and traces" lists every metric and its labels.
"""
