"""The suite against an external Elasticsearch cluster: ``ATLAS_TEST_ES_URL`` (docs/testing.md).

Without the variable nothing here runs and the session starts its own embedded_es, as always. With it,
every test that needs an engine uses that cluster under an index prefix of its own run and pytest-xdist
worker (``atlas-test-ext-<run>-<worker>``; the run id starts with its UTC start time), and the run removes
what it created: at session end its indices, index templates, ILM policies, API keys and roles, and at
session start the same of any earlier run older than a day (a run that was killed cleans up nothing).
A shared cluster may hold other people's data: only names under ``atlas-test-ext-`` are ever removed.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from elasticsearch import ApiError, Elasticsearch, NotFoundError

URL_VARIABLE = "ATLAS_TEST_ES_URL"
#: Set once by the process that starts the run; pytest-xdist workers and subprocesses inherit it.
RUN_VARIABLE = "ATLAS_TEST_RUN_ID"
PREFIX_ROOT = "atlas-test-ext"
STALE_AFTER = timedelta(days=1)
_RUN_ID = re.compile(r"^(\d{8}t\d{6})-[0-9a-f]{6}$")
_PREFIX = re.compile(rf"^{PREFIX_ROOT}-(\d{{8}}t\d{{6}})-[0-9a-f]{{6}}-[a-z0-9]+")
_STAMP = "%Y%m%dt%H%M%S"


@dataclass(frozen=True)
class ExternalCluster:
    """Where and how to reach the cluster; the superuser-like credential creates indices and mints keys."""

    url: str
    username: str
    password: str
    ca_certs: str | None


def external_cluster_from_environment(environ=os.environ) -> ExternalCluster | None:
    """The external cluster the variables name, or None (the embedded default).

    Raises ValueError with what to set when they are incomplete."""
    url = environ.get(URL_VARIABLE, "").strip()
    if not url:
        return None
    password = environ.get("ATLAS_TEST_ES_PASSWORD", "")
    if not password:
        if environ.get("ATLAS_TEST_ES_API_KEY"):
            # Elasticsearch's create API key API: "If the credential that is used to authenticate this
            # request is an API key, the derived API key cannot have any privileges." Atlas mints every
            # tenant's and subject's key with a DLS role, so its bootstrap credential must be a user.
            raise ValueError(
                "ATLAS_TEST_ES_API_KEY alone cannot run the suite: Elasticsearch gives a key minted with an API "
                "key no privileges, and Atlas mints DLS keys; set ATLAS_TEST_ES_USERNAME and ATLAS_TEST_ES_PASSWORD"
            )
        raise ValueError(f"{URL_VARIABLE} is set: set ATLAS_TEST_ES_PASSWORD (and ATLAS_TEST_ES_USERNAME) too")
    return ExternalCluster(
        url=url,
        username=environ.get("ATLAS_TEST_ES_USERNAME", "") or "elastic",
        password=password,
        ca_certs=environ.get("ATLAS_TEST_ES_CA_CERTS", "") or None,
    )


def run_id_ensure(environ=os.environ, *, now: datetime | None = None) -> str:
    """This run's id (``<UTC start>-<random>``), made by the first process and inherited by the rest."""
    run_id = environ.get(RUN_VARIABLE, "")
    if not _RUN_ID.match(run_id):
        run_id = f"{(now or datetime.now(UTC)).strftime(_STAMP)}-{secrets.token_hex(3)}"
        environ[RUN_VARIABLE] = run_id
    return run_id


def run_prefix(*, run_id: str, worker: str) -> str:
    """The index prefix of one process of the run: each xdist worker (``gw0``…) has its own."""
    return f"{PREFIX_ROOT}-{run_id}-{worker or 'main'}"


def prefix_started_at(name: str) -> datetime | None:
    """When the run that owns a name (index, template, policy, key pattern) started; None if not a run's."""
    match = _PREFIX.match(name)
    return datetime.strptime(match.group(1), _STAMP).replace(tzinfo=UTC) if match else None


@dataclass
class Removed:
    indices: list[str] = field(default_factory=list)
    templates: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)


def run_leftovers_remove(es: Elasticsearch, *, owned) -> Removed:
    """Remove every index, index template, ILM policy, API key and role whose name ``owned(name)`` accepts.

    Indices go first (a policy in use cannot be deleted); names are listed and deleted by name, since a
    real cluster refuses wildcard deletes (``action.destructive_requires_name`` is true since 8.0). What is
    already gone is no error: every xdist worker removes a stale run's names at its start."""
    removed = Removed()
    gone_ok = es.options(ignore_status=404)
    removed.indices = sorted(i for i in es.indices.get(index=f"{PREFIX_ROOT}-*", expand_wildcards="all") if owned(i))
    for start in range(0, len(removed.indices), 50):  # a URL of bounded length
        es.indices.delete(index=",".join(removed.indices[start : start + 50]), ignore_unavailable=True)
    try:
        templates = es.indices.get_index_template(name=f"{PREFIX_ROOT}-*")["index_templates"]
    except NotFoundError:
        templates = []
    removed.templates = sorted(t["name"] for t in templates if owned(t["name"]))
    for name in removed.templates:
        gone_ok.indices.delete_index_template(name=name)
    removed.policies = sorted(p for p in es.ilm.get_lifecycle() if owned(p))
    for name in removed.policies:
        gone_ok.ilm.delete_lifecycle(name=name)
    keys = es.security.get_api_key(active_only=True)["api_keys"]
    removed.keys = sorted(k["id"] for k in keys if any(owned(n) for n in _key_names(k)))
    if removed.keys:
        es.security.invalidate_api_key(ids=removed.keys)
    removed.roles = sorted(r for r in _roles(es) if owned(r))
    for name in removed.roles:
        gone_ok.security.delete_role(name=name)
    return removed


def _key_names(key: dict) -> list[str]:
    """A key's name and the index patterns its roles grant: Atlas's keys name the prefix in the latter."""
    names = [key.get("name") or ""]
    for descriptor in (key.get("role_descriptors") or {}).values():
        for group in descriptor.get("indices") or []:
            names.extend(group.get("names") or [])
    return names


def _roles(es: Elasticsearch) -> list[str]:
    """The cluster's role names; none where there is no roles API (the embedded gateway has none, and the
    application creates no roles: its keys carry their role descriptors)."""
    try:
        return list(es.security.get_role())
    except ApiError as exc:
        if exc.meta.status in (400, 404, 405):
            return []
        raise


def side_prefix(name: str) -> str:
    """The index prefix of a test's own deployment (another embedding model, a legacy layout).

    On the embedded engine ``atlas-<name>``, as always; on an external cluster it is this run's (so that
    concurrent runs never meet and the clean-up removes it): beside the run's prefix, not under it, so
    that no key minted for ``<prefix>-*`` reads it."""
    if not os.environ.get(URL_VARIABLE):
        return f"atlas-{name}"
    return f"{os.environ['ATLAS_ES_INDEX_PREFIX']}.{name}"


def this_run_owns(prefix: str):
    return lambda name: name == prefix or name.startswith((f"{prefix}-", f"{prefix}."))


def stale_runs_own(*, now: datetime):
    """Names of runs that started more than a day ago (a killed run's leftovers)."""

    def owned(name: str) -> bool:
        started = prefix_started_at(name)
        return started is not None and now - started > STALE_AFTER

    return owned
