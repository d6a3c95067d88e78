"""Request and response shapes of the memory API: what each route accepts (and nothing else).

They describe and type-check; the services own the rules (lengths, ranges, what may supersede
what), so a rule lives in one place whichever interface a caller comes through.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from atlas_site.serializers import Choice, Strict
from memory.authority import AUTHORITIES
from memory.elastic.indices import MEMORY_TYPES
from memory.scoping import MAX_METADATA_KEYS, MAX_METADATA_STRING, METADATA_KEY
from memory.validation import memory_types_refusal

MEMORY_STATUS_CHOICES = ("current", "pending", "superseded")
RECALL_TYPE_CHOICES = ("episodic", "semantic", "procedural", "catalog")
LIST_TYPE_CHOICES = tuple(MEMORY_TYPES)
FACT_TYPE_CHOICES = ("preference", "identity", "constraint", "world")
CONTRADICTION_CHOICES = ("natural", "harsh")
CONTRADICTION_HELP = "natural: the world changed; harsh: the old fact was wrong (retracted)."
EXTERNAL_ID_HELP = (
    "Your own id for this subject's memory: re-sending it overwrites that memory; the same id sent for "
    "another subject is a separate memory of that subject."
)


@extend_schema_field(
    {
        "type": "object",
        "maxProperties": MAX_METADATA_KEYS,
        "additionalProperties": {
            "oneOf": [
                {"type": "string", "maxLength": MAX_METADATA_STRING},
                {"type": "number"},
                {"type": "boolean"},
            ]
        },
        "description": f"Your own keys (matching ^{METADATA_KEY.pattern}$) and values: strings (an ISO 8601 date is a date too), numbers, "
        "booleans. Filter on them with `metadata.<key>` (docs/scoping.md).",
        "example": {"project": "apollo", "priority": 2},
    }
)
class MetadataField(serializers.DictField):
    """A memory's metadata: checked by the write path (memory/scoping.py), one rule for every interface."""


@extend_schema_field(
    {
        "type": "object",
        "description": "Only memories of a scope: field (agent_id, app_id, run_id, session_id, metadata.<key>) to a "
        'value, or to one operator: {"in": [...]}, {"gte"|"gt"|"lte"|"lt": number or date}, {"exists": bool}; '
        '"not": {...} excludes. The tenant catalog has no scope and is left out (docs/scoping.md).',
        "example": {"agent_id": "planner", "metadata.priority": {"gte": 2}},
    }
)
class FiltersField(serializers.DictField):
    """Scope filters, parsed and checked by memory.scoping.filters_parse (a clear 400 for each mistake)."""


class ScopeIn(Strict):
    """What scopes a memory within its subject (docs/scoping.md)."""

    agent_id = serializers.CharField(required=False, help_text="The agent that wrote it.")
    app_id = serializers.CharField(required=False, help_text="The application it was written from.")
    run_id = serializers.CharField(required=False, help_text="The run (task, job, workflow) it belongs to.")
    metadata = MetadataField(required=False)


class EpisodeIn(ScopeIn):
    text = serializers.CharField(help_text="What the user said (one turn).", trim_whitespace=False)
    session_id = serializers.CharField(required=False, help_text="Conversation the turn belongs to.")
    role = serializers.ChoiceField(choices=["user"], required=False, help_text="Only user turns are stored.")
    event_type = serializers.CharField(required=False, help_text="Default 'message'.")
    timestamp = serializers.DateTimeField(
        required=False, help_text="When it was said (default: now); every answer and the export name it so."
    )
    at = serializers.DateTimeField(
        required=False, help_text="Deprecated: the old name of `timestamp` (answered with a Deprecation header)."
    )
    external_id = serializers.CharField(required=False, help_text=EXTERNAL_ID_HELP)


class MemoryTypesField(serializers.ListField):
    """A list of memory types whose refusal names the valid ones and what a wrong name likely meant."""

    def to_internal_value(self, data: Any) -> list[Any]:
        if isinstance(data, list) and (refusal := memory_types_refusal(data, allowed=self.child.choices)):
            raise serializers.ValidationError(refusal)
        return super().to_internal_value(data)


