"""Recall: one hybrid search over a subject's memories and the tenant catalog (STRUCTURE.md: legs,
fusion, the query-embedding pool, and the orchestrator)."""

from .fusion import Leg, fuse
from .options import RecallOptions, RecallResult
from .recall import RECALL_TYPES, memory_recall

__all__ = ["RECALL_TYPES", "Leg", "RecallOptions", "RecallResult", "fuse", "memory_recall"]
