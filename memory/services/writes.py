"""Writing memories for one subject: episodes, facts (with supersession), playbooks and their outcomes.

The service authorises by construction — it only ever writes documents stamped
with the subject's own tenant_id/user_id, through the write-only service key —
and reads what it must check through the subject's own key.
"""

from __future__ import annotations

import logging
from typing import Any

from atlas_site.echo import names_listed
from atlas_site.errors import Conflict, NotFound, PreconditionFailed, QuotaExceeded, ValidationFailed
from atlas_site.observability.hooks import memory_write_observed
from memory import recall_constants as rc
from memory.authority import AGENT, CONSOLIDATION, PENDING, Principal, authority_stamp, memory_etag
from memory.elastic import queries, store
from memory.elastic.mappings import VECTOR_FIELDS
from memory.scope import SubjectScope
from memory.scoping import scope_of
from memory.services import gate
from tenants.models import MemorySubject
from tenants.usage import usage_write_release, usage_write_reserve

from .announce import memory_stored_announce, memory_updated_announce
from .non_english_flags import non_english_marked
from .prepare import (
    PreparedMemory,
    PreviousTurn,
    embed_into,
    episode_prepare,
    fact_prepare,
    memory_id_derived,
    memory_owner_check,
    now,
    playbook_prepare,
    steps_validate,
    timestamp,
)
from .supersession import (
    already_replaced,
    fact_claim_versioned,
    successors_of,
    supersession_claim,
    supersession_release,
)

__all__ = ["memory_etag"]  # the version an editor read: kept here for the interfaces that import it

log = logging.getLogger(__name__)


def stored_view(prepared: PreparedMemory) -> dict[str, Any]:
    out = {k: v for k, v in prepared.source.items() if k not in VECTOR_FIELDS}
    return {"id": prepared.memory_id, "type": prepared.memory_type, **out}


def _writer(authority: str, written_by: str, writer_id: str) -> Principal:
    """The write gate's principal for a service's ``authority``/``written_by``/``writer_id`` arguments."""
    return Principal(authority=authority, written_by=written_by, identity=writer_id or written_by)


def _stamped_writer(source: dict[str, Any]) -> Principal:
    return _writer(source.get("authority", AGENT), source.get("written_by", ""), source.get("writer_id", ""))


def proposal_make(prepared: PreparedMemory) -> None:
    """Turn a prepared fact or playbook into a pending proposal: stored, never recalled, and — for a
    replacement — naming what it would replace in ``proposal_for`` with ``supersedes`` left empty, so no
    chain, count or reconciler takes it for a successor until the person accepts it."""
    prepared.source["review_state"] = PENDING
    if prepared.memory_type == "semantic":
        if prepared.supersedes:
            prepared.source["proposal_for"] = list(prepared.supersedes)
        prepared.source["supersedes"] = []
        prepared.supersedes = []


def _index(scope: SubjectScope, prepared: PreparedMemory, *, refresh: bool) -> bool:
    """Embed and store ``prepared``, never over a stored memory: False when one has its id already (a
    write never replaces — gate.py)."""
    memory_owner_check(tenant_id=scope.tenant_id, user_id=scope.user_id, prepared=prepared)
    # The usage ledger counts (and the daily quota admits) what agents and people write, here where every
    # new memory is stored: consolidation's writes are paid for in LLM tokens, under the token budget,
    # and a plan is never cut in half by a quota.
    counted = prepared.source.get("authority") != CONSOLIDATION
    if counted:
        usage_write_reserve(tenant=scope.subject.tenant)  # QuotaExceeded (429) before anything is stored
    stored = False
    try:
        embed_into([prepared])
        with non_english_marked([prepared]):
            stored = store.memory_index(
                scope.writer(),
                memory_type=prepared.memory_type,
                memory_id=prepared.memory_id,
                source=prepared.source,
                refresh=refresh,
                create_only=True,
            )
    finally:
        if counted and not stored:  # the same write again, or a failed store: not a write of today's
            usage_write_release(tenant=scope.subject.tenant)
    if stored:
        memory_write_observed(subject=scope.subject, memory_type=prepared.memory_type)
        memory_stored_announce(
            subject=scope.subject,
            memory_id=prepared.memory_id,
            memory_type=prepared.memory_type,
            source=prepared.source,
        )
    return stored


