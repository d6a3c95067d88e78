"""The suite against an external cluster by one variable (tests/external_cluster.py, docs/testing.md).

No Elasticsearch server runs here, so the external cluster is an embedded_es started on its own, the way
`make run` starts one, and reached only through its URL and password, as a real cluster would be. A small
pytest run in a child process is pointed at it with ``ATLAS_TEST_ES_URL`` and must pass there, write its
indices and keys there under its own prefix, remove them (and an old killed run's) afterwards, leave
everything else alone, and skip the embedded-only tests with their reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from embedded_es import EmbeddedElasticsearch
from memory.elastic.indices import MEMORY_TYPES
from tests.external_cluster import (
    external_cluster_from_environment,
    prefix_started_at,
    run_id_ensure,
    run_prefix,
    side_prefix,
    stale_runs_own,
    this_run_owns,
)

ROOT = Path(__file__).resolve().parent.parent
#: Tests that write, mint keys and read with DLS (they pass), one marked embedded-only, one folder that is.
CHILD_TESTS = ("tests/tenants/test_services.py", "tests/embedded_es/test_wire.py")
MARKED = "tests.tenants.test_services::test_basic_licence_refuses_multi_tenant_mode"
BASIC_REASON = "embedded only: needs a cluster on a Basic licence: the embedded engine reports one on request"
SUITE_REASON = "embedded only: tests embedded_es itself (the development engine and its security gateway)"
# Variables of this run that must not leak into the child: it is a run of its own, not an xdist worker, on
# SQLite and a broker folder of its own (a PostgreSQL test database of the same name would be this run's,
# and this worker's broker folder its Celery tests').
NOT_INHERITED = (
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "PYTEST_ADDOPTS",
    "DATABASE_URL",
    "REDIS_URL",
    "ATLAS_BROKER_DIR",
)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%dt%H%M%S")


def _outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """Each test's outcome (passed, skipped, failed, error) and skip message, from pytest's JUnit XML."""
    outcomes = {}
    for case in ET.parse(junit).iter("testcase"):  # noqa: S314 (the child pytest's own report)
        name = f"{case.get('classname')}::{case.get('name')}"
        result = next((child for child in case if child.tag in ("skipped", "failure", "error")), None)
        if result is None:
            outcomes[name] = ("passed", "")
        else:
            outcomes[name] = (
                {"skipped": "skipped", "failure": "failed"}.get(result.tag, "error"),
                result.get("message"),
            )
    return outcomes


class IndexWatch:
    """Polls the cluster during the child's run for the indices and active keys under a prefix."""

    def __init__(self, admin: Elasticsearch, prefix: str) -> None:
        self.admin, self.prefix = admin, prefix
        self.indices: set[str] = set()
        self.keys: set[str] = set()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self.done.wait(0.3):
            self.indices |= set(self.admin.indices.get(index=f"{self.prefix}-*"))
            for key in self.admin.security.get_api_key(active_only=True)["api_keys"]:
                patterns = [
                    n for d in (key.get("role_descriptors") or {}).values() for g in d["indices"] for n in g["names"]
                ]
                if f"{self.prefix}-*" in patterns:
                    self.keys.add(key["id"])

    def __enter__(self) -> IndexWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()


