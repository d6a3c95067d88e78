"""What every embedding provider is: texts in, unit-length float vectors of one model's space out.

A provider names its vector space in ``model_id``, which is stored on each document: vectors of two
different ``model_id`` are never compared, a model change means a reindex.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from atlas_site.errors import DependencyUnavailable


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into unit-normalised vectors of one model's space."""

    model_id: str
    dims: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


class EmbeddingModelUnavailable(DependencyUnavailable):
    """A local model cannot load here (its package is not installed, or its files are wrong)."""

    code = "embedding_model_unavailable"


def unit_rows(matrix: np.ndarray) -> list[list[float]]:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.clip(norms, 1e-12, None)).tolist()


def texts_checked(texts: Sequence[str]) -> list[str]:
    texts = list(texts)
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"embeddings are made from strings, got {type(text).__name__}")
    return texts