def _named_existing(scope: SubjectScope, prepared: PreparedMemory) -> dict[str, Any] | None:
    """The memory stored under the id a write's external id derives (a replaced fact may be archived)."""
    if not prepared.source.get("external_id"):
        return None
    types = store.FACT_TYPES_INDICES if prepared.memory_type == "semantic" else (prepared.memory_type,)
    hit = store.memories_fetch(
        scope.reader(), ids=[prepared.memory_id], memory_types=types, filters=scope.read_filters()
    ).get(prepared.memory_id)
    return hit if hit is not None and hit["_id"] == prepared.memory_id else None


def _existing_answer(scope: SubjectScope, prepared: PreparedMemory, hit: dict[str, Any]) -> dict[str, Any]:
    """A write naming a memory already stored: the same write again is answered as stored; anything else
    is a 409 — a write never replaces a memory in place (a change is an edit or a supersession). The same
    write again announces its event again: the same event id, so one its first attempt could not record
    (a 503) is recorded now, and one it did record is not recorded twice."""
    if not gate.same_content(prepared.memory_type, hit["_source"], prepared.source):
        raise gate.existing_refused(
            memory_type=prepared.memory_type, external_id=prepared.source["external_id"], memory_id=hit["_id"]
        )
    memory_stored_announce(
        subject=scope.subject, memory_id=hit["_id"], memory_type=prepared.memory_type, source=hit["_source"]
    )
    return {"id": hit["_id"], "type": prepared.memory_type, **hit["_source"]}


def _stored_new(scope: SubjectScope, prepared: PreparedMemory, *, refresh: bool) -> dict[str, Any]:
    """Store ``prepared`` unless its external id names a stored memory (then _existing_answer): its view.
    The create itself finds a stored one (no read before every write); only then is it read."""
    try:
        created = _index(scope, prepared, refresh=refresh)
    except QuotaExceeded:
        # Past the daily quota, the same write again (a retry after a lost answer) is still answered as
        # stored: it was counted the first time.
        stored = _named_existing(scope, prepared) if prepared.source.get("external_id") else None
        if stored is None:
            raise
        return _existing_answer(scope, prepared, stored)
    if not created:
        if prepared.source.get("external_id"):
            stored = _named_existing(scope, prepared)
            if stored is not None:
                return _existing_answer(scope, prepared, stored)
        else:
            _derived_announce(scope, prepared)
    return stored_view(prepared)


def _derived_announce(scope: SubjectScope, prepared: PreparedMemory) -> None:
    """A memory of a derived id stored before (a retried request, a redelivered job) announces its event
    again, as stored: the same event id, so an event the first attempt could not record is recorded now."""
    types = store.FACT_TYPES_INDICES if prepared.memory_type == "semantic" else (prepared.memory_type,)
    hit = store.memories_fetch(
        scope.reader(), ids=[prepared.memory_id], memory_types=types, filters=scope.read_filters()
    ).get(prepared.memory_id)
    if hit is not None and hit["_id"] == prepared.memory_id:
        memory_stored_announce(
            subject=scope.subject, memory_id=hit["_id"], memory_type=prepared.memory_type, source=hit["_source"]
        )


def _previous_turn(scope: SubjectScope, *, session_id: Any, at: Any) -> PreviousTurn | None:
    if not isinstance(session_id, str) or not session_id:
        return None
    before = (timestamp(at, field_name="timestamp") or now()).isoformat()
    body = queries.previous_turn_body(
        filters=scope.read_filters(), user_id=scope.user_id, session_id=session_id, before=before
    )
    hits = store.memories_search(scope.reader(), memory_types=("episodic",), body=body)["hits"]["hits"]
    return PreviousTurn(hits[0]["_id"], hits[0]["_source"]["text"]) if hits else None


