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


def all_indices_pattern() -> str:
    """The pattern roles grant on: every alias and versioned index of this deployment."""
    return f"{settings.ATLAS_ES_INDEX_PREFIX}-*"


def archive_policy_name() -> str:
    return f"{settings.ATLAS_ES_INDEX_PREFIX}-archive-policy"
