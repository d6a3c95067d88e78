"""elasticsearch.dsl Document classes of the memory indices.

Every memory document carries ``tenant_id``, ``user_id`` (not on catalog),
``memory_type``, ``text`` and its ``embedding`` with the ``embedding_model`` that
made it; ownership fields are stamped by the services from the authenticated
principal, never taken from client input. ``external_id`` is an optional
tenant-unique id given by the writer (imports keep their ids in it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.conf import settings
from elasticsearch.dsl import (
    Boolean,
    Date,
    DateRange,
    DenseVector,
    Document,
    Double,
    Float,
    InnerDoc,
    Integer,
    Keyword,
    MetaField,
    Nested,
    Object,
    Text,
)

# The configured model's dimensions (768 for the all-mpnet-base-v2 default, 384 for MiniLM): a change
# of model is a new index version (atlas_reindex TYPE), which takes the mapping of the day.
EMBEDDING_DIMS = settings.ATLAS_EMBEDDING_DIMS
# The multilingual leg's field: memory/inference/embeddings.py refuses a multilingual model of another size.
MULTILINGUAL_EMBEDDING_DIMS = 384
# The cross-lingual leg's field (Universal Sentence Encoder Multilingual).
CROSSLINGUAL_EMBEDDING_DIMS = 512
BYTE_VECTOR_MAX = 127


def stored_vector(vector: Sequence[float]) -> str:
    """An embedding as the memory indices store and query it: one signed byte per dimension, hex-encoded.

    Elasticsearch (8.14 and later) reads a hex string as a ``byte`` vector, in documents and in knn's
    ``query_vector``. Each vector is scaled so that its largest component is ±127: cosine similarity
    ignores the scale, so only the rounding is lost (< 0.01 cosine; the evaluation gate holds). A
    768-character string instead of 384 JSON numbers makes every document a quarter of the size on
    disk and in the cluster's memory, and every search on the embedded engine — which copies each
    document's source per search — about 40 % cheaper.
    """
    values = [float(x) for x in vector]
    peak = max((abs(x) for x in values), default=0.0)
    if not peak or not all(math.isfinite(x) for x in values):  # cosine needs a direction to compare
        raise ValueError("an embedding must have at least one non-zero, finite component")
    scale = BYTE_VECTOR_MAX / peak
    return bytes(round(x * scale) & 0xFF for x in values).hex()


#: The stored vectors: never returned to callers, copied whole by reindex and archive.
VECTOR_FIELDS = ["embedding", "embedding_multilingual", "embedding_crosslingual"]


def byte_vector(dims: int) -> DenseVector:
    """A stored embedding (see stored_vector()), searched by exact ("flat") cosine kNN."""
    return DenseVector(dims=dims, element_type="byte", similarity="cosine", index=True, index_options={"type": "flat"})


def searchable_text() -> Text:
    """English text for BM25 — stop words dropped, words stemmed ("cabling" finds "cable") — with an
    unstemmed ``.exact`` subfield, so version numbers, error codes and names still match literally."""
    return Text(analyzer="english", fields={"exact": Text(analyzer="standard")})


class MemoryDocument(Document):
    tenant_id = Keyword()
    user_id = Keyword()
    memory_type = Keyword()
    # The document's _id, as a sortable keyword (Elasticsearch has no doc values on _id).
    memory_id = Keyword()
    external_id = Keyword()
    text = searchable_text()
    # Exact ("flat") kNN: every recall is filtered to one subject and the catalog — hundreds to a few
    # thousand vectors — where exact search is cheap and never misses; HNSW's approximation only pays
    # off on millions of unfiltered vectors. Byte elements: see stored_vector().
    embedding = byte_vector(EMBEDDING_DIMS)
    embedding_model = Keyword()
    # The second model's vector (ATLAS_MULTILINGUAL_EMBEDDING_MODEL), searched as a recall leg of its own.
    embedding_multilingual = byte_vector(MULTILINGUAL_EMBEDDING_DIMS)
    embedding_multilingual_model = Keyword()
    # The third model's vector (ATLAS_CROSSLINGUAL_EMBEDDING_MODEL), searched as the cross-lingual leg.
    embedding_crosslingual = byte_vector(CROSSLINGUAL_EMBEDDING_DIMS)
    embedding_crosslingual_model = Keyword()
    created_at = Date()


class MetadataEntry(InnerDoc):
    """One metadata key's value in the field of its type (memory.elastic.scope_queries): a number compares
    as a number, a date as a date — ``flattened`` would compare both as strings (docs/scoping.md)."""

    key = Keyword()
    kw = Keyword()
    num = Double()
    date = Date()
    bool = Boolean()


class ScopedMemory(MemoryDocument):
    """A subject's own memory, scoped further by whoever wrote it (memory/scoping.py): the agent, app and
    run, and the writer's metadata — as written in ``metadata`` (returned, not indexed: its keys are the
    tenants' own, and a field per key would grow the shared mapping without bound), searched through
    ``metadata_entries``."""

    agent_id = Keyword()
    app_id = Keyword()
    run_id = Keyword()
    session_id = Keyword()
    metadata = Object(enabled=False)
    metadata_entries = Nested(MetadataEntry)


class DatedMemory(ScopedMemory):
    """A turn or fact whose text names dates: each resolved at write time against the memory's own time
    (memory.temporal, docs/temporal.md), kept for people and agents to read (``mentions``: phrase, start,
    end, granularity; not searched) and as ranges recall matches a question's time against
    (``mention_ranges``: Elasticsearch's ``date_range``, queried with ``relation: intersects``)."""

    mentions = Object(enabled=False)
    mention_ranges = DateRange(format="strict_date")


class AuthoredMemory(ScopedMemory):
    """A fact or playbook: who it speaks for and whether it waits for review (memory/authority.py)."""

    # person | agent | consolidation | import | operator, stamped by the service from the write's path.
    authority = Keyword()
    # token:<name> | person:<id> | run:<consolidation run id> | operator:<id> | import:<actor>
    written_by = Keyword()
    # The writer's stable identity (token:<pk>, person:<pk>, run:<id> …): whoever proposed never decides.
    writer_id = Keyword()
    # "pending" while the person has not accepted it (never recalled); absent once accepted.
    review_state = Keyword()
    # The facts a pending proposal would replace when accepted (its ``supersedes`` stays empty till then,
    # so chains and the reconciler never see a proposal as a successor).
    proposal_for = Keyword()


class EpisodicMemory(DatedMemory):
    memory_type_name = "episodic"
    # What the embedding saw besides the turn (session date, previous turn); not searched.
    embedding_context = Keyword(index=False, doc_values=False)
    # The id of the turn before this one in its session (recall: ATLAS_REPLY_INHERITANCE).
    previous_turn_id = Keyword()
    role = Keyword()
    event_type = Keyword()
    timestamp = Date()


class SemanticMemory(AuthoredMemory, DatedMemory):
    memory_type_name = "semantic"
    fact_type = Keyword()
    confidence = Float()
    source_episodes = Keyword()
    last_used_at = Date()
    use_count = Integer()
    supersedes = Keyword()
    contradiction = Keyword()
    superseded_by = Keyword()
    superseded_at = Date()
    # When a writer claimed this fact for its successor (the reconciler releases a claim never completed).
    supersession_claimed_at = Date()
    retracted = Boolean()
    valid_from = Date()
    valid_to = Date()
    # valid_to was set when a successor stating its own valid_from replaced this version (a release undoes it).
    valid_to_by_successor = Boolean()
    pending_outcome = Boolean()
    # Consolidation: when a later conversation last confirmed the fact, and the ids of the runs'
    # changes already applied to it (a redelivered run applies none twice).
    last_confirmed_at = Date()
    applied_events = Keyword()


class Step(InnerDoc):
    order = Integer()
    instruction = searchable_text()
    tool = Keyword()


class ProceduralMemory(AuthoredMemory):
    memory_type_name = "procedural"
    name = searchable_text()
    trigger_text = searchable_text()
    description = searchable_text()
    steps = Nested(Step)
    version = Integer()
    success_count = Integer()
    failure_count = Integer()
    last_success_at = Date()
    outcome_score = Float()
    use_count = Integer()
    last_used_at = Date()
    applied_events = Keyword()


class CatalogEntry(MemoryDocument):
    memory_type_name = "catalog"
    title = searchable_text()
    category = Keyword()
    tags = Keyword()


class ArchivedMemory(SemanticMemory):
    """Superseded facts moved out of the hot index: the semantic mapping, in its own index.

    Explicit and strict: the archive's vectors stay dense vectors (searched by recall with
    ``include_superseded``), a field the mapping does not name is refused instead of mapped by guess
    (a hex vector would become text), and the archive's index template carries the same mapping to
    every generation ILM's rollover creates.
    """

    memory_type_name = "archive"

    class Meta:
        dynamic = MetaField("strict")


DOCUMENT_CLASSES: tuple[type[MemoryDocument], ...] = (
    EpisodicMemory,
    SemanticMemory,
    ProceduralMemory,
    CatalogEntry,
    ArchivedMemory,
)
DOCUMENT_CLASS_BY_TYPE = {cls.memory_type_name: cls for cls in DOCUMENT_CLASSES}
