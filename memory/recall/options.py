"""The levers of one recall and what it answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.scope import SubjectScope
    from memory.temporal import TimeRange


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
    # The relevance floor (memory.recall.floor, ATLAS_RECALL_FLOOR) and small talk's silence.
    floor: bool = True
    # The time leg: a question naming a time also searches the memories about that time (memory.recall.legs).
    time: bool = True
    # A newer, not yet consolidated turn placed next to the fact it may change (memory.recall.newer).
    newer: bool = True


@dataclass
class RecallResult:
    hits: list[dict[str, Any]]
    timings_ms: dict[str, float] = field(default_factory=dict)
    targets: list[tuple[str, str]] = field(default_factory=list)  # (index, id) of facts/playbooks returned
    legs: list[str] = field(default_factory=list)  # the legs searched: bm25, dense, multilingual, crosslingual
    explain: dict[str, Any] | None = None  # with explain or expect: filters, fusion weights, expected memories


@dataclass(frozen=True, kw_only=True)
class RecallRun:
    """One recall's question, filters and levers, validated: what every stage of the recall reads."""

    scope: SubjectScope
    text: str
    k: int
    types: tuple[str, ...]
    as_of: datetime | None  # valid time: what held then
    known_at: datetime | None  # recorded time: what we had been told by then
    include_superseded: bool
    fact_type: str | None
    since: Any
    until: Any
    narrowing: list[dict[str, Any]]  # the fact_type/since/until and scope filters every leg applies
    options: RecallOptions
    question_reads_english: bool
    expected: list[str]  # ids or external ids ``expect`` asked about
    explain: bool
    fold_evidence: bool
    min_score: float | None  # the request's own floor on the returned score, instead of the relevance floor
    turn_kind: str  # memory.recall.turn_kind
    origin: datetime  # the instant ages are taken from: as_of, or the moment recall started
    # The time the question names (memory.temporal.question_range, read at ``origin``), or None.
    asked_time: TimeRange | None = None

    @property
    def historic(self) -> bool:
        """Whether the run looks at another time than now (``as_of`` or ``known_at``)."""
        return self.as_of is not None or self.known_at is not None

    @property
    def traced(self) -> bool:
        """Whether the run keeps a trace: ``explain`` or ``expect`` asks why."""
        return self.explain or bool(self.expected)

    scoped_by: list[str] = field(default_factory=list)  # the fields scope filters name (memory/scoping.py)

    def filters(self) -> dict[str, Any]:
        """The filters every leg applies, as :func:`memory.recall.explain.filters_described` names them."""
        return {
            "types": self.types,
            "include_superseded": self.include_superseded,
            "as_of": self.as_of,
            "known_at": self.known_at,
            "fact_type": self.fact_type,
            "since": self.since,
            "until": self.until,
            "scoped_by": self.scoped_by,
        }
