"""Whether the cluster can enforce isolation: document level security needs a licence that has it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from elasticsearch import Elasticsearch

from atlas_site.errors import IsolationUnavailable

from .client import bootstrap_client, es_errors

log = logging.getLogger(__name__)
DLS_LICENCES = {"trial", "platinum", "enterprise"}
ISOLATION_MODES = {"dls", "app-filter"}


@dataclass(frozen=True)
class IsolationStatus:
    licence: str
    licence_status: str
    dls_available: bool
    mode: str

    @property
    def ok(self) -> bool:
        return self.mode == "app-filter" or self.dls_available

    def problem(self) -> str | None:
        if self.ok:
            return None
        return (
            f"the Elasticsearch licence is '{self.licence}' ({self.licence_status}), which has no document level "
            "security, so Atlas cannot keep tenants apart in the cluster. Use a trial, platinum or enterprise "
            "licence, or set ATLAS_ISOLATION_MODE=app-filter to rely on the application's filter alone."
        )


def isolation_mode() -> str:
    mode = settings.ATLAS_ISOLATION_MODE
    if mode not in ISOLATION_MODES:
        raise IsolationUnavailable(f"ATLAS_ISOLATION_MODE must be one of {sorted(ISOLATION_MODES)}, not {mode!r}")
    return mode


def isolation_status(*, client: Elasticsearch | None = None) -> IsolationStatus:
    """The licence's isolation ability; ``client``: the bootstrap client with other options (a timeout)."""
    with es_errors("read the licence"):
        licence = (client or bootstrap_client()).license.get()["license"]
    kind, status = licence.get("type", "unknown"), licence.get("status", "unknown")
    return IsolationStatus(
        licence=kind,
        licence_status=status,
        dls_available=kind in DLS_LICENCES and status == "active",
        mode=isolation_mode(),
    )


def isolation_ensure() -> IsolationStatus:
    """Fail closed when the cluster cannot isolate tenants and app-filter mode was not chosen."""
    status = isolation_status()
    problem = status.problem()
    if problem:
        raise IsolationUnavailable(problem)
    if status.mode == "app-filter":
        log.warning(
            "ATLAS_ISOLATION_MODE=app-filter: tenants and users are separated ONLY by the application's query "
            "filter; Elasticsearch does not enforce isolation. Do not use this mode for untrusted tenants."
        )
    return status
