"""The embedding providers the settings choose, built once per process: the main model
(:func:`embedding_provider`: a local model, :mod:`memory.inference.local_models`, or a server speaking
OpenAI's API, :mod:`memory.inference.openai_embeddings`), and the optional second and third models
(:func:`multilingual_embedding_provider`, :func:`crosslingual_embedding_provider`), each searched as a
leg of its own. Every provider follows :class:`memory.inference.provider.EmbeddingProvider`.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memory.inference.local_models import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_MODELS,
    LocalEmbeddingProvider,
    local_embedding_provider,
)
from memory.inference.openai_embeddings import OpenAIEmbeddingProvider
from memory.inference.provider import EmbeddingProvider
from memory.inference.query_cache import QueryEmbeddingCache

_provider: EmbeddingProvider | None = None
_provider_lock = threading.Lock()


def embedding_provider() -> EmbeddingProvider:
    """The provider the settings choose, built once per process (the model loads on first use)."""
    global _provider
    if _provider is None:
        with _provider_lock:
            if _provider is None:
                _provider = _provider_from_settings()
    return _provider


def embedding_provider_reset() -> None:
    """Forget the configured providers (settings changed, e.g. in tests)."""
    global _provider
    with _provider_lock:
        _provider = None
        _extra_providers.clear()


# The models beside the main one, by the setting that names them.
_extra_providers: dict[str, LocalEmbeddingProvider] = {}


def query_caches_clear() -> int:
    """Empty the query-embedding caches of this process's providers (keyed by query text, which may quote
    a forgotten memory); how many entries they held. Builds no provider."""
    cleared = 0
    with _provider_lock:
        providers = [p for p in (_provider, *_extra_providers.values()) if p is not None]
    for provider in providers:
        query_cache = getattr(provider, "query_cache", None)
        if isinstance(query_cache, QueryEmbeddingCache):
            cleared += query_cache.info().size
            query_cache.clear()
    return cleared


def _extra_provider(setting: str, vector_field: str, dims: int) -> LocalEmbeddingProvider | None:
    """The local model the setting ``setting`` names (None when it is empty), built once per process;
    refused when its vectors do not fit ``vector_field`` (``dims``)."""
    model = getattr(settings, setting, "") or ""
    if not model:
        return None
    provider = _extra_providers.get(setting)
    if provider is None or provider.model_id != model:
        with _provider_lock:
            provider = _extra_providers.get(setting)
            if provider is None or provider.model_id != model:
                provider = local_embedding_provider(model, threads=int(getattr(settings, "ATLAS_EMBEDDING_THREADS", 1)))
                if provider.dims != dims:
                    raise ImproperlyConfigured(
                        f"{setting}: the model {model!r} makes {provider.dims}-dimensional vectors; "
                        f"the indices' {vector_field} field holds {dims}."
                    )
                _extra_providers[setting] = provider
    return provider


def multilingual_embedding_provider() -> LocalEmbeddingProvider | None:
    """The second, multilingual model (ATLAS_MULTILINGUAL_EMBEDDING_MODEL), or None when it is off.

    Its vectors go into every memory's ``embedding_multilingual`` and recall searches them as a
    leg of their own: a user who writes Spanish and asks in English is found there, and on English
    alone a second, differently trained model's votes still lift recall (docs/recall-quality.md "Recall quality").
    """
    # Imported here: the index mapping reads the settings, and this module also serves scripts without them.
    from memory.elastic.mappings import MULTILINGUAL_EMBEDDING_DIMS

    return _extra_provider("ATLAS_MULTILINGUAL_EMBEDDING_MODEL", "embedding_multilingual", MULTILINGUAL_EMBEDDING_DIMS)


def crosslingual_embedding_provider() -> LocalEmbeddingProvider | None:
    """The third, cross-lingual model (ATLAS_CROSSLINGUAL_EMBEDDING_MODEL), or None when it is off.

    Its vectors go into every memory's ``embedding_crosslingual``; recall's leg over them judges only
    where the question's language and the memory's may differ (docs/recall-quality.md "Hard set")."""
    from memory.elastic.mappings import CROSSLINGUAL_EMBEDDING_DIMS

    return _extra_provider("ATLAS_CROSSLINGUAL_EMBEDDING_MODEL", "embedding_crosslingual", CROSSLINGUAL_EMBEDDING_DIMS)


def embedding_models_load() -> list[str]:
    """Load every configured local model now (and run each once, so its session is fully built);
    the model ids loaded."""
    loaded = []
    for provider in (embedding_provider(), multilingual_embedding_provider(), crosslingual_embedding_provider()):
        if isinstance(provider, LocalEmbeddingProvider):
            provider.embed_documents(["warm-up"])
            loaded.append(provider.model_id)
    return loaded


def _provider_from_settings() -> EmbeddingProvider:
    kind = getattr(settings, "ATLAS_EMBEDDING_PROVIDER", "local") or "local"
    model = getattr(settings, "ATLAS_EMBEDDING_MODEL", "") or ""
    dims = int(getattr(settings, "ATLAS_EMBEDDING_DIMS", 0) or LOCAL_MODELS[DEFAULT_LOCAL_MODEL].dims)
    if kind == "openai":
        return OpenAIEmbeddingProvider(
            getattr(settings, "ATLAS_EMBEDDING_API_URL", ""),
            getattr(settings, "ATLAS_EMBEDDING_API_KEY", "") or None,
            model,
            dims,
            timeout=float(getattr(settings, "ATLAS_EMBEDDING_API_TIMEOUT", 10.0)),
        )
    if kind != "local":
        raise ImproperlyConfigured(f"ATLAS_EMBEDDING_PROVIDER must be 'local' or 'openai', not {kind!r}")
    provider = local_embedding_provider(
        model or DEFAULT_LOCAL_MODEL, threads=int(getattr(settings, "ATLAS_EMBEDDING_THREADS", 1))
    )
    if provider.dims != dims:
        raise ImproperlyConfigured(
            f"The local embedding model {provider.model_id!r} makes {provider.dims}-dimensional vectors "
            f"but ATLAS_EMBEDDING_DIMS is {dims}."
        )
    return provider
