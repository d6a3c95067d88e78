"""Index names: each memory index is a versioned concrete index behind a stable alias."""

from __future__ import annotations

from django.conf import settings

MEMORY_TYPES = ("episodic", "semantic", "procedural", "catalog", "archive")


def alias_name(memory_type: str) -> str:
    if memory_type not in MEMORY_TYPES:
        raise ValueError(f"unknown memory type {memory_type!r}")
    return f"{settings.ATLAS_ES_INDEX_PREFIX}-{memory_type}"


def versioned_name(memory_type: str, version: int) -> str:
    return f"{alias_name(memory_type)}-v{version}"


def first_index_name(memory_type: str, version: int) -> str:
    """The concrete index a new version starts with: ``<alias>-v<N>``, and for the archive the first
    generation ``<alias>-v<N>-000001`` — ILM rolls it over to ``-000002`` … (a name ending in a number)."""
    name = versioned_name(memory_type, version)
    return f"{name}-000001" if memory_type == "archive" else name


def archive_generation_pattern() -> str:
    """The archive's concrete indices, every version and generation (its index template's pattern)."""
    return f"{alias_name('archive')}-v*"


def generations_pattern(memory_types: tuple[str, ...] | list[str]) -> str:
    """Every concrete index of the types, whichever its alias points at: the current version, the
    archive's rollover generations, and any older version a reindex left behind."""
    return ",".join(f"{alias_name(t)}-v*" for t in memory_types)


def memory_type_of_index(index: str) -> str:
    """The memory type a concrete index (``<alias>-v<N>…``) holds."""
    for memory_type in MEMORY_TYPES:
        if index.startswith(f"{alias_name(memory_type)}-v"):
            return memory_type
    raise ValueError(f"{index} is not a versioned memory index")


def archive_policy_name() -> str:
    return f"{settings.ATLAS_ES_INDEX_PREFIX}-archive-policy"


def archive_keep_policy_name() -> str:
    return f"{settings.ATLAS_ES_INDEX_PREFIX}-archive-keep-policy"


def archive_template_name() -> str:
    return f"{settings.ATLAS_ES_INDEX_PREFIX}-archive-template"
