"""A throwaway Atlas stack for benchmark scripts: embedded Elasticsearch, a temporary SQLite database,
Django configured from the environment, the cluster bootstrapped. Not used by the product."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@contextmanager
def atlas_stack(keep: Path | None = None) -> Iterator[object]:
    """``keep``: a directory for the stack's data (the engine's and the SQLite database) that outlives
    the run, so a later run starts from what an earlier one imported; None: a temporary one."""
    from embedded_es import EmbeddedElasticsearch

    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as scratch:
        base = Path(keep) if keep else Path(scratch)
        (base / "app").mkdir(parents=True, exist_ok=True)
        with EmbeddedElasticsearch(data_dir=base / "es") as es:
            _configure(es, str(base / "app"))
            yield es


def _configure(es: object, data_dir: str) -> None:
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
        ATLAS_WEB_REQUEST_TIMEOUT="3600",  # no web server here: only the order of timeouts needs it
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


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def eval_set_tenant(name: str) -> object:
    """The tenant holding evaluation set ``name`` (eval/<name>/documents.jsonl), imported into a tenant
    of its own unless a kept stack already has it. Call inside :func:`atlas_stack`."""
    from memory.portable.lines import memories_import
    from tenants.models import Tenant
    from tenants.services import tenant_create

    slug = name.replace("_", "-")
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        progress(f"importing {name} …")
        tenant = tenant_create(slug=slug, name=name, actor="benchmark")
        with (ROOT / "eval" / name / "documents.jsonl").open() as lines:
            report = memories_import(tenant=tenant, lines=lines, create_subjects=True, actor="benchmark")
        if report.errors:
            raise SystemExit(f"{name}: import errors {report.errors[:3]}")
    return tenant
