"""The API's answers as dataclasses, one per schema component of ``memory/api/openapi.yaml``.

Each class names its component in ``__schema__``; a test checks that its fields are the component's
properties. What a memory carries beyond its component (a fact's ``fact_type`` and ``supersedes``, an
episode's ``role``, a playbook's ``steps`` …: the type's own fields) is kept in ``extra``; its scope
(``session_id``, ``agent_id``, ``app_id``, ``run_id``, ``metadata``) is declared.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, ClassVar, TypeVar, Union

#: Fields of the classes that are not properties of their component.
NOT_IN_SCHEMA = frozenset({"extra", "etag"})


@dataclass(kw_only=True)
class Answer:
    """What every answer class has beside its component's properties."""

    #: Members of the answer the class does not declare: a memory type's own fields (fact_type,
    #: confidence, supersedes, session_id, steps …), or what a newer server adds.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class Mention(Answer):
    """A date a memory's text names, resolved against the memory's own time (MentionOut); ``end`` inclusive."""

    __schema__: ClassVar[str] = "MentionOut"
    phrase: str
    start: date
    end: date
    granularity: str


@dataclass(kw_only=True)
class Memory(Answer):
    """A stored memory: an episode, fact, playbook or catalog entry (MemoryOut)."""

    __schema__: ClassVar[str] = "MemoryOut"
    id: str
    type: str
    text: str
    created_at: datetime
    external_id: str | None
    shared: bool
    subject: str | None = None
    authority: str | None = None
    written_by: str | None = None
    status: str | None = None
    review_state: str | None = None
    proposal_for: list[str] = field(default_factory=list)
    version: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None
    mentions: list[Mention] = field(default_factory=list)
    #: The ETag the answer carried (one memory read or edited): send it as ``if_match`` to edit safely.
    etag: str | None = None


@dataclass(kw_only=True)
class Writer(Answer):
    __schema__: ClassVar[str] = "WriterOut"
    kind: str
    name: str
    label: str


@dataclass(kw_only=True)
class CitedEpisode(Answer):
    __schema__: ClassVar[str] = "CitedEpisodeOut"
    id: str
    gone: bool
    timestamp: datetime | None = None
    text: str | None = None


@dataclass(kw_only=True)
class Run(Answer):
    __schema__: ClassVar[str] = "RunOut"
    id: str
    gone: bool
    status: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(kw_only=True)
class Provenance(Answer):
    """Where a memory came from: authority, writer, cited episodes, the consolidation run (ProvenanceOut)."""

    __schema__: ClassVar[str] = "ProvenanceOut"
    authority: str | None
    written_by: Writer | None
    episodes: list[CitedEpisode]
    run: Run | None


@dataclass(kw_only=True)
class MemoryDetail(Memory):
    """One memory with its provenance (MemoryDetailOut)."""

    __schema__: ClassVar[str] = "MemoryDetailOut"
    provenance: Provenance | None


@dataclass(kw_only=True)
class Evidence(Answer):
    __schema__: ClassVar[str] = "EvidenceOut"
    id: str
    timestamp: datetime
    text: str


@dataclass(kw_only=True)
class Hit(Memory):
    """A recalled memory, its rank and score; with ``explain``, why it ranked there (HitOut)."""

    __schema__: ClassVar[str] = "HitOut"
    score: float
    rank: int
    evidence: list[Evidence] = field(default_factory=list)
    evidence_count: int | None = None
    newer_than: str | None = None
    explain: dict[str, Any] | None = None


@dataclass(kw_only=True)
class Recall(Answer):
    """A recall's hits, best first (RecallOut); ``explain`` with explain or expect."""

    __schema__: ClassVar[str] = "RecallOut"
    hits: list[Hit]
    legs: list[str]
    took_ms: float
    explain: dict[str, Any] | None = None


@dataclass(kw_only=True)
class Turn(Answer):
    """The stored turn and what recall found for it (TurnOut)."""

    __schema__: ClassVar[str] = "TurnOut"
    episode: Memory
    recall: Recall

    @property
    def hits(self) -> list[Hit]:
        return self.recall.hits


