from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from memory.api import schema  # noqa: F401  (registers the OpenAPI description of bearer tokens)
        from tenants.dashboard.contributions import subject_counter_register

        subject_counter_register(name="memories", counter=_memory_counts)
        # Traces when the OTEL_* variables ask for them; Celery's tasks measured (its signals) in every process.
        from atlas_site.observability import celery as _task_signals  # noqa: F401
        from atlas_site.observability.tracing import tracing_configure

        tracing_configure()


def _memory_counts(subject) -> dict[str, int]:
    """A subject's memories per type, for the tenant section's subject pages (tenants imports no memory code)."""
    from memory.selectors import memory_counts

    return memory_counts(subject=subject)