def episode_write(
    *, subject: MemorySubject, text: Any, refresh: bool = True, derived_key: str | None = None, **fields: Any
) -> dict[str, Any]:
    """Store one user turn. With ``refresh`` (the default) the next recall sees it.

    ``derived_key`` (a keyed request's retry key): the turn's id derives from it, and a turn already
    stored under that id — the first attempt of a retried request — is answered as it is, not stored
    again (nor linked to itself as its own previous turn)."""
    scope = SubjectScope.of(subject)
    if derived_key is not None:
        stored = _stored_under(scope, "episodic", derived_key)
        if stored is not None:  # the first attempt's turn: its event again (the same id), as fact_store does
            source = {k: v for k, v in stored.items() if k not in ("id", "type")}
            memory_stored_announce(subject=subject, memory_id=stored["id"], memory_type="episodic", source=source)
            return stored
    previous = _previous_turn(scope, session_id=fields.get("session_id"), at=fields.get("at"))
    prepared = episode_prepare(
        tenant_id=scope.tenant_id,
        user_id=scope.user_id,
        text=text,
        previous_turn=previous,
        derived_key=derived_key,
        **fields,
    )
    return _stored_new(scope, prepared, refresh=refresh)


def _stored_under(scope: SubjectScope, memory_type: str, derived_key: str) -> dict[str, Any] | None:
    """The subject's memory stored under ``derived_key``'s id, as a write answers it; None if none."""
    memory_id = memory_id_derived(
        tenant_id=scope.tenant_id, user_id=scope.user_id, memory_type=memory_type, key=derived_key
    )
    hit = store.memories_fetch(
        scope.reader(), ids=[memory_id], memory_types=(memory_type,), filters=scope.read_filters()
    ).get(memory_id)
    if hit is None:
        return None
    return {"id": hit["_id"], "type": memory_type, **hit["_source"]}