@dataclass(kw_only=True)
class MemoryPage(Answer):
    __schema__: ClassVar[str] = "MemoryPageOut"
    memories: list[Memory]
    next_cursor: str | None


@dataclass(kw_only=True)
class Proposal(Memory):
    """A pending fact or playbook waiting for the person's review, beside what it replaces (ProposalOut)."""

    __schema__: ClassVar[str] = "ProposalOut"
    replaces: list[Memory] = field(default_factory=list)


@dataclass(kw_only=True)
class ProposalPage(Answer):
    __schema__: ClassVar[str] = "ProposalPageOut"
    proposals: list[Proposal]
    next_cursor: str | None


@dataclass(kw_only=True)
class ProposalRejected(Answer):
    __schema__: ClassVar[str] = "ProposalRejectedOut"
    id: str
    type: str
    status: str


@dataclass(kw_only=True)
class Chain(Answer):
    """A fact's versions, oldest first (ChainOut)."""

    __schema__: ClassVar[str] = "ChainOut"
    chain: list[Memory]


@dataclass(kw_only=True)
class StoreReceipt(Answer):
    __schema__: ClassVar[str] = "StoreReceiptOut"
    count: int
    ids: list[str]
    truncated: bool


@dataclass(kw_only=True)
class Receipt(Answer):
    """What forgetting removed, per store (ReceiptOut)."""

    __schema__: ClassVar[str] = "ReceiptOut"
    indices: dict[str, StoreReceipt]
    run_records: StoreReceipt
    idempotency_records: StoreReceipt
    query_embedding_cache: StoreReceipt
    turn_contexts: StoreReceipt | None = None


@dataclass(kw_only=True)
class Forgotten(Answer):
    __schema__: ClassVar[str] = "ForgottenOut"
    id: str
    type: str
    forgotten: bool
    receipt: Receipt
    orphaned: list[str]


@dataclass(kw_only=True)
class ForgottenAll(Answer):
    __schema__: ClassVar[str] = "ForgottenAllOut"
    forgotten: dict[str, int]
    receipt: Receipt
    ids: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class Subject(Answer):
    """A tenant's end user; ``id`` is the external id used in memory routes (SubjectOut)."""

    __schema__: ClassVar[str] = "SubjectOut"
    id: str
    display_name: str
    active: bool
    created_at: datetime


@dataclass(kw_only=True)
class SubjectPage(Answer):
    __schema__: ClassVar[str] = "SubjectPageOut"
    subjects: list[Subject]
    next_cursor: str | None


@dataclass(kw_only=True)
class UsageDay(Answer):
    """One UTC day of the tenant's usage (UsageDayOut); ``documents``/``bytes_stored`` None: not sampled."""

    __schema__: ClassVar[str] = "UsageDayOut"
    day: date
    writes: int
    recalls: int
    documents: int | None
    bytes_stored: int | None
    llm_prompt_tokens: int
    llm_completion_tokens: int
    llm_tokens: int
    llm_requests: int
    llm_cost: float


@dataclass(kw_only=True)
class Budgets(Answer):
    """The tenant's budgets and where it stands (BudgetOut); a None limit is no limit."""

    __schema__: ClassVar[str] = "BudgetOut"
    llm_token_budget: int | None
    llm_tokens_this_month: int
    llm_tokens_remaining: int | None
    resumes_on: date
    daily_write_quota: int | None
    writes_today: int


@dataclass(kw_only=True)
class Usage(Answer):
    """The tenant's usage per UTC day, oldest first, and its budgets (UsageOut)."""

    __schema__: ClassVar[str] = "UsageOut"
    tenant: str
    days: list[UsageDay]
    budgets: Budgets


@dataclass(kw_only=True)
class Me(Answer):
    """What this token is and may do (MeOut)."""

    __schema__: ClassVar[str] = "MeOut"
    tenant: str
    kind: str
    subject: str | None
    scopes: list[str]
    token: str
    name: str
    expires_at: datetime | None


