"""Test environment defaults, loaded as a pytest plugin (``-p tests._environment``) so they are in
place before pytest-django imports the settings."""

from __future__ import annotations

import os
import tempfile

_TEST_DATA_DIR = tempfile.mkdtemp(prefix="atlas-test-")
os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("ATLAS_ENCRYPTION_KEYS", "9CcI2YIb7ugLd6R0H0w1wu8S9ls0dI0bOBV3zEmDbBM=")
os.environ.setdefault("ATLAS_DATA_DIR", _TEST_DATA_DIR)
os.environ.setdefault("ATLAS_EMAIL_VERIFICATION", "mandatory")
os.environ["ATLAS_ENV_FILE"] = os.devnull
os.environ.setdefault("ATLAS_STATIC_FROM_APPS", "true")
os.environ["DJANGO_EMAIL_BACKEND"] = "django.core.mail.backends.locmem.EmailBackend"
os.environ.setdefault("ATLAS_ES_INDEX_PREFIX", f"atlas-test-{os.getpid()}")
# A Redis cache outlives the session: a fresh prefix keeps rate limits and such from leaking between runs.
os.environ["ATLAS_CACHE_KEY_PREFIX"] = f"atlas-test-{os.getpid()}-{os.urandom(4).hex()}"
