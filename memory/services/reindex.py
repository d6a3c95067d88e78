"""Moving a memory index to a new version (new mapping or new embedding model) behind its alias.

Steps: create ``<alias>-v<n+1>`` with the current mapping → block writes on the
old index → copy every document (re-embedding those made by another model, or
all with ``reembed``) → check the counts → swap the alias atomically → delete the
old index. Until the swap nothing readers use has changed; a failure before it
removes the new index and lifts the block. Writes that arrive during the copy
are refused by the block (the services surface a 503), so nothing is lost or
duplicated. After the swap the old indices are deleted: nothing reads them, and a
copy kept would keep every text that forgetting deletes later.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from elasticsearch import helpers

from atlas_site.elastic.client import bootstrap_client, es_errors
from atlas_site.errors import ValidationFailed
from memory.elastic.bootstrap import index_settings
from memory.elastic.indices import MEMORY_TYPES, alias_name, first_index_name
from memory.elastic.mappings import DOCUMENT_CLASS_BY_TYPE, VECTOR_FIELDS, stored_vector
from memory.validation import timestamp

from .prepare import dates_named, embedding_fields, memory_vectors


@dataclass
class ReindexReport:
    alias: str
    source_index: str
    target_index: str
    copied: int
    # Documents whose vector in each field was computed anew ({"embedding": n, "embedding_multilingual": m}).
    reembedded: dict[str, int]


def _dates_backfill(source: dict) -> None:
    """A turn or fact stored before dates were kept gets the dates its text names (prepare.dates_named)."""
    if source.get("memory_type") not in ("episodic", "semantic", "archive") or "mention_ranges" in source:
        return
    at = timestamp(source.get("timestamp") or source.get("created_at"), field_name="created_at")
    if at is not None and isinstance(source.get("text"), str):
        source.update(dates_named(source["text"], at=at))


def _current_indices(es, alias: str, memory_type: str) -> tuple[list[str], int]:
    """The concrete indices behind ``alias`` and their version: exactly one ``<alias>-v<N>``, or for the
    archive every generation ``<alias>-v<N>-<gen>`` ILM's rollover made (and an older ``<alias>-v<N>``)."""
    indices = sorted(es.indices.get_alias(name=alias))
    if len(indices) != 1 and not (memory_type == "archive" and indices):
        raise ValidationFailed(f"alias {alias} points at {len(indices)} indices; expected exactly one")
    versions = set()
    for index in indices:
        match = re.fullmatch(rf"{re.escape(alias)}-v(\d+)(?:-\d+)?", index)
        if not match:
            raise ValidationFailed(f"{index} is not a versioned index of {alias}")
        versions.add(int(match.group(1)))
    return indices, max(versions)


def index_reindex(
    *, memory_type: str, reembed: bool = False, progress: Callable[[int, int], None] | None = None
) -> ReindexReport:
    if memory_type not in MEMORY_TYPES:
        raise ValidationFailed(f"memory type must be one of {', '.join(MEMORY_TYPES)}")
    es = bootstrap_client()
    alias = alias_name(memory_type)
    fields = embedding_fields()
    # Vector fields no configured model writes (the multilingual one, switched off): nothing would search them.
    unused = [name for name in VECTOR_FIELDS if name not in {vector_field.name for vector_field in fields}]
    with es_errors("reindex"):
        sources, version = _current_indices(es, alias, memory_type)
        source_index = ",".join(sources)
        target_index = first_index_name(memory_type, version + 1)
        if es.indices.exists(index=target_index):
            raise ValidationFailed(f"{target_index} already exists (a failed earlier run?); delete it first")
        mapping = DOCUMENT_CLASS_BY_TYPE[memory_type]._doc_type.mapping.to_dict()
        es.indices.create(index=target_index, mappings=mapping, settings=index_settings(memory_type))
        es.indices.put_settings(index=source_index, settings={"index.blocks.write": True})
        try:
            total = es.count(index=source_index)["count"]
            copied = 0
            reembedded = {vector_field.name: 0 for vector_field in fields}
            batch: list[dict] = []

            def flush() -> None:
                nonlocal copied
                for field, provider, with_context in fields:
                    stale = [d for d in batch if reembed or d["_source"].get(f"{field}_model") != provider.model_id]
                    if stale:
                        sources = [d["_source"] for d in stale]
                        vectors = memory_vectors(provider, sources, with_context=with_context)
                        for doc, vector in zip(stale, vectors, strict=True):
                            doc["_source"][field] = vector
                            doc["_source"][f"{field}_model"] = provider.model_id
                        reembedded[field] += len(stale)
                for doc in batch:
                    for name in unused:
                        doc["_source"].pop(name, None)
                        doc["_source"].pop(f"{name}_model", None)
                for doc in batch:
                    # Indices made before byte vectors hold float arrays: same model, new stored form.
                    if isinstance(doc["_source"].get("embedding"), list):
                        doc["_source"]["embedding"] = stored_vector(doc["_source"]["embedding"])
                    _dates_backfill(doc["_source"])
                actions = [{"_index": target_index, "_id": d["_id"], "_source": d["_source"]} for d in batch]
                ok, errors = helpers.bulk(es, actions, raise_on_error=False, refresh="wait_for")
                if errors:
                    raise RuntimeError(f"{len(errors)} document(s) could not be copied: {errors[:2]}")
                copied += ok
                batch.clear()
                if progress:
                    progress(copied, total)

            for doc in helpers.scan(es, index=source_index, query={"query": {"match_all": {}}}, size=500):
                batch.append(doc)
                if len(batch) >= 200:
                    flush()
            flush()
            landed = es.count(index=target_index)["count"]
            if landed != total:
                raise RuntimeError(f"copied {landed} of {total} documents; the alias was not swapped")
            es.indices.update_aliases(
                actions=[
                    *({"remove": {"index": index, "alias": alias}} for index in sources),
                    {"add": {"index": target_index, "alias": alias, "is_write_index": True}},
                ]
            )
        except Exception:
            es.options(ignore_status=404).indices.delete(index=target_index)
            es.indices.put_settings(index=source_index, settings={"index.blocks.write": None})
            raise
        # Nothing reads the old indices any more, and kept they would hold every text forgetting deletes
        # from now on: they go.
        es.indices.delete(index=source_index)
    return ReindexReport(alias, source_index, target_index, copied, reembedded)
