"""Elasticsearch clients: the bootstrap (superuser) client and clients for minted API keys.

The bootstrap credential creates indices, mints and invalidates keys and runs
maintenance; it never serves a user's request. Clients for API keys are cached
per key id so connection pools are reused across requests.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from django.conf import settings
from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import ApiError, AuthenticationException, Elasticsearch

from atlas_site.errors import DependencyUnavailable, ElasticsearchUnreachable
from atlas_site.observability.engine import MeasuredTransport

_lock = threading.Lock()
_key_clients: dict[str, Elasticsearch] = {}


def _client(**auth) -> Elasticsearch:
    return Elasticsearch(
        settings.ATLAS_ES_URL,
        ca_certs=settings.ATLAS_ES_CA_CERTS,
        request_timeout=settings.ATLAS_ES_REQUEST_TIMEOUT,
        retry_on_timeout=True,
        max_retries=settings.ATLAS_ES_MAX_RETRIES,
        transport_class=MeasuredTransport,
        **auth,
    )


@lru_cache(maxsize=1)
def bootstrap_client() -> Elasticsearch:
    """The superuser client: maintenance and key management only."""
    if not settings.ATLAS_ES_PASSWORD:
        raise DependencyUnavailable("ATLAS_ES_PASSWORD is not set: Atlas cannot reach Elasticsearch")
    return _client(basic_auth=(settings.ATLAS_ES_USERNAME, settings.ATLAS_ES_PASSWORD))


def api_key_client(*, key_id: str, encoded: str) -> Elasticsearch:
    """A client that authenticates with one API key (and nothing else)."""
    with _lock:
        client = _key_clients.get(key_id)
        if client is None:
            client = _key_clients[key_id] = _client(api_key=encoded)
        return client


def api_key_client_forget(*, key_id: str) -> None:
    """Drop the cached client of an invalidated key (not closed: a request may still be using it)."""
    with _lock:
        _key_clients.pop(key_id, None)


def clients_reset() -> None:
    """Forget every cached client (settings changed, e.g. in tests)."""
    bootstrap_client.cache_clear()
    with _lock:
        for client in _key_clients.values():
            client.close()
        _key_clients.clear()


def es_url_shown() -> str:
    """ATLAS_ES_URL without any user:password part, for messages to operators."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(settings.ATLAS_ES_URL)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))


@contextmanager
def es_errors(what: str) -> Iterator[None]:
    """Turn transport failures into a clear 503 instead of a stack trace."""
    try:
        yield
    except (TransportConnectionError, ConnectionTimeout) as exc:
        raise ElasticsearchUnreachable(f"Elasticsearch is unreachable while trying to {what}") from exc
    except AuthenticationException as exc:
        raise DependencyUnavailable(f"Elasticsearch refused Atlas's credential while trying to {what}") from exc
    except ApiError as exc:
        if exc.meta.status >= 500:
            raise DependencyUnavailable(f"Elasticsearch failed ({exc.meta.status}) while trying to {what}") from exc
        if write_blocked(exc.body):
            raise DependencyUnavailable(write_blocked_message(what)) from exc
        raise


def write_blocked(error: object) -> bool:
    """Whether an Elasticsearch error (a response body, or a bulk item's ``error``) is a write block:
    ``index.blocks.write`` (a backup in progress) or the disk flood stage's ``read_only_allow_delete``.
    Elasticsearch answers them 403 or 429 with ``cluster_block_exception``; they pass, so they are a 503."""
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    return isinstance(error, dict) and error.get("type") == "cluster_block_exception"


def write_blocked_message(what: str) -> str:
    return (
        f"Elasticsearch is refusing writes for now (an index write block: a backup in progress?) while trying to {what}"
    )
