"""The levers of one recall and what it answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RecallOptions:
    """Levers of one recall; the defaults are the product's behaviour (ablations switch them off)."""

    bm25: bool = True
    dense: bool = True
    decay: bool = True
    use_boost: bool = True
    catalog_prior: bool = True
    outcome: bool = True
    # The multilingual dense leg, when ATLAS_MULTILINGUAL_EMBEDDING_MODEL names a model.
    multilingual: bool = True
    # The cross-lingual dense leg, when ATLAS_CROSSLINGUAL_EMBEDDING_MODEL names a model.
    crosslingual: bool = True
    rerank: bool | None = None  # None: the configured default


@dataclass
class RecallResult:
    hits: list[dict[str, Any]]
    timings_ms: dict[str, float] = field(default_factory=dict)
    targets: list[tuple[str, str]] = field(default_factory=list)  # (index, id) of facts/playbooks returned
    legs: list[str] = field(default_factory=list)  # the legs searched: bm25, dense, multilingual, crosslingual
    explain: dict[str, Any] | None = None  # with explain or expect: filters, fusion weights, expected memories
