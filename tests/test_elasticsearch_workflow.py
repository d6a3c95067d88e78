"""The GitHub Actions workflow that runs the suite against real Elasticsearch (.github/workflows/elasticsearch.yml).

No Docker engine (and no GitHub runner) is reachable from our machines, so the workflow never runs here.
These tests parse it and pin down what it must be: the README's `make test` with the external-cluster
variables (tests/external_cluster.py) naming a service container of each Elasticsearch version in the
matrix, with security on and the trial licence that document level security and API keys need.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from tests.external_cluster import URL_VARIABLE

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "elasticsearch.yml"
#: 8.15 is the API embedded_es speaks; 9.5.3 the newest 9.x release found when the workflow was written.
VERSIONS = ["8.15.5", "9.5.3"]
IMAGE = "docker.elastic.co/elasticsearch/elasticsearch:${{ matrix.elasticsearch }}"
#: What PYTEST_ARGS may hold: output and parallelism only, never a selection that would leave tests out.
HARMLESS_PYTEST_ARGS = {"-q", "--durations=15", "-n", "2", "--dist", "loadfile"}


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


@pytest.fixture(scope="module")
def job(workflow) -> dict:
    assert list(workflow["jobs"]) == ["suite"]
    return workflow["jobs"]["suite"]


@pytest.fixture(scope="module")
def service(job) -> dict:
    assert list(job["services"]) == ["elasticsearch"]
    return job["services"]["elasticsearch"]


def test_it_runs_on_pushes_to_main_pull_requests_by_hand_and_weekly(workflow) -> None:
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"push", "pull_request", "workflow_dispatch", "schedule"}
    assert triggers["push"] == {"branches": ["main"]}
    assert workflow["permissions"] == {"contents": "read"}


def test_the_matrix_is_8_15_and_the_newest_9(job) -> None:
    assert job["strategy"]["matrix"] == {"elasticsearch": VERSIONS}
    assert job["strategy"]["fail-fast"] is False  # one version's failure must not hide the other's result
    majors = [int(v.split(".")[0]) for v in VERSIONS]
    assert majors == [8, 9] and VERSIONS[0].startswith("8.15.")


def test_the_service_is_the_official_image_with_security_on_and_a_trial_licence(service, job) -> None:
    assert service["image"] == IMAGE
    env = service["env"]
    assert env["xpack.security.enabled"] == "true"
    assert env["xpack.license.self_generated.type"] == "trial"  # DLS and API keys: not on Basic
    assert env["discovery.type"] == "single-node"
    assert env["ELASTIC_PASSWORD"] == job["env"]["ATLAS_TEST_ES_PASSWORD"]


def test_the_job_waits_for_a_healthy_cluster(service, job) -> None:
    options = shlex.split(service["options"])
    command = options[options.index("--health-cmd") + 1]
    password = job["env"]["ATLAS_TEST_ES_PASSWORD"]
    assert command.startswith(f"curl -fsu elastic:{password} ")
    assert "/_cluster/health?wait_for_status=yellow" in command
    assert int(options[options.index("--health-retries") + 1]) * 10 >= 180  # ES takes a minute or two to start


def test_the_suite_is_pointed_at_the_service_by_the_external_cluster_variables(job) -> None:
    env = job["env"]
    assert env[URL_VARIABLE] == "http://elasticsearch:9200"  # the service's name in the job's network
    assert env["ATLAS_TEST_ES_USERNAME"] == "elastic"
    assert {k for k in env if k.startswith("ATLAS_")} == {
        URL_VARIABLE,
        "ATLAS_TEST_ES_USERNAME",
        "ATLAS_TEST_ES_PASSWORD",
    }
    assert set(shlex.split(env["PYTEST_ARGS"])) <= HARMLESS_PYTEST_ARGS


def test_the_test_command_is_the_readmes_make_test(job) -> None:
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"^make test\s+# run the test suite$", readme, re.MULTILINE)
    commands = [step["run"] for step in job["steps"] if "run" in step]
    assert [c for c in commands if "pytest" in c or "make" in c] == ["make test"]
    names = [step.get("name") or step.get("uses") for step in job["steps"]]
    assert names.index("make test") > names.index("Debian's chromium for the browser tests")


def test_the_runner_has_what_the_suite_needs(job) -> None:
    assert job["container"] == "python:3.11-bookworm"  # pyproject: requires-python >= 3.11
    assert 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()
    setup_node = next(step for step in job["steps"] if step.get("uses", "").startswith("actions/setup-node@"))
    assert setup_node["with"]["node-version"] == "20"
    assert job["timeout-minutes"] <= 90
