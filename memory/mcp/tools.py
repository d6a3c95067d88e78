"""The MCP tools: a JSON schema, a description an LLM can act on, the scope it needs, and a thin handler.

Each call (memory.mcp.calls): validate the arguments against the tool's schema → check the token's scope
→ resolve the subject (``TokenPrincipal.subject_for``) → call ONE memory service or selector → shape its answer.
Every ``AtlasError`` (and an Elasticsearch outage, as ``DependencyUnavailable``) becomes an MCP tool
error result (``isError: true``) naming its code, message and field, so the model can correct itself;
nothing else about the failure (no traceback) leaves the server. A missing scope is such a tool error
too, not an HTTP 403: one connection may hold a read-only token and still use the read tools.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from atlas_site.errors import NotFound, ValidationFailed
from memory import recall_constants as rc
from memory.authority import AUTHORITIES, by_token, token_principal
from memory.consolidation.run import consolidation_runs_settle
from memory.provenance import memory_provenance
from memory.recall import memory_recall
from memory.selectors import memory_chain_get, memory_hit, memory_list, memory_shape, proposals_list
from memory.services.forget import memory_forget, scoped_memories_forget
from memory.services.review import proposal_accept, proposal_reject
from memory.services.writes import episode_write, fact_edit, fact_write, playbook_outcome_record, playbook_write
from memory.tasks import recall_usage_schedule
from memory.validation import (
    CONTRADICTIONS,
    MAX_LINKS,
    MAX_SHORT_CHARS,
    MAX_TEXT_CHARS,
)
from tenants.models import MemorySubject
from tenants.tokens import TokenPrincipal

from .schema_parts import (
    FACT_TYPE,
    FILTERS,
    MEMORY_ID,
    PAGE,
    SCOPE,
    STEPS,
    TIMESTAMP,
    TYPES,
    schema_of,
)

log = logging.getLogger(__name__)


# --- handlers: one service or selector each ----------------------------------------------------------


def _shaped(memory: dict[str, Any]) -> dict[str, Any]:
    """The caller's view of a memory, without internal ids (the owner's cluster ids)."""
    return {k: v for k, v in memory.items() if k != "user_id"}


def _stored_shaped(stored: dict[str, Any]) -> dict[str, Any]:
    return _shaped(memory_shape({"_id": stored["id"], "_source": stored}))


def recall_memory(
    *,
    subject: MemorySubject,
    principal: TokenPrincipal,
    query: str,
    k: int = 10,
    types: list[str] | None = None,
    include_superseded: bool = False,
    as_of: str | None = None,
    known_at: str | None = None,
    fact_type: str | None = None,
    since: str | None = None,
    until: str | None = None,
    fold_evidence: bool = True,
    explain: bool = False,
    expect: list[str] | None = None,
    min_score: float | None = None,
    filters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    result = memory_recall(
        subject=subject,
        query=query,
        k=k,
        memory_types=types,
        include_superseded=include_superseded,
        as_of=as_of,
        known_at=known_at,
        fact_type=fact_type,
        since=since,
        until=until,
        fold_evidence=fold_evidence,
        explain=explain,
        expect=expect,
        min_score=min_score,
        filters=filters,
    )
    recall_usage_schedule(subject=subject, targets=result.targets, agent_use=True)
    hits = [_shaped(hit) for hit in result.hits]
    # "hits", as REST's recall names them; "memories" is the old name, answered too until it goes
    # (docs/vocabulary.md).
    answer: dict[str, Any] = {"hits": hits, "memories": hits}
    if result.explain is not None:
        answer["explain"] = result.explain
    return answer


REMEMBER_FIELDS = {
    "episodic": ({"text"}, {"session_id", "timestamp", *SCOPE}),
    "semantic": ({"text"}, {"fact_type", "confidence", "source_episodes", "valid_from", "valid_to", *SCOPE}),
    "procedural": ({"name", "trigger_text", "steps"}, {"description", "text", *SCOPE}),
}
#: The old ``kind`` of remember (until 2026-12-31, docs/vocabulary.md) and the ``type`` each means.
TYPE_OF_KIND = {"episode": "episodic", "fact": "semantic", "playbook": "procedural"}
_A = {"episodic": "an episode", "semantic": "a fact", "procedural": "a playbook"}


def _remembered_type(memory_type: str | None, kind: str | None) -> str:
    """The type to remember: ``type``, or what the old ``kind`` means; both must agree."""
    from_kind = TYPE_OF_KIND.get(kind) if kind is not None else None
    if memory_type is not None and from_kind is not None and memory_type != from_kind:
        raise ValidationFailed(
            f"kind is the old name of type, and kind={kind} means type={from_kind}, not {memory_type}: give type only",
            field="kind",
        )
    chosen = memory_type or from_kind
    if chosen is None:
        raise ValidationFailed(
            "remember needs type: episodic (a user turn), semantic (a fact) or procedural (a playbook)", field="type"
        )
    return chosen


def remember(*, subject: MemorySubject, principal: TokenPrincipal, **fields: Any) -> dict[str, Any]:
    memory_type = _remembered_type(fields.pop("type", None), fields.pop("kind", None))
    if "at" in fields:  # the old name of an episode's timestamp
        if "timestamp" in fields:
            raise ValidationFailed("at is the old name of timestamp: give timestamp only", field="at")
        fields["timestamp"] = fields.pop("at")
    required, optional = REMEMBER_FIELDS[memory_type]
    for name in sorted(set(fields) - required - optional):
        allowed = ", ".join(sorted(required | optional))
        a = _A[memory_type]
        raise ValidationFailed(f"{name} does not apply to {a} ({a} takes {allowed})", field=name)
    for name in sorted(required - set(fields)):
        raise ValidationFailed(f"{_A[memory_type]} needs {name}", field=name)
    if memory_type == "episodic":
        fields["at"] = fields.pop("timestamp", None)
        return _stored_shaped(episode_write(subject=subject, **fields))
    if memory_type == "semantic":
        return _stored_shaped(fact_write(subject=subject, **by_token(principal), **fields))
    return _stored_shaped(playbook_write(subject=subject, **by_token(principal), **fields))


def update_fact(
    *,
    subject: MemorySubject,
    principal: TokenPrincipal,
    memory_id: str,
    text: str,
    fact_type: str | None = None,
    contradiction: str = "natural",
    source_episodes: list[str] | None = None,
) -> dict[str, Any]:
    new = fact_edit(
        subject=subject,
        memory_id=memory_id,
        text=text,
        fact_type=fact_type,
        contradiction=contradiction,
        source_episodes=source_episodes,
        **by_token(principal),
    )
    return _stored_shaped(new)


def forget_memory(
    *,
    subject: MemorySubject,
    principal: TokenPrincipal,
    memory_id: str | None = None,
    filters: dict[str, Any] | None = None,
    confirm: str | None = None,
) -> dict[str, Any]:
    """Idempotent, as its annotation says: forgetting what is already gone is not an error. The answer
    is the same for a memory never this user's, so it tells nothing about other subjects. ``filters``
    forgets what they match instead, confirmed by repeating the subject's id (as REST's forget-all)."""
    if (memory_id is None) == (filters is None):
        raise ValidationFailed("give memory_id (one memory) or filters (what they match), not both", field="memory_id")
    if filters is not None:
        if confirm != subject.external_id:
            raise ValidationFailed(
                f"confirm must repeat the user's id ({subject.external_id}): forgetting cannot be undone",
                field="confirm",
            )
        result = scoped_memories_forget(subject=subject, filters=filters, actor=f"mcp:{principal.token.prefix}")
        return {"forgotten": result["counts"], "ids": result["ids"], "receipt": result["receipt"]}
    try:
        return memory_forget(subject=subject, memory_id=memory_id, actor=f"mcp:{principal.token.prefix}")
    except NotFound:
        detail = "no memory with this id: already forgotten, or never one of this user's"
        return {"id": memory_id, "forgotten": False, "detail": detail}


def list_memories(
    *,
    subject: MemorySubject,
    principal: TokenPrincipal,
    types: list[str] | None = None,
    fact_type: str | None = None,
    session_id: str | None = None,
    include_superseded: bool = False,
    authority: str | None = None,
    page_size: int = 20,
    cursor: str | None = None,
    filters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    page = memory_list(
        subject=subject,
        memory_types=types,
        include_superseded=include_superseded,
        fact_type=fact_type,
        session_id=session_id,
        authority=authority,
        page_size=page_size,
        cursor=cursor,
        filters=filters,
    )
    return {"memories": [_shaped(m) for m in page["memories"]], "next_cursor": page["next_cursor"]}


def memory_chain(*, subject: MemorySubject, principal: TokenPrincipal, memory_id: str) -> dict[str, Any]:
    return {"chain": [_shaped(m) for m in memory_chain_get(subject=subject, memory_id=memory_id)]}


def memory_provenance_tool(*, subject: MemorySubject, principal: TokenPrincipal, memory_id: str) -> dict[str, Any]:
    hit = memory_hit(subject=subject, memory_id=memory_id)
    provenance = memory_provenance(subject=subject, hit=hit)
    if provenance is None:  # a catalog entry: the tenant's, not one of the user's memories
        raise NotFound(f"no memory {memory_id} of this user (catalog entries are the tenant's)", field="memory_id")
    return {"memory": _shaped(memory_shape(hit)), "provenance": provenance}


def record_outcome(
    *,
    subject: MemorySubject,
    principal: TokenPrincipal,
    playbook_id: str,
    success: bool,
    refined_steps: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    updated = playbook_outcome_record(
        subject=subject, playbook_id=playbook_id, success=success, refined_steps=refined_steps, **by_token(principal)
    )
    return _stored_shaped(updated)


def list_proposals(
    *,
    subject: MemorySubject,
    principal: TokenPrincipal,
    written_by: str | None = None,
    page_size: int = 20,
    cursor: str | None = None,
) -> dict[str, Any]:
    page = proposals_list(subject=subject, written_by=written_by, page_size=page_size, cursor=cursor)
    proposals = [{**_shaped(p), "replaces": [_shaped(r) for r in p["replaces"]]} for p in page["proposals"]]
    return {"proposals": proposals, "next_cursor": page["next_cursor"]}


def review_proposal(
    *,
    subject: MemorySubject,
    principal: TokenPrincipal,
    proposal_id: str,
    decision: str,
    version: str,
    text: str | None = None,
) -> dict[str, Any]:
    actor = f"mcp:{principal.token.prefix}"
    reviewer = token_principal(principal)
    if decision == "reject":
        if text is not None:
            raise ValidationFailed("text applies to accept only (a corrected text to accept)", field="text")
        rejected = proposal_reject(
            subject=subject, proposal_id=proposal_id, actor=actor, reviewer=reviewer, version=version
        )
        consolidation_runs_settle(subject=subject, run_ids=rejected.runs_complete, actor=actor)
        return rejected.shown
    accepted = proposal_accept(
        subject=subject, proposal_id=proposal_id, text=text, actor=actor, reviewer=reviewer, version=version
    )
    consolidation_runs_settle(subject=subject, run_ids=accepted.runs_complete, actor=actor)
    return _stored_shaped(accepted.shown)


# --- the tool table ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    scope: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[..., dict[str, Any]]
    annotations: types.ToolAnnotations

    @property
    def tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema,
            annotations=self.annotations,
        )


_READ = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="recall_memory",
        title="Recall memory",
        scope="read",
        description=(
            "Search what is remembered about the user — their past conversation turns (episodic), durable "
            "facts (semantic) and playbooks (procedural) — and the organisation's shared catalog, in one "
            "hybrid keyword + meaning search. Call it before answering whenever earlier conversations, the "
            "user's preferences or constraints, or a known procedure could matter. Returns up to k memories as "
            "hits (also under memories, their old name, until 2026-12-31), best first: id, type, text, rank, "
            "score and each type's own fields (fact_type and confidence of a fact, steps and outcome_score of a playbook, title of a catalog entry). Facts replaced by "
            "newer versions are hidden unless include_superseded is true. A fact lists the conversation turns "
            "it was learnt from as evidence (newest first), and those turns take no place of their own. To "
            "narrow the search, fact_type returns only facts of that type, and since/until only memories "
            "stored in that period."
        ),
        input_schema=schema_of(
            {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": rc.MAX_QUERY_CHARS,
                    "description": "What to look for, in natural language or exact terms (codes, names).",
                },
                "k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": rc.MAX_K,
                    "default": 10,
                    "description": "How many memories to return.",
                },
                "types": TYPES,
                "include_superseded": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also return facts that newer versions replaced (history).",
                },
                "as_of": {
                    **TIMESTAMP,
                    "description": "Valid time: recall what held at this ISO 8601 date-time, as known now.",
                },
                "known_at": {
                    **TIMESTAMP,
                    "description": "Recorded time: recall what had been recorded by this ISO 8601 date-time.",
                },
                "fact_type": {**FACT_TYPE, "description": "Only facts of this type (no episodes or playbooks)."},
                "since": {**TIMESTAMP, "description": "Only memories stored at or after this ISO 8601 date-time."},
                "until": {**TIMESTAMP, "description": "Only memories stored before this ISO 8601 date-time."},
                "fold_evidence": {
                    "type": "boolean",
                    "default": True,
                    "description": "Fold the turns a returned fact was learnt from under it as its evidence.",
                },
                "explain": {
                    "type": "boolean",
                    "default": False,
                    "description": "Say for each memory why it ranked there (legs, fusion, multipliers, folds).",
                },
                "expect": {
                    "type": "array",
                    "items": MEMORY_ID,
                    "maxItems": 20,
                    "description": "Ids of memories you expected: where each stood and what kept it out.",
                },
                "min_score": {
                    "type": "number",
                    "description": "Only memories scoring at least this, instead of the relevance floor (by default "
                    "fewer than k come back, or none, when fewer fit).",
                },
                "filters": FILTERS,
            },
            ["query"],
        ),
        handler=recall_memory,
        annotations=_READ,
    ),
    ToolSpec(
        name="remember",
        title="Remember",
        scope="write",
        description=(
            "Store a new memory for the user. type=episodic: what the user just said, one turn in their own "
            "words (text; session_id groups a conversation) — call it for every user turn worth keeping. "
            "type=semantic: a durable fact about the user (text, fact_type, confidence 0–1). "
            "type=procedural: a playbook, a reusable procedure (name, trigger_text saying when it applies, "
            "ordered steps). (kind=episode|fact|playbook is the old name of type, accepted until 2026-12-31.) "
            "To change an existing fact use update_fact instead, which keeps its history. Returns the "
            "stored memory with its id; status pending means it waits for the user's review and is not "
            "recalled until they accept it."
        ),
        input_schema=schema_of(
            {
                "type": {
                    "type": "string",
                    "enum": list(REMEMBER_FIELDS),
                    "description": "episodic (a user turn), semantic (a durable fact) or procedural (a playbook).",
                },
                "kind": {
                    "type": "string",
                    "enum": list(TYPE_OF_KIND),
                    "deprecated": True,
                    "description": "Deprecated (until 2026-12-31): the old name of type — episode, fact or playbook.",
                },
                "text": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_TEXT_CHARS,
                    "description": "The turn or the fact; for a playbook an optional one-line summary.",
                },
                "session_id": {**MEMORY_ID, "description": "Episode: the conversation it belongs to."},
                **SCOPE,
                "timestamp": {**TIMESTAMP, "description": "Episode: when it was said (default: now)."},
                "at": {
                    **TIMESTAMP,
                    "deprecated": True,
                    "description": "Deprecated (until 2026-12-31): the old name of timestamp.",
                },
                "fact_type": {**FACT_TYPE, "default": "world"},
                "confidence": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "default": 0.8,
                    "description": "Fact: how sure you are (1 = the user said so explicitly).",
                },
                "source_episodes": {
                    "type": "array",
                    "items": MEMORY_ID,
                    "maxItems": MAX_LINKS,
                    "uniqueItems": True,
                    "description": "Fact: ids of the episodes it was learnt from.",
                },
                "valid_from": {**TIMESTAMP, "description": "Fact: true from this date-time."},
                "valid_to": {**TIMESTAMP, "description": "Fact: true until this date-time."},
                "name": {"type": "string", "minLength": 1, "maxLength": MAX_SHORT_CHARS, "description": "Playbook."},
                "trigger_text": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2000,
                    "description": "Playbook: the situation in which to follow it.",
                },
                "description": {"type": "string", "maxLength": MAX_TEXT_CHARS, "description": "Playbook."},
                "steps": {**STEPS, "description": "Playbook: the steps in order."},
            },
            [],
        ),
        handler=remember,
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    ),
    ToolSpec(
        name="update_fact",
        title="Update a fact",
        scope="write",
        description=(
            "Correct or update one of the user's facts (found with recall_memory or list_memories): stores "
            "the new text as a new version that supersedes the old one, which stays in the fact's history "
            "(memory_chain). contradiction=natural (default) when things changed (they moved, changed "
            "their mind); harsh when the old fact was wrong — it is then retracted and the new version "
            "gets 0.1 less confidence. Keeps the old fact_type unless you give one. Only the latest "
            "version can be updated. Returns the new version with its id. A fact the user wrote themselves "
            "(authority person) is not replaced at once: the new version is a proposal (status pending) "
            "the user accepts or rejects."
        ),
        input_schema=schema_of(
            {
                "memory_id": {**MEMORY_ID, "description": "The id of the fact to update."},
                "text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS, "description": "New text."},
                "fact_type": FACT_TYPE,
                "contradiction": {"type": "string", "enum": list(CONTRADICTIONS), "default": "natural"},
                "source_episodes": {
                    "type": "array",
                    "items": MEMORY_ID,
                    "maxItems": 50,
                    "description": "Ids of the user's turns that say the new version (their correction). A natural "
                    "update keeps the old version's evidence and adds these; a harsh one has these alone.",
                },
            },
            ["memory_id", "text"],
        ),
        handler=update_fact,
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    ),
    ToolSpec(
        name="forget_memory",
        title="Forget a memory",
        scope="forget",
        description=(
            "Permanently delete one of the user's memories (an episode, fact or playbook) by id, when the "
            "user asks you to forget it. It cannot be undone and leaves no history; to correct a fact, "
            "use update_fact instead. Shared catalog entries cannot be forgotten. Returns the id and type "
            "of what was deleted, and a receipt of every copy of its text removed, per store. Forgetting "
            "what is already gone answers forgotten: false, not an error. Instead of memory_id, filters forgets "
            "every memory they match (e.g. everything one agent wrote), with confirm repeating the user's id."
        ),
        input_schema=schema_of(
            {
                "memory_id": {**MEMORY_ID, "description": "The memory to delete."},
                "filters": FILTERS,
                "confirm": {**MEMORY_ID, "description": "With filters: the user's id again (it cannot be undone)."},
            },
            [],
        ),
        handler=forget_memory,
        annotations=types.ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    ),
    ToolSpec(
        name="list_memories",
        title="List memories",
        scope="read",
        description=(
            "List the user's memories newest first, without a search query — to review what is known, "
            "e.g. all their facts (types=[semantic]) or one conversation (session_id). Returns a page of "
            "memories and next_cursor; pass next_cursor back as cursor for the next page (null: no more)."
        ),
        input_schema=schema_of(
            {
                "types": TYPES,
                "fact_type": {**FACT_TYPE, "description": "Only facts of this type."},
                "session_id": {**MEMORY_ID, "description": "Only episodes of this conversation."},
                "include_superseded": {"type": "boolean", "default": False, "description": "Include old versions."},
                "authority": {
                    "type": "string",
                    "enum": list(AUTHORITIES),
                    "description": "Only facts and playbooks of this authority: person (the user wrote or "
                    "corrected it), agent, consolidation, import or operator.",
                },
                "filters": FILTERS,
                **PAGE,
            },
            [],
        ),
        handler=list_memories,
        annotations=_READ,
    ),
    ToolSpec(
        name="memory_chain",
        title="Fact history",
        scope="read",
        description=(
            "The history of a fact: every version from the first to the current one, oldest first, "
            "following supersessions both ways from any version's id. Use it when the user asks what "
            "they said before, or to check how a fact changed."
        ),
        input_schema=schema_of({"memory_id": {**MEMORY_ID, "description": "Any version's id."}}, ["memory_id"]),
        handler=memory_chain,
        annotations=_READ,
    ),
    ToolSpec(
        name="memory_provenance",
        title="Where a memory came from",
        scope="read",
        description=(
            "Where one of the user's memories came from: its authority (person, agent, consolidation, "
            "import, operator), who wrote it (a token, the person, a consolidation run, an operator, an "
            "import), the conversation turns it was distilled from (with their time and text; forgotten "
            "ones marked gone) and the consolidation run. Use it before relying on a fact the user "
            "questions, or when they ask how you know something."
        ),
        input_schema=schema_of({"memory_id": {**MEMORY_ID, "description": "The memory's id."}}, ["memory_id"]),
        handler=memory_provenance_tool,
        annotations=_READ,
    ),
    ToolSpec(
        name="record_outcome",
        title="Record a playbook outcome",
        scope="write",
        description=(
            "After following one of the user's playbooks, record whether it worked (success true/false), "
            "so recall ranks playbooks that work higher. If you had to change the steps, pass the better "
            "steps as refined_steps: they replace the old ones and the playbook's version goes up. "
            "Returns the playbook with its new counts and outcome_score."
        ),
        input_schema=schema_of(
            {
                "playbook_id": {**MEMORY_ID, "description": "The playbook's id."},
                "success": {"type": "boolean", "description": "Whether following it achieved its goal."},
                "refined_steps": {**STEPS, "description": "Better steps, replacing the old ones."},
            },
            ["playbook_id", "success"],
        ),
        handler=record_outcome,
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    ),
    ToolSpec(
        name="list_proposals",
        title="Proposals waiting for review",
        scope="read",
        description=(
            "List what waits for the user's review: facts and playbooks an agent or the nightly "
            "consolidation proposed (status pending) — never recalled until accepted. A proposal that "
            "would replace a fact lists that fact under replaces (old beside new). written_by narrows to "
            "one writer (run:<id> for a consolidation run, token:<name> for an agent)."
        ),
        input_schema=schema_of(
            {
                "written_by": {"type": "string", "minLength": 1, "maxLength": 300},
                **PAGE,
            },
            [],
        ),
        handler=list_proposals,
        annotations=_READ,
    ),
    ToolSpec(
        name="review_proposal",
        title="Accept or reject a proposal",
        scope="review",
        description=(
            "Only when the user decided: accept (optionally with the text they corrected) or reject one "
            "proposal from list_proposals, naming the version that was shown to them (a proposal changed "
            "since is an error showing what it says now). Accepting makes it current (a replacement "
            "replaces its fact); rejecting deletes it and the nightly job will not propose it again. Listed "
            "only to tokens with the 'review' scope; a token never decides its own proposals, and a "
            "proposal replacing a fact the user wrote needs their personal token. Deciding twice is an error."
        ),
        input_schema=schema_of(
            {
                "proposal_id": {**MEMORY_ID, "description": "The proposal's id."},
                "decision": {"type": "string", "enum": ["accept", "reject"]},
                "text": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_TEXT_CHARS,
                    "description": "Accept only: the fact's text as the user corrected it.",
                },
                "version": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 100,
                    "description": "The proposal's version as list_proposals showed it to the user.",
                },
            },
            ["proposal_id", "decision", "version"],
        ),
        handler=review_proposal,
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
    ),
)
TOOLS_BY_NAME = {spec.name: spec for spec in TOOLS}
