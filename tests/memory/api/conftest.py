"""The REST API tests run against a live server (tests/live_server.py)."""

from tests.live_server import atlas_server  # noqa: F401
