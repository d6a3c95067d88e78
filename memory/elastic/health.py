"""The Elasticsearch part of /healthz: reachable, and able to keep tenants apart."""

from __future__ import annotations

from django.conf import settings

from atlas_site.elastic.client import bootstrap_client, es_errors
from atlas_site.elastic.licence import isolation_status


def elasticsearch_health() -> dict:
    # One try each, within the probe's own timeout: a stalled cluster is a 503, not a hung probe.
    client = bootstrap_client().options(
        request_timeout=settings.ATLAS_HEALTH_TIMEOUT, max_retries=0, retry_on_timeout=False
    )
    with es_errors("check cluster health"):
        health = client.cluster.health()
    status = isolation_status(client=client)
    problem = status.problem()
    out = {
        "ok": health["status"] in ("green", "yellow") and problem is None,
        "cluster_status": health["status"],
        "licence": status.licence,
        "dls_available": status.dls_available,
        "isolation_mode": status.mode,
    }
    if problem:
        out["error"] = problem
    return out