class RecallOptionsIn(Strict):
    k = serializers.IntegerField(required=False, min_value=1, max_value=50, help_text="How many hits (default 10).")
    types = MemoryTypesField(
        child=serializers.ChoiceField(choices=RECALL_TYPE_CHOICES),
        required=False,
        allow_empty=False,
        help_text="Only these memory types (the field every memory names as `type`); default all.",
    )
    memory_types = MemoryTypesField(
        child=serializers.ChoiceField(choices=RECALL_TYPE_CHOICES),
        required=False,
        allow_empty=False,
        help_text="Deprecated: the old name of `types` (answered with a Deprecation header).",
    )
    include_superseded = serializers.BooleanField(required=False)
    as_of = serializers.DateTimeField(
        required=False,
        help_text="Valid time: recall what held at this time (a fact from its valid_from until its valid_to or "
        "its replacement), as known now.",
    )
    known_at = serializers.DateTimeField(
        required=False, help_text="Recorded time: recall what had been recorded by this time (what we knew then)."
    )
    fact_type = Choice(
        choices=FACT_TYPE_CHOICES,
        required=False,
        help_text="Only facts of this type (no episodes, playbooks or catalog entries); types, if given, "
        "must include semantic.",
    )
    since = serializers.DateTimeField(required=False, help_text="Only memories stored at or after this time.")
    until = serializers.DateTimeField(required=False, help_text="Only memories stored before this time.")
    rerank = serializers.BooleanField(required=False, help_text="Use the configured reranker (default: settings).")
    fold_evidence = serializers.BooleanField(
        required=False,
        help_text="A current fact carries the episodes it cites as `evidence`, and those episodes take no slot "
        "of their own (default true).",
    )
    explain = serializers.BooleanField(
        required=False,
        help_text="Each hit says why it ranked there: each leg's rank, raw score and contribution, the fused "
        "score, the ranking multipliers (decay, use, catalog prior, outcome) and what was folded under it.",
    )
    expect = serializers.ListField(
        child=serializers.CharField(max_length=128),
        required=False,
        max_length=20,
        help_text="Ids (or external ids) of memories you expected: for each, where it stood in each leg and what "
        "removed it (filter, fold, floor, rank, not found).",
    )
    min_score = serializers.FloatField(
        required=False,
        help_text="Return only hits whose `score` is at least this, instead of the relevance floor (by default "
        "recall returns fewer than k hits, or none, when fewer fit: below the floor or small talk).",
    )
    filters = FiltersField(required=False)


class RecallIn(RecallOptionsIn):
    query = serializers.CharField(help_text="The question or the user's latest message.")


class TurnIn(EpisodeIn):
    recall = RecallOptionsIn(required=False, help_text="Options of the recall run for this turn.")


class FactIn(ScopeIn):
    text = serializers.CharField()
    fact_type = Choice(choices=FACT_TYPE_CHOICES, required=False, help_text="Default 'world'.")
    confidence = serializers.FloatField(required=False, min_value=0, max_value=1)
    source_episodes = serializers.ListField(child=serializers.CharField(), required=False)
    valid_from = serializers.DateTimeField(required=False)
    valid_to = serializers.DateTimeField(required=False)
    supersedes = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Ids of older facts this one replaces."
    )
    contradiction = Choice(
        choices=CONTRADICTION_CHOICES,
        required=False,
        help_text=CONTRADICTION_HELP,
    )
    external_id = serializers.CharField(required=False, help_text=EXTERNAL_ID_HELP)


class FactEditIn(Strict):
    text = serializers.CharField(help_text="The corrected fact; the old version stays in the chain.")
    fact_type = Choice(choices=FACT_TYPE_CHOICES, required=False, help_text="Default: unchanged.")
    confidence = serializers.FloatField(required=False, min_value=0, max_value=1)
    contradiction = Choice(
        choices=CONTRADICTION_CHOICES, required=False, help_text=CONTRADICTION_HELP + " Default natural."
    )
    source_episodes = serializers.ListField(
        child=serializers.CharField(max_length=128),
        required=False,
        max_length=50,
        help_text="The turns that say the corrected version (e.g. the user's correction). A natural change keeps "
        "the old version's evidence and adds these; a harsh one has these alone.",
    )


class StepIn(Strict):
    order = serializers.IntegerField(required=False, min_value=1)
    instruction = serializers.CharField()
    tool = serializers.CharField(required=False)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "minLength": 1, "description": "The instruction alone."},
            {
                "type": "object",
                "description": "The instruction with the tool to use and its place in the order.",
                "properties": {
                    "order": {"type": "integer", "minimum": 1},
                    "instruction": {"type": "string", "minLength": 1},
                    "tool": {"type": "string", "minLength": 1},
                },
                "required": ["instruction"],
                "additionalProperties": False,
            },
        ]
    }
)
class StepField(serializers.Field):
    """A step as import and MCP take it: the instruction alone (a string), or an object with it."""

    default_error_messages = {"invalid": "a step is a string (the instruction) or an object with an instruction"}

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, str):
            data = {"instruction": data}
        if not isinstance(data, dict):
            self.fail("invalid")
        step = StepIn(data=data)
        step.is_valid(raise_exception=True)
        return step.given()

    def to_representation(self, value: Any) -> Any:
        return value


def steps_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(child=StepField(), allow_empty=False, **kwargs)