@dataclass(kw_only=True)
class Webhook(Answer):
    """One of the tenant's webhook endpoints (WebhookOut); ``previous_secret_expires_at``: until then the
    secret before the last rotation signs beside the new one."""

    __schema__: ClassVar[str] = "WebhookOut"
    id: int
    url: str
    events: list[str]
    description: str
    enabled: bool
    disabled_reason: str | None
    failing_since: datetime | None
    previous_secret_expires_at: datetime | None
    created_at: datetime


@dataclass(kw_only=True)
class WebhookCreated(Webhook):
    """A webhook endpoint just made, with its signing secret: in this answer only (WebhookCreatedOut). The
    secret is kept out of the repr, so a log line or a traceback that shows the answer does not leak it."""

    __schema__: ClassVar[str] = "WebhookCreatedOut"
    secret: str = field(repr=False)


@dataclass(kw_only=True)
class WebhookList(Answer):
    __schema__: ClassVar[str] = "WebhookListOut"
    webhooks: list[Webhook]


@dataclass(kw_only=True)
class WebhookSecret(Answer):
    """A rotation's new signing secret, shown this once (kept out of the repr), and until when the previous
    one still signs beside it (WebhookSecretOut)."""

    __schema__: ClassVar[str] = "WebhookSecretOut"
    secret: str = field(repr=False)
    previous_secret_expires_at: datetime


@dataclass(kw_only=True)
class Delivery(Answer):
    """One delivery of an event to a webhook endpoint, from its log (DeliveryOut); ``data`` is the event's
    data as delivered."""

    __schema__: ClassVar[str] = "DeliveryOut"
    id: int
    event_id: str
    type: str
    subject: str | None
    status: str
    attempts: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_latency_ms: int | None
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None
    data: Any


@dataclass(kw_only=True)
class DeliveryPage(Answer):
    """A page of an endpoint's delivery log, newest first; ``next_before`` for the older ones (DeliveryPageOut)."""

    __schema__: ClassVar[str] = "DeliveryPageOut"
    deliveries: list[Delivery]
    next_before: int | None


@dataclass(kw_only=True)
class RecallOptions:
    """The options of a recall (RecallOptionsInRequest): for ``turn(recall=…)``; ``recall()`` takes them as
    keyword arguments. None leaves the server's default."""

    __schema__: ClassVar[str] = "RecallOptionsInRequest"
    k: int | None = None
    types: list[str] | None = None
    include_superseded: bool | None = None
    as_of: datetime | str | None = None
    known_at: datetime | str | None = None
    fact_type: str | None = None
    since: datetime | str | None = None
    until: datetime | str | None = None
    rerank: bool | None = None
    fold_evidence: bool | None = None
    explain: bool | None = None
    expect: list[str] | None = None
    min_score: float | None = None
    filters: dict[str, Any] | None = None

    def body(self) -> dict[str, Any]:
        return wire({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})


def wire(values: dict[str, Any]) -> dict[str, Any]:
    """A request body or query from keyword arguments: None left out (the server's default), times as ISO 8601."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, datetime | date):  # a day (usage_get's since/until) too
            value = value.isoformat()
        elif isinstance(value, RecallOptions):
            value = value.body()
        out[name] = value
    return out


A = TypeVar("A", bound=Answer)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def build(cls: type[A], data: dict[str, Any], *, etag: str | None = None) -> A:
    """``cls`` from an answer's JSON object: nested objects become their classes, times datetimes; members
    the class does not declare go to ``extra``."""
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)} - NOT_IN_SCHEMA
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in names:
            continue
        if f.name in data:
            values[f.name] = _value(hints[f.name], data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            values[f.name] = None
    extra = {k: v for k, v in data.items() if k not in names}
    if "etag" in {f.name for f in dataclasses.fields(cls)}:
        values["etag"] = etag
    return cls(**values, extra=extra)


def _value(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        hint = next((a for a in args if a is not type(None)), hint)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is datetime and isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    if hint is date and isinstance(value, str):
        return date.fromisoformat(value)
    if isinstance(hint, type) and issubclass(hint, Answer) and isinstance(value, dict):
        return build(hint, value)
    if origin is list and isinstance(value, list):
        return [_value(args[0], v) for v in value]
    if origin is dict and isinstance(value, dict):
        return {k: _value(args[1], v) for k, v in value.items()}
    return value
