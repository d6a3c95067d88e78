"""The Elasticsearch part of /healthz: reachable, and able to keep tenants apart."""

from __future__ import annotations

from .client import bootstrap_client, es_errors
from .licence import isolation_status


def elasticsearch_health() -> dict:
    with es_errors("check cluster health"):
        health = bootstrap_client().cluster.health()
    status = isolation_status()
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
