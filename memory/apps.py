from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from memory.api import schema  # noqa: F401  (registers the OpenAPI description of bearer tokens)
