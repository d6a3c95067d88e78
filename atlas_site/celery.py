"""The Celery app: configuration from Django settings (CELERY_*), tasks from each app's tasks.py."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_site.settings")

app = Celery("atlas_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _ensure_embedded_broker_folders(sender: Celery, **_kwargs) -> None:
    # The filesystem transport expects its folders to exist.
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder", "processed_folder"):
        if options.get(key):
            os.makedirs(options[key], exist_ok=True)
    backend = sender.conf.result_backend or ""
    if backend.startswith("file://"):
        os.makedirs(backend.removeprefix("file://"), exist_ok=True)


@worker_init.connect
def _embedding_models_preload(**_kwargs) -> None:
    """ATLAS_WORKER_PRELOAD_MODELS: the models load in the worker's main process, before a prefork pool
    forks, so its children share their pages (their vectors are the parent's: benchmarks/memory_footprint.py)."""
    from django.conf import settings

    if settings.ATLAS_WORKER_PRELOAD_MODELS:
        from memory.inference.embeddings import embedding_models_load

        embedding_models_load()
