"""elasticsearch.dsl Document classes of the memory indices (fields grow with the memory engine).

Every memory document carries ``tenant_id``, ``user_id`` (not on catalog),
``text`` and its ``embedding``; ownership fields are stamped by the services
from the authenticated principal, never taken from client input.
"""

from __future__ import annotations

from elasticsearch.dsl import Date, DenseVector, Document, Keyword, Text

EMBEDDING_DIMS = 384


class MemoryDocument(Document):
    tenant_id = Keyword()
    user_id = Keyword()
    text = Text()
    embedding = DenseVector(dims=EMBEDDING_DIMS, similarity="cosine", index=True)
    embedding_model = Keyword()
    created_at = Date()


class EpisodicMemory(MemoryDocument):
    memory_type = "episodic"
    session_id = Keyword()
    agent_id = Keyword()
    role = Keyword()
    event_type = Keyword()
    timestamp = Date()


class SemanticMemory(MemoryDocument):
    memory_type = "semantic"
    fact_type = Keyword()
    superseded_by = Keyword()


class ProceduralMemory(MemoryDocument):
    memory_type = "procedural"
    name = Text()
    trigger_text = Text()
    description = Text()


class CatalogEntry(MemoryDocument):
    memory_type = "catalog"
    title = Text()
    category = Keyword()
    tags = Keyword()


class ArchivedMemory(SemanticMemory):
    memory_type = "archive"


DOCUMENT_CLASSES: tuple[type[MemoryDocument], ...] = (
    EpisodicMemory,
    SemanticMemory,
    ProceduralMemory,
    CatalogEntry,
    ArchivedMemory,
)