@pytest.mark.embedded_only(
    reason="starts an embedded engine as the external cluster; under ATLAS_TEST_ES_URL the run itself shows the mode"
)
def test_the_suite_runs_against_an_external_cluster_by_one_variable(tmp_path) -> None:
    now = datetime.now(UTC)
    run_id = f"{_stamp(now)}-c0ffee"
    prefix = run_prefix(run_id=run_id, worker="")
    stale = f"atlas-test-ext-{_stamp(now - timedelta(days=2))}-dead00-gw1"  # a killed run two days ago
    recent = f"atlas-test-ext-{_stamp(now - timedelta(hours=1))}-a1a1a1-gw0"  # someone's run, still going
    with EmbeddedElasticsearch(password="external-cluster-password") as server:  # noqa: S106 (a throwaway engine)
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password), request_timeout=30)
        for index in (f"{stale}-episodic-v1", f"{recent}-episodic-v1", "someone-elses-index"):
            admin.indices.create(index=index)
        stale_key = admin.security.create_api_key(
            name="left by a killed run",
            role_descriptors={"r": {"indices": [{"names": [f"{stale}-*"], "privileges": ["read"]}]}},
        )["id"]
        env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED and not k.startswith("ATLAS_TEST_ES_")}
        env |= {
            "ATLAS_TEST_ES_URL": server.url,
            "ATLAS_TEST_ES_PASSWORD": server.password,
            "ATLAS_TEST_RUN_ID": run_id,
            "ATLAS_DATA_DIR": str(tmp_path),  # not this run's SQLite files and broker folders
        }
        junit = tmp_path / "child.xml"
        with IndexWatch(admin, prefix) as watch:
            child = subprocess.run(
                [sys.executable, "-m", "pytest", *CHILD_TESTS, "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]

        # It ran against the URL: the application's indices and its DLS keys were there, under the prefix.
        for memory_type in MEMORY_TYPES:
            assert any(name.startswith(f"{prefix}-{memory_type}-v") for name in watch.indices), (
                memory_type,
                watch.indices,
            )
        assert watch.keys, "no key with the run's prefix was minted on the external cluster"
        # And removed all of it, and the killed run's leftovers, and nothing else.
        assert sorted(admin.indices.get(index="*")) == sorted([f"{recent}-episodic-v1", "someone-elses-index"])
        active = {k["id"] for k in admin.security.get_api_key(active_only=True)["api_keys"]}
        assert active & (watch.keys | {stale_key}) == set()
        assert admin.ilm.get_lifecycle().keys() & {f"{prefix}-archive-policy", f"{prefix}-archive-keep-policy"} == set()

    outcomes = _outcomes(junit)
    wire = {name: outcome for name, outcome in outcomes.items() if name.startswith("tests.embedded_es.test_wire")}
    services = {name: outcome for name, outcome in outcomes.items() if name.startswith("tests.tenants.test_services")}
    assert len(wire) >= 40 and set(wire.values()) == {("skipped", SUITE_REASON)}
    assert services.pop(MARKED) == ("skipped", BASIC_REASON)
    assert len(services) >= 15 and set(services.values()) == {("passed", "")}
    assert len(outcomes) == len(wire) + len(services) + 1


def test_the_variables_name_the_cluster_and_say_what_is_missing() -> None:
    assert external_cluster_from_environment({}) is None
    assert external_cluster_from_environment({"ATLAS_TEST_ES_URL": " "}) is None
    found = external_cluster_from_environment(
        {"ATLAS_TEST_ES_URL": "https://es:9200", "ATLAS_TEST_ES_PASSWORD": "pw", "ATLAS_TEST_ES_CA_CERTS": "/ca.pem"}
    )
    assert (found.url, found.username, found.password, found.ca_certs) == (
        "https://es:9200",
        "elastic",
        "pw",
        "/ca.pem",
    )
    with pytest.raises(ValueError, match="set ATLAS_TEST_ES_PASSWORD"):
        external_cluster_from_environment({"ATLAS_TEST_ES_URL": "https://es:9200"})
    with pytest.raises(ValueError, match="a key minted with an API key no privileges"):
        external_cluster_from_environment({"ATLAS_TEST_ES_URL": "https://es:9200", "ATLAS_TEST_ES_API_KEY": "k"})


def test_each_run_and_worker_has_a_prefix_dated_by_its_start() -> None:
    environ: dict[str, str] = {}
    started = datetime(2026, 12, 4, 23, 5, 9, tzinfo=UTC)
    run_id = run_id_ensure(environ, now=started)
    assert environ["ATLAS_TEST_RUN_ID"] == run_id and run_id.startswith("20261204t230509-") and len(run_id) == 22
    assert run_id_ensure(environ, now=started + timedelta(hours=1)) == run_id  # the workers inherit it
    assert run_prefix(run_id=run_id, worker="gw1") == f"atlas-test-ext-{run_id}-gw1"
    assert run_prefix(run_id=run_id, worker="") == f"atlas-test-ext-{run_id}-main"
    assert prefix_started_at(f"atlas-test-ext-{run_id}-gw1-semantic-v2") == started
    assert prefix_started_at("atlas-test-ext-notadate-c0ffee-gw0-semantic") is None
    assert prefix_started_at("atlas-semantic") is None


def test_a_tests_own_deployment_is_beside_the_runs_prefix_and_removed_with_it(monkeypatch) -> None:
    monkeypatch.delenv("ATLAS_TEST_ES_URL", raising=False)
    assert side_prefix("legacy") == "atlas-legacy"  # the embedded engine: as it always was
    monkeypatch.setenv("ATLAS_TEST_ES_URL", "https://es:9200")
    monkeypatch.setenv("ATLAS_ES_INDEX_PREFIX", "atlas-test-ext-20261204t230509-c0ffee-gw1")
    legacy = side_prefix("legacy")
    assert legacy == "atlas-test-ext-20261204t230509-c0ffee-gw1.legacy"
    owned = this_run_owns("atlas-test-ext-20261204t230509-c0ffee-gw1")
    assert [owned(n) for n in (f"{legacy}-catalog-v1", "atlas-test-ext-20261204t230509-c0ffee-gw1-semantic")] == [
        True,
        True,
    ]
    assert [owned(n) for n in ("atlas-test-ext-20261204t230509-c0ffee-gw10-semantic", "atlas-legacy-catalog-v1")] == [
        False,
        False,
    ]
    stale = stale_runs_own(now=datetime(2026, 12, 5, 23, 5, 10, tzinfo=UTC))
    assert [stale(f"{legacy}-catalog-v1"), stale("atlas-test-ext-20261205t000000-c0ffee-gw0-semantic")] == [True, False]
