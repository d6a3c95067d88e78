"""A throwaway Atlas stack for benchmark scripts: embedded Elasticsearch, a temporary SQLite database,
Django configured from the environment, the cluster bootstrapped. Not used by the product."""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@contextmanager
def atlas_stack():
    from embedded_es import EmbeddedElasticsearch

    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as data_dir, EmbeddedElasticsearch() as es:
        os.environ.update(
            DJANGO_SETTINGS_MODULE="atlas_site.settings",
            DJANGO_SECRET_KEY="benchmark-only",
            ATLAS_ENCRYPTION_KEYS="9CcI2YIb7ugLd6R0H0w1wu8S9ls0dI0bOBV3zEmDbBM=",
            ATLAS_DATA_DIR=data_dir,
            ATLAS_ENV_FILE=os.devnull,
            ATLAS_ES_URL=es.url,
            ATLAS_ES_PASSWORD=es.password,
            ATLAS_USAGE_RECORDING="off",
            ATLAS_ES_REQUEST_TIMEOUT="600",
        )
        os.environ.pop("DATABASE_URL", None)
        os.environ.pop("REDIS_URL", None)
        import django

        django.setup()
        from django.core.management import call_command

        from memory.elastic.bootstrap import cluster_bootstrap
        from tenants.services import shared_credential_ensure

        call_command("migrate", verbosity=0)
        cluster_bootstrap()
        shared_credential_ensure(kind="writer", actor="benchmark")
        yield es


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