class PlaybookIn(ScopeIn):
    name = serializers.CharField()
    trigger_text = serializers.CharField(help_text="When to use it, in the words a user would say.")
    description = serializers.CharField(required=False)
    steps = steps_field(help_text="In order: each the instruction alone, or {instruction, tool, order}.")
    external_id = serializers.CharField(required=False, help_text=EXTERNAL_ID_HELP)


class OutcomeIn(Strict):
    success = serializers.BooleanField()
    refined_steps = steps_field(required=False, help_text="Replace the steps (version + 1), as a playbook's.")


class ForgetAllIn(Strict):
    confirm = serializers.CharField(help_text="The subject's id again: forgetting cannot be undone.")
    filters = FiltersField(
        required=False, help_text="Forget only the memories these scope filters match (docs/scoping.md)."
    )


class CatalogIn(Strict):
    title = serializers.CharField()
    text = serializers.CharField()
    category = serializers.CharField(required=False)
    tags = serializers.ListField(child=serializers.CharField(), required=False)
    external_id = serializers.CharField(
        required=False, help_text="Your own id for the entry: re-sending it overwrites the entry."
    )


class CatalogEditIn(Strict):
    title = serializers.CharField(required=False)
    text = serializers.CharField(required=False)
    category = serializers.CharField(required=False)
    tags = serializers.ListField(child=serializers.CharField(), required=False)


class MentionOut(serializers.Serializer):
    phrase = serializers.CharField(help_text="The words that name the date, as written.")
    start = serializers.DateField(help_text="The first day it covers.")
    end = serializers.DateField(help_text="The last day it covers (inclusive).")
    granularity = serializers.ChoiceField(choices=["day", "week", "month", "season", "year"])


class MemoryOut(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.ChoiceField(choices=LIST_TYPE_CHOICES)
    text = serializers.CharField()
    created_at = serializers.DateTimeField()
    external_id = serializers.CharField(allow_null=True)
    shared = serializers.BooleanField(help_text="A tenant catalog entry, not the subject's own memory.")
    subject = serializers.CharField(
        required=False, help_text="The subject's own id, as in the path (not on catalog entries)."
    )
    authority = serializers.ChoiceField(
        choices=list(AUTHORITIES),
        required=False,
        help_text="Facts and playbooks: who it speaks for — person (written or corrected by the person), agent "
        "(REST or MCP), consolidation (the nightly job), import or operator. Stamped by the service.",
    )
    written_by = serializers.CharField(
        required=False,
        help_text="Facts and playbooks: token:<name>, person:<id>, run:<id>, operator:<id>, import:<actor>.",
    )
    status = serializers.ChoiceField(
        choices=MEMORY_STATUS_CHOICES,
        required=False,
        help_text="Facts and playbooks: pending while it waits for the person's review (never recalled).",
    )
    review_state = serializers.CharField(required=False, help_text="pending while waiting for review; absent after.")
    proposal_for = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="A pending replacement: the facts (or the playbook) it replaces once accepted.",
    )
    version = serializers.CharField(
        required=False,
        help_text="Pending proposals: the version to name when you accept or reject it (a change since is a 409).",
    )
    session_id = serializers.CharField(required=False, help_text="Episodes: the conversation it belongs to.")
    agent_id = serializers.CharField(required=False, help_text="The agent that wrote it (absent: none named).")
    app_id = serializers.CharField(required=False, help_text="The application it was written from.")
    run_id = serializers.CharField(required=False, help_text="The run it belongs to.")
    metadata = MetadataField(required=False, help_text="The writer's own metadata, as written.")
    mentions = MentionOut(
        many=True,
        required=False,
        help_text="Episodes and facts: the dates the text names, resolved against the memory's own time "
        '("last month" in a turn of 18 March is 1-28 February). Absent when it names none.',
    )


class WriterOut(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["token", "person", "run", "operator", "import", "unknown"])
    name = serializers.CharField(
        help_text="The token's name, the person's id, the run's id, the operator, the importer."
    )
    label = serializers.CharField(help_text="The writer in words, for a person reading it.")


class CitedEpisodeOut(serializers.Serializer):
    id = serializers.CharField()
    gone = serializers.BooleanField(help_text="Forgotten since: only its id is left.")
    timestamp = serializers.DateTimeField(required=False)
    text = serializers.CharField(required=False, help_text="The episode's text, cut to 200 characters.")


class RunOut(serializers.Serializer):
    id = serializers.CharField()
    gone = serializers.BooleanField(help_text="The run's record was deleted since.")
    status = serializers.CharField(required=False)
    started_at = serializers.DateTimeField(required=False)
    finished_at = serializers.DateTimeField(required=False, allow_null=True)


