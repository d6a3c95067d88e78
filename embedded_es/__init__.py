"""embedded_es: Elasticsearch for development and tests — the noida-db engine behind a security gateway."""

from .server import EmbeddedElasticsearch

__all__ = ["EmbeddedElasticsearch"]
