"""Root test configuration: test environment defaults, and one Elasticsearch for the session.

By default the session starts one embedded_es. With ``ATLAS_TEST_ES_URL`` (plus
``ATLAS_TEST_ES_USERNAME``/``ATLAS_TEST_ES_PASSWORD``, tests/external_cluster.py) the suite runs against
that cluster instead, under an index prefix of its own that it removes again; the tests marked
``embedded_only`` (and all of tests/embedded_es/) are skipped there with their reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from embedded_es import EmbeddedElasticsearch
from tests._environment import EXTERNAL_CLUSTER
from tests._ordering import SEED_VARIABLE, files_shuffled, order_seed
from tests.external_cluster import run_leftovers_remove, stale_runs_own, this_run_owns

# The live server and the browser harness, for every test package that asks for their fixtures.
pytest_plugins = ["tests.live_server", "tests.browser"]

#: The external cluster's URL when ATLAS_TEST_ES_URL names one (None: the embedded default).
REAL_CLUSTER_URL = EXTERNAL_CLUSTER.url if EXTERNAL_CLUSTER else None
#: Everything under it tests the development engine itself: embedded-only without a marker of its own.
EMBEDDED_ES_SUITE = Path(__file__).resolve().parent / "tests" / "embedded_es"
#: The longest tests, started first and each on a worker of its own when pytest-xdist spreads files over
#: workers (``-n 2 --dist loadfile``, .ci/run): each quality gate imports an evaluation set (minutes).
#: By default xdist queues files by their number of tests, so the gates' two-test file came last and
#: ran alone on one worker while the other idled (docs/performance.md "CI").
LONGEST_FIRST = ("tests/memory/test_eval_gate.py",)


def _longest(nodeid: str) -> bool:
    return nodeid.split("::", 1)[0] in LONGEST_FIRST


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seed = order_seed()
    if seed is not None:  # tests/_ordering.py: the files in a random order, the same on every worker
        items[:] = files_shuffled(items, file_of=lambda item: item.nodeid.split("::", 1)[0], seed=seed)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # every worker collects the same order
        items.sort(key=lambda item: not _longest(item.nodeid))  # stable: the rest keep their order
    if REAL_CLUSTER_URL:
        for item in items:
            reason = embedded_only_reason(item)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=f"embedded only: {reason}"))


def embedded_only_reason(item: pytest.Item) -> str | None:
    """Why a test cannot run against an external cluster, or None when it can."""
    marker = item.get_closest_marker("embedded_only")
    if marker is not None:
        return marker.kwargs.get("reason") or (marker.args[0] if marker.args else "needs the embedded engine")
    if item.path.is_relative_to(EMBEDDED_ES_SUITE):
        return "tests embedded_es itself (the development engine and its security gateway)"
    return None


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = order_seed()
    return f"test files in random order: {SEED_VARIABLE}={seed}" if seed is not None else None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile`` with each of the longest tests a unit of its own, queued in collection order
    (the longest first, then file by file)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestApart(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if _longest(nodeid) else super()._split_scope(nodeid)

    config.option.loadscopereorder = False  # the queue follows the collection order above
    return LongestApart(config, log)


class Cluster:
    def __init__(
        self,
        url: str,
        username: str,
        password: str,
        server: EmbeddedElasticsearch | None,
        ca_certs: str | None = None,
    ) -> None:
        self.url = url
        self.username = username
        self.password = password
        self.server = server
        self.ca_certs = ca_certs

    def admin(self) -> Elasticsearch:
        return Elasticsearch(
            self.url, basic_auth=(self.username, self.password), ca_certs=self.ca_certs, request_timeout=30
        )

    def with_key(self, encoded: str) -> Elasticsearch:
        return Elasticsearch(self.url, api_key=encoded, ca_certs=self.ca_certs, request_timeout=30)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    if EXTERNAL_CLUSTER is not None:
        external = Cluster(
            EXTERNAL_CLUSTER.url, EXTERNAL_CLUSTER.username, EXTERNAL_CLUSTER.password, None, EXTERNAL_CLUSTER.ca_certs
        )
        with external.admin() as es:  # a killed run cleaned up nothing: its leftovers go after a day
            run_leftovers_remove(es, owned=stale_runs_own(now=datetime.now(UTC)))
        try:
            yield external
        finally:
            with external.admin() as es:
                run_leftovers_remove(es, owned=this_run_owns(os.environ["ATLAS_ES_INDEX_PREFIX"]))
        return
    server = EmbeddedElasticsearch().start()
    try:
        yield Cluster(server.url, "elastic", server.password, server)
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def admin(cluster: Cluster) -> Elasticsearch:
    return cluster.admin()


@pytest.fixture(scope="session")
def atlas_es(cluster: Cluster) -> Cluster:
    """Point the application at the session's cluster, with indices bootstrapped."""
    from django.conf import settings

    from atlas_site.elastic.client import clients_reset
    from memory.elastic.bootstrap import cluster_bootstrap

    settings.ATLAS_ES_URL = cluster.url
    settings.ATLAS_ES_USERNAME = cluster.username
    settings.ATLAS_ES_PASSWORD = cluster.password
    clients_reset()
    cluster_bootstrap()
    return cluster