class ProvenanceOut(serializers.Serializer):
    """Where a memory came from (only in the answer about one memory: lists stay small)."""

    authority = serializers.ChoiceField(
        choices=["person", "agent", "consolidation", "import", "operator"],
        allow_null=True,
        help_text="Null on memories stored before authority was recorded.",
    )
    written_by = WriterOut(allow_null=True)
    episodes = CitedEpisodeOut(many=True, help_text="The episodes it cites, in its order.")
    run = RunOut(allow_null=True, help_text="The consolidation run that wrote it, if one did.")


class MemoryDetailOut(MemoryOut):
    provenance = ProvenanceOut(allow_null=True, help_text="Null for a catalog entry (the tenant's shared data).")


class EvidenceOut(serializers.Serializer):
    id = serializers.CharField()
    timestamp = serializers.DateTimeField()
    text = serializers.CharField(help_text="The episode's text, cut to 200 characters.")


class HitOut(MemoryOut):
    score = serializers.FloatField()
    rank = serializers.IntegerField()
    evidence = EvidenceOut(
        many=True, required=False, help_text="The episodes this fact cites, newest first (at most 5); folded in."
    )
    evidence_count = serializers.IntegerField(required=False, help_text="How many episodes it cites in all.")
    newer_than = serializers.CharField(
        required=False,
        help_text="A turn said after the fact just above it was stored, that no fact states yet: it may change "
        "that fact (its id). Consolidation decides at night; until then the agent sees both.",
    )
    explain = serializers.DictField(required=False, help_text="With explain: why this hit ranked here.")


class RecallOut(serializers.Serializer):
    hits = HitOut(many=True)
    legs = serializers.ListField(
        child=serializers.CharField(),
        help_text="The legs that judged this recall's memories (bm25, dense, multilingual, crosslingual).",
    )
    took_ms = serializers.FloatField()
    explain = serializers.DictField(
        required=False,
        help_text="With explain or expect: the filters every leg applied, the fusion's weights, the kind of turn "
        "(turn_kind), bm25_leg when the BM25 leg scored the other legs' candidates instead of searching, and "
        "with expect one entry per expected memory.",
    )


class TurnOut(serializers.Serializer):
    episode = MemoryOut()
    recall = RecallOut()


class MemoryPageOut(serializers.Serializer):
    memories = MemoryOut(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="Pass as ?cursor= for the next page.")


class ChainOut(serializers.Serializer):
    chain = MemoryOut(many=True, help_text="Oldest first, across the hot index and the archive.")


class StoreReceiptOut(serializers.Serializer):
    count = serializers.IntegerField(help_text="How many were removed from this store.")
    ids = serializers.ListField(
        child=serializers.CharField(), help_text="Their ids (at most 1,000; cache entries are never listed)."
    )
    truncated = serializers.BooleanField(help_text="True when there were more ids than listed.")


class ReceiptOut(serializers.Serializer):
    """What forgetting removed, per store: every copy of the text, wherever it was kept."""

    indices = serializers.DictField(
        child=StoreReceiptOut(), help_text="Per memory type: documents deleted (every index generation)."
    )
    run_records = StoreReceiptOut(help_text="Consolidation run records deleted, or scrubbed of the memory's text.")
    idempotency_records = StoreReceiptOut(help_text="Stored POST answers (Idempotency-Key replays) dropped.")
    query_embedding_cache = StoreReceiptOut(help_text="Query-embedding cache entries cleared (this process).")
    turn_contexts = StoreReceiptOut(
        required=False,
        help_text="A forgotten turn: the later turns of its session that carried its text as their context, "
        "rewritten (and re-embedded) without it.",
    )


class ForgottenOut(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField()
    forgotten = serializers.BooleanField()
    receipt = ReceiptOut()
    orphaned = serializers.ListField(
        child=serializers.CharField(),
        help_text="Facts and playbooks this episode was the last remaining evidence of: they stay, citing nothing.",
    )


class ForgottenAllOut(serializers.Serializer):
    forgotten = serializers.DictField(child=serializers.IntegerField(), help_text="Deleted memories per type.")
    receipt = ReceiptOut()
    ids = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="With filters: the ids of the memories forgotten."
    )


class ProposalOut(MemoryOut):
    replaces = MemoryOut(
        many=True, required=False, help_text="The current facts this proposal replaces once accepted (old beside new)."
    )


class ProposalPageOut(serializers.Serializer):
    proposals = ProposalOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class ProposalDecideIn(Strict):
    version = serializers.CharField(
        required=False,
        help_text="The proposal's version you reviewed (its 'version' in the list; or send it as If-Match): "
        "one of the two is required, and a proposal changed since is a 409 showing what it says now.",
    )


class ProposalAcceptIn(ProposalDecideIn):
    text = serializers.CharField(
        required=False, help_text="A proposed fact's text as you corrected it (accepted as yours); default unchanged."
    )


class ProposalRejectedOut(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField()
    status = serializers.CharField(help_text="rejected")