def _superseded_targets(scope: SubjectScope, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The facts ``ids`` name, read as the subject: another subject's fact is simply not found."""
    found = store.memories_fetch(
        scope.reader(), ids=ids, memory_types=store.FACT_TYPES_INDICES, filters=scope.read_filters()
    )
    own = {i: hit for i, hit in found.items() if hit["_source"].get("user_id") == scope.user_id}
    missing = [i for i in ids if i not in own]
    if missing:
        raise NotFound(f"no fact {names_listed(missing)} for this user", field="supersedes")
    return own


def fact_store(
    *,
    scope: SubjectScope,
    prepared: PreparedMemory,
    targets: list[dict[str, Any]],
    refresh: bool,
    pending: bool = False,
) -> dict[str, Any] | None:
    """Store a prepared fact that replaces ``targets`` (fetched hits; may be none): every path that
    writes a fact comes through here, so the write gate decides for each, and a fact has at most one
    successor wherever the write starts.

    A fact whose external id names a stored one is that write again (its view is returned, nothing
    stored) or a 409 — never an overwrite. The gate makes it a pending proposal (proposal_make: it
    replaces nothing yet) with ``pending``, when the tenant's review mode holds its writer, or when a
    lower authority would replace a fact the person wrote.

    The old facts are claimed first (supersession_claim: one atomic update each, refused when another
    fact already replaced one — a Conflict naming the newest version), then the new fact is stored; if
    storing fails the claims are released, so a refused or failed writer leaves nothing behind. A crash
    between the two steps leaves a claim the reconciler releases. A fact of a derived id stored before
    (a redelivered job) keeps its claims: storing it again only finishes its links. Returns None when
    ``prepared`` was stored."""
    existing = _named_existing(scope, prepared)
    if existing is not None:
        return _existing_answer(scope, prepared, existing)
    verdict = _fact_verdict(scope, prepared, targets)  # always: a pending or replaced target is refused
    if pending or verdict == gate.PROPOSE:
        proposal_make(prepared)
        targets = []
    claimed = (
        supersession_claim(
            scope=scope,
            targets=targets,
            new_id=prepared.memory_id,
            harsh=prepared.contradiction == "harsh",
            at=prepared.source["created_at"],
            new_valid_from=prepared.source.get("valid_from"),
        )
        if targets
        else []
    )
    try:
        created = _index(scope, prepared, refresh=refresh)
    except BaseException:
        supersession_release(scope=scope, claimed=claimed, new_id=prepared.memory_id)
        raise
    if created or not prepared.source.get("external_id"):
        if not created:
            _derived_announce(scope, prepared)
        return None
    raced = _named_existing(scope, prepared)  # a concurrent write of the same external id won
    holds = set(raced["_source"].get("supersedes") or []) if raced is not None else set()
    supersession_release(scope=scope, claimed=[c for c in claimed if c["_id"] not in holds], new_id=prepared.memory_id)
    if raced is None:
        raise Conflict(f"fact {prepared.memory_id} was stored and removed meanwhile; try again", field="external_id")
    return _existing_answer(scope, prepared, raced)


def _fact_verdict(scope: SubjectScope, prepared: PreparedMemory, targets: list[dict[str, Any]]) -> str:
    """The gate's answer for storing ``prepared`` over ``targets``: PROPOSE if any part must wait."""
    writer = _stamped_writer(prepared.source)
    mode = scope.subject.tenant.review_mode
    verdicts = {gate.write_decide(principal=writer, action=gate.CREATE, memory=None, review_mode=mode)}
    for hit in targets:
        successors = successors_of(hit["_source"])
        if successors == [prepared.memory_id]:
            continue  # this fact's own claim, left by an attempt that died: the retry finishes it
        if successors:
            raise already_replaced(scope=scope, hit=hit, field="supersedes")
        verdicts.add(
            gate.write_decide(
                principal=writer,
                action=gate.CHANGE,
                memory=hit["_source"],
                review_mode=mode,
                memory_id=hit["_id"],
                field="supersedes",
            )
        )
    return gate.PROPOSE if gate.PROPOSE in verdicts else gate.APPLY


def fact_write(
    *,
    subject: MemorySubject,
    text: Any,
    refresh: bool = True,
    derived_key: str | None = None,
    applied_event: str | None = None,
    authority: str = AGENT,
    written_by: str = "",
    writer_id: str = "",
    review: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    """Store a fact; with ``supersedes`` it replaces older facts of the same subject (natural or harsh).

    ``authority``/``written_by`` (memory/authority.py) come from the interface's principal. The answer's
    ``review_state`` is ``pending`` when the fact waits for the person's review: the tenant's review mode
    holds this writer's facts, or it would replace a fact of the person's own; ``review`` (services) always.

    ``derived_key`` (services only, e.g. consolidation): the fact's id is derived from it and a fact
    already stored under that id is kept as it is — writing it again only finishes its supersession
    links — so a redelivered job writes nothing twice. ``applied_event`` marks the fact as already
    holding that event's change (see store.EVENT_GUARD)."""
    scope = SubjectScope.of(subject)
    prepared = fact_prepare(
        tenant_id=scope.tenant_id, user_id=scope.user_id, text=text, derived_key=derived_key, **fields
    )
    authority_stamp(prepared.source, authority=authority, written_by=written_by, writer_id=writer_id)
    gate.content_guard(principal=_writer(authority, written_by, writer_id), prepared=prepared)
    if applied_event is not None:
        prepared.source["applied_events"] = [applied_event]
    targets = _superseded_targets(scope, prepared.supersedes) if prepared.supersedes else {}
    if prepared.memory_id in {hit["_id"] for hit in targets.values()}:
        raise ValidationFailed("a fact cannot supersede itself", field="supersedes")
    # Links are stored as the memories' own ids, whichever id (own or external) the caller named.
    prepared.supersedes = list(dict.fromkeys(hit["_id"] for hit in targets.values()))
    prepared.source["supersedes"] = prepared.supersedes
    _source_episodes_resolve(scope, prepared)
    existing = fact_store(
        scope=scope, prepared=prepared, targets=list(targets.values()), refresh=refresh or bool(targets), pending=review
    )
    return existing if existing is not None else stored_view(prepared)


def _source_episodes_resolve(
    scope: SubjectScope, prepared: PreparedMemory, *, carried: frozenset[str] = frozenset()
) -> None:
    """The episodes a fact cites, checked to be this subject's and stored by their own ids (a 404 naming
    those that are not). ``carried``: the evidence a correction keeps from the version it replaces; one
    of those forgotten since (a fact keeps the id of a forgotten turn, never its text) is left out rather
    than refused — the editor did not name it, and a fact must stay correctable after its turn is gone."""
    episodes = prepared.source.get("source_episodes") or []
    if not episodes:
        return
    seen = store.memories_fetch(scope.reader(), ids=episodes, memory_types=("episodic",), filters=scope.read_filters())
    missing = [e for e in episodes if e not in seen or seen[e]["_source"].get("user_id") != scope.user_id]
    refused = [e for e in missing if e not in carried]
    if refused:
        raise NotFound(f"no episode {names_listed(refused)} for this user", field="source_episodes")
    prepared.source["source_episodes"] = list(dict.fromkeys(seen[e]["_id"] for e in episodes if e not in missing))


EDIT_ATTEMPTS = 20


def edit_backoff(attempt: int) -> None:
    """A compare-and-set lost to another write: wait a little before reading again (at most ~2 s in all),
    so a burst of use-count bumps, or a read that lags a refresh, does not use up the attempts at once."""
    import time

    time.sleep(min(0.2, 0.01 * (attempt + 1)))


def fact_edit(
    *,
    subject: MemorySubject,
    memory_id: Any,
    text: Any,
    fact_type: Any = None,
    confidence: Any = None,
    contradiction: Any = "natural",
    source_episodes: Any = None,
    if_match: str | None = None,
    authority: str = AGENT,
    written_by: str = "",
    writer_id: str = "",
) -> dict[str, Any]:
    """Correct a fact: a supersession (natural unless the old version was wrong: harsh), so the old
    version stays in the chain. The fact type, confidence and provenance carry over unless given; its
    scope (agent, app, run, metadata) always does.
    The evidence links that still hold carry over too: a natural change keeps the turns the fact grew
    from and adds ``source_episodes`` (the turns that changed it); a harsh correction says the old
    version was wrong, so only its own ``source_episodes`` are its evidence.

    A correction by ``person`` (or ``operator``) replaces any fact; one by a lower authority of a fact the
    person wrote — or any the tenant's review mode holds — is stored as a pending proposal instead.

    Only the newest version can be edited, and only once (a Conflict naming the newest version).
    ``if_match`` (the ETag the editor read) must still be the fact's version, else 412 — checked first,
    as HTTP evaluates preconditions before anything else. The check is a compare-and-set: the fact is
    claimed for its new version only over the exact stored version whose ETag matched (Elasticsearch's
    ``if_seq_no``/``if_primary_term``); when anything changed in between the fact is read and checked
    again, so of concurrent editors holding one valid ETag exactly one succeeds and the others get 412.
    """
    scope = SubjectScope.of(subject)
    if not isinstance(memory_id, str) or not memory_id:
        raise ValidationFailed("memory_id is required", field="memory_id")
    try:
        found = _superseded_targets(scope, [memory_id])[memory_id]
    except NotFound:
        raise NotFound(f"no fact {memory_id} for this user", field="memory_id") from None
    memory_id = found["_id"]
    writer = _writer(authority, written_by, writer_id)
    expected = if_match.strip() if if_match is not None else None
    for attempt in range(EDIT_ATTEMPTS):
        hit = store.memory_get_current(scope.reader(), index=found["_index"], memory_id=memory_id)
        if hit is None:
            raise NotFound(f"no fact {memory_id} for this user", field="memory_id")
        old = hit["_source"]
        if expected is not None and expected != "*" and expected != memory_etag(old):
            if old.get("superseded_by"):
                raise already_replaced(scope=scope, hit=hit, field="memory_id", precondition=True)
            raise PreconditionFailed(f"fact {memory_id} changed since it was read (If-Match does not match)")
        if old.get("superseded_by"):
            raise already_replaced(scope=scope, hit=hit, field="memory_id")
        verdict = gate.write_decide(
            principal=writer,
            action=gate.CHANGE,
            memory=old,
            review_mode=subject.tenant.review_mode,
            memory_id=memory_id,
            field="memory_id",
        )
        prepared = fact_prepare(
            tenant_id=scope.tenant_id,
            user_id=scope.user_id,
            text=text,
            fact_type=fact_type if fact_type is not None else old.get("fact_type", "world"),
            confidence=confidence if confidence is not None else old.get("confidence", 0.8),
            source_episodes=_evidence_kept(old, contradiction=contradiction, given=source_episodes),
            # Valid time: a harsh correction says what was always so (from when the wrong version held); a
            # natural change holds from now, and the old version until now.
            valid_from=(old.get("valid_from") or old.get("created_at")) if contradiction == "harsh" else None,
            valid_to=old.get("valid_to"),
            supersedes=[memory_id],
            contradiction=contradiction,
            **scope_of(old),  # a correction stays in the scope of what it corrects (docs/scoping.md)
        )
        authority_stamp(prepared.source, authority=authority, written_by=written_by, writer_id=writer_id)
        gate.content_guard(principal=writer, prepared=prepared)
        _source_episodes_resolve(scope, prepared, carried=frozenset(old.get("source_episodes") or ()))
        if verdict == gate.PROPOSE:
            proposal_make(prepared)
            _index(scope, prepared, refresh=True)
            return stored_view(prepared)
        harsh = prepared.contradiction == "harsh"
        if not fact_claim_versioned(
            scope=scope,
            hit=hit,
            new_id=prepared.memory_id,
            harsh=harsh,
            at=prepared.source["created_at"],
            new_valid_from=prepared.source.get("valid_from"),
        ):
            edit_backoff(attempt)
            continue  # changed since it was read (a rival edit, a use count): read and check again
        try:
            _index(scope, prepared, refresh=True)  # a new random id: never an existing memory
        except BaseException:
            supersession_release(scope=scope, claimed=[hit], new_id=prepared.memory_id)
            raise
        return stored_view(prepared)
    raise Conflict(f"fact {memory_id} kept changing while it was edited; read it again", field="memory_id")


def _evidence_kept(old: dict[str, Any], *, contradiction: Any, given: Any) -> list[Any] | None:
    """A correction's evidence: what it was given, after the old version's for a natural change (a harsh
    one says the old version was wrong: what it was distilled from is no evidence of the correction)."""
    if given is not None and not isinstance(given, list):
        return given  # fact_prepare refuses it with a clear error
    kept = [] if contradiction == "harsh" else list(old.get("source_episodes") or [])
    return list(dict.fromkeys([*kept, *(given or [])])) or None


def playbook_write(
    *,
    subject: MemorySubject,
    refresh: bool = True,
    derived_key: str | None = None,
    authority: str = AGENT,
    written_by: str = "",
    writer_id: str = "",
    review: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    """Store a playbook (``derived_key``: as fact_write's — a derived id, never over a stored one); it is
    a pending proposal when the tenant's review mode holds this writer's playbooks. Its external id
    naming a stored playbook is the same write again or a 409, as for facts."""
    scope = SubjectScope.of(subject)
    prepared = playbook_prepare(tenant_id=scope.tenant_id, user_id=scope.user_id, derived_key=derived_key, **fields)
    authority_stamp(prepared.source, authority=authority, written_by=written_by, writer_id=writer_id)
    writer = _writer(authority, written_by, writer_id)
    gate.content_guard(principal=writer, prepared=prepared)
    verdict = gate.write_decide(
        principal=writer, action=gate.CREATE, memory=None, review_mode=subject.tenant.review_mode
    )
    if review or verdict == gate.PROPOSE:
        proposal_make(prepared)
    return _stored_new(scope, prepared, refresh=refresh)


def playbook_outcome_record(
    *,
    subject: MemorySubject,
    playbook_id: Any,
    success: Any,
    refined_steps: Any = None,
    event_id: str | None = None,
    authority: str = AGENT,
    written_by: str = "",
    writer_id: str = "",
) -> dict[str, Any]:
    """Count a run of a playbook (statistics: any writer); refined steps are a change of the playbook,
    decided by the write gate like any other: applied as its next version, stamped with who wrote them
    (provenance never credits the person with an agent's steps), or — for a playbook the person wrote,
    or one the review mode holds — stored as a pending proposal of that version (``proposal_for`` the
    playbook; the answer is the proposal). Refined steps pass the content guards (gate.content_guard).

    ``success`` None (services only) records no run, only the refined steps. ``event_id`` (services
    only): the change is applied once per id — a redelivered job counts nothing twice."""
    scope = SubjectScope.of(subject)
    if not isinstance(playbook_id, str) or not playbook_id:
        raise ValidationFailed("playbook_id is required", field="playbook_id")
    if not isinstance(success, bool) and not (success is None and event_id is not None and refined_steps is not None):
        raise ValidationFailed("success must be true or false", field="success")
    steps = steps_validate(refined_steps, field_name="refined_steps") if refined_steps is not None else None
    hit = _playbook_read(scope, playbook_id)
    playbook_id = hit["_id"]
    writer = _writer(authority, written_by, writer_id)
    verdict = gate.APPLY
    if steps is not None:
        gate.steps_guard(principal=writer, name=hit["_source"].get("name") or "", steps=steps)
        verdict = gate.write_decide(
            principal=writer,
            action=gate.CHANGE,
            memory=hit["_source"],
            review_mode=subject.tenant.review_mode,
            memory_id=playbook_id,
            field="playbook_id",
        )
    proposal = None
    if verdict == gate.PROPOSE:
        proposal = _steps_proposal(scope, hit, steps, writer, event_id)
        steps = None  # the run still counts; the steps wait for review
    if success is not None or steps is not None:
        store.playbook_outcome_update(
            scope.writer(),
            index=hit["_index"],
            memory_id=playbook_id,
            success=success,
            at=now().isoformat(),
            steps=steps,
            author=writer.stamp() if steps is not None else None,
            prior_s=rc.OUTCOME_PRIOR_SUCCESSES,
            prior_n=rc.OUTCOME_PRIOR_RUNS,
            event=event_id,
        )
    if proposal is not None:
        return proposal
    updated = _playbook_read(scope, playbook_id)["_source"]
    if steps is not None:
        memory_updated_announce(
            subject=subject, memory_id=playbook_id, memory_type="procedural", source=updated, change="steps",
            key=f"{playbook_id}:v{updated.get('version')}",
        )  # fmt: skip
    return {"id": playbook_id, "type": "procedural", **updated}


def _playbook_read(scope: SubjectScope, playbook_id: str) -> dict[str, Any]:
    hit = store.memories_fetch(
        scope.reader(), ids=[playbook_id], memory_types=("procedural",), filters=scope.read_filters()
    ).get(playbook_id)
    if hit is None or hit["_source"].get("user_id") != scope.user_id:
        raise NotFound(f"no playbook {playbook_id} for this user", field="playbook_id")
    return hit


def _steps_proposal(
    scope: SubjectScope, hit: dict[str, Any], steps: list[dict[str, Any]], writer: Principal, event_id: str | None
) -> dict[str, Any]:
    """Refined steps for a playbook the writer may not change directly: a pending playbook of the next
    version, ``proposal_for`` the playbook (accepting it gives the playbook these steps)."""
    old = hit["_source"]
    prepared = playbook_prepare(
        tenant_id=scope.tenant_id,
        user_id=scope.user_id,
        name=old.get("name"),
        trigger_text=old.get("trigger_text"),
        steps=steps,
        description=old.get("description"),
        text=old.get("text"),
        derived_key=f"steps:{hit['_id']}:{event_id}" if event_id else None,
    )
    prepared.source["version"] = int(old.get("version") or 1) + 1
    authority_stamp(prepared.source, **writer.stamp())
    proposal_make(prepared)
    prepared.source["proposal_for"] = [hit["_id"]]
    return _stored_new(scope, prepared, refresh=True)


def fact_confirm(
    *, subject: MemorySubject, fact_id: str, source_episodes: list[str], boost: float, event_id: str
) -> bool:
    """A later conversation confirms one of the subject's current facts: confidence + ``boost`` (capped
    at 1), ``last_confirmed_at`` now, the episodes added to its sources. Once per ``event_id``; False
    when that event was applied before."""
    scope = SubjectScope.of(subject)
    hit = _superseded_targets(scope, [fact_id])[fact_id]
    applied = store.fact_confirm_update(
        scope.writer(),
        index=hit["_index"],
        memory_id=hit["_id"],
        boost=boost,
        at=now().isoformat(),
        episodes=list(source_episodes),
        event=event_id,
    )
    if applied:
        fresh = store.memory_get_current(scope.reader(), index=hit["_index"], memory_id=hit["_id"])
        memory_updated_announce(
            subject=subject, memory_id=hit["_id"], memory_type="semantic",
            source=fresh["_source"] if fresh else hit["_source"], change="confirmed", key=f"{hit['_id']}:{event_id}",
        )  # fmt: skip
    return applied
