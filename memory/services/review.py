"""The person's review of pending proposals: accept (optionally with an edited text), reject, and both in
bulk per writer (a consolidation run, an agent's token).

A proposal is a fact or playbook stored with ``review_state: pending`` (writes.proposal_make). Accepting
it claims the facts it would replace through supersession's one-successor claim and then stores it as
current over the exact version that was read; rejecting deletes that exact version. So of two decisions
on one proposal exactly one wins and the other is a Conflict; an accept retried after its first attempt
won (or raced by a second accept) never forks a chain — both claim for the same id. A rejection is
remembered by a hash of the normalised text so consolidation does not propose it again. Every decision
is audited (no text in the audit record).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.db import IntegrityError, transaction
from elasticsearch import ConflictError

from atlas_site.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from memory.authority import BELOW_PERSON, PERSON, authority_stamp, is_pending, memory_authority, proposal_targets
from memory.elastic import store
from memory.models import RejectedProposal
from memory.scope import SubjectScope
from tenants.models import MemorySubject
from tenants.services import audit_record

from .documents import PreparedMemory, embed_into, now, require_text
from .supersession import supersession_claim, supersession_release

log = logging.getLogger(__name__)

PROPOSAL_TYPES = ("semantic", "procedural")
BULK_LIMIT = 500


def proposal_key(memory_type: str, source: dict[str, Any]) -> str:
    """What makes two proposals "the same" for remembering a rejection: the type and normalised text
    (a playbook's name and trigger) — hashed, so the record keeps no text."""
    from .consolidation import normalised

    if memory_type == "procedural":
        text = f"{source.get('name') or ''}\n{source.get('trigger_text') or ''}"
    else:
        text = source.get("text") or ""
    return hashlib.sha256(f"{memory_type}:{normalised(text)}".encode()).hexdigest()


def rejected_keys(*, subject: MemorySubject) -> set[str]:
    return set(RejectedProposal.objects.filter(subject=subject).values_list("text_key", flat=True))


def _proposal_read(scope: SubjectScope, proposal_id: Any) -> dict[str, Any]:
    """The proposal as stored right now, with its version; NotFound for anything not this subject's."""
    if not isinstance(proposal_id, str) or not proposal_id:
        raise ValidationFailed("a proposal id is required", field="proposal_id")
    found = store.memories_fetch(
        scope.reader(), ids=[proposal_id], memory_types=PROPOSAL_TYPES, filters=scope.read_filters()
    ).get(proposal_id)
    if found is None or found["_source"].get("user_id") != scope.user_id:
        if RejectedProposal.objects.filter(subject=scope.subject, proposal_id=proposal_id).exists():
            raise Conflict(f"proposal {proposal_id} was rejected", field="proposal_id")
        raise NotFound(f"no proposal {proposal_id} for this user", field="proposal_id")
    hit = store.memory_get_current(
        scope.reader(), index=found["_index"], memory_id=found["_id"], include_embedding=True
    )
    if hit is None:  # deleted since the search saw it: rejected meanwhile (or forgotten)
        raise Conflict(f"proposal {found['_id']} was decided by someone else meanwhile", field="proposal_id")
    if not is_pending(hit["_source"]):
        raise Conflict(f"proposal {hit['_id']} was already accepted", field="proposal_id")
    return hit


def _type_of(hit: dict[str, Any]) -> str:
    return hit["_source"].get("memory_type", "semantic")


def _audit(subject: MemorySubject, actor: str, action: str, memory_id: str, **detail: Any) -> None:
    audit_record(tenant=subject.tenant, actor=actor, action=action, target=f"{subject}:{memory_id}", detail=detail)


def proposal_accept(
    *,
    subject: MemorySubject,
    proposal_id: Any,
    actor: str,
    reviewer: dict[str, str],
    text: Any = None,
    settle: bool = True,
) -> dict[str, Any]:
    """Make a pending proposal a current memory; a replacement replaces its facts now (a Conflict naming
    the newest version when one was replaced meanwhile — the proposal stays pending). ``text`` (facts
    only): the reviewer's edit, accepted as theirs (``reviewer``'s authority and writer, re-embedded).

    A proposal to replace a fact the person wrote is theirs to accept: a ``reviewer`` below person
    authority (an agent's token) is refused — else an agent could accept its own proposal."""
    scope = SubjectScope.of(subject)
    hit = _proposal_read(scope, proposal_id)
    memory_type, memory_id = _type_of(hit), hit["_id"]
    source = {k: v for k, v in hit["_source"].items() if k not in ("review_state", "proposal_for")}
    edited = text is not None
    if edited:
        if memory_type != "semantic":
            raise ValidationFailed("only a proposed fact's text can be edited", field="text")
        source["text"] = require_text(text, field_name="text")
        authority_stamp(source, authority=reviewer["authority"], written_by=reviewer["written_by"])
        embed_into([PreparedMemory(memory_type, memory_id, source)])
    targets = _targets(scope, hit) if memory_type == "semantic" else []
    if reviewer["authority"] in BELOW_PERSON and any(memory_authority(t["_source"]) == PERSON for t in targets):
        raise PermissionDenied(
            f"proposal {memory_id} would replace a fact the person wrote: only they can accept it "
            "(in the dashboard, or with a personal token)"
        )
    claimed = supersession_claim(
        scope=scope,
        targets=targets,
        new_id=memory_id,
        harsh=source.get("contradiction") == "harsh",
        at=now().isoformat(),
        field="proposal_id",
    )
    if memory_type == "semantic":
        source["supersedes"] = [t["_id"] for t in targets]
    try:
        store.memory_index(
            scope.writer(),
            memory_type=memory_type,
            memory_id=memory_id,
            source=source,
            refresh=True,
            if_version=(hit["_seq_no"], hit["_primary_term"]),
        )
    except ConflictError:
        fresh = store.memory_get_current(scope.reader(), index=hit["_index"], memory_id=memory_id)
        if fresh is not None and not is_pending(fresh["_source"]):
            # Another accept of this proposal won: its claims are this one's (same id) — keep them.
            raise Conflict(f"proposal {memory_id} was already accepted", field="proposal_id") from None
        supersession_release(scope=scope, claimed=claimed, new_id=memory_id)
        raise Conflict(f"proposal {memory_id} was decided by someone else meanwhile", field="proposal_id") from None
    except BaseException:
        supersession_release(scope=scope, claimed=claimed, new_id=memory_id)
        raise
    _audit(
        subject,
        actor,
        "proposal.accept",
        memory_id,
        type=memory_type,
        edited=edited,
        authority=hit["_source"].get("authority"),
        written_by=hit["_source"].get("written_by"),
        replaces=[t["_id"] for t in targets],
    )
    if settle:
        _run_settle(subject, hit["_source"].get("written_by"), actor)
    return _view(memory_id, memory_type, source)


def _targets(scope: SubjectScope, hit: dict[str, Any]) -> list[dict[str, Any]]:
    """The facts an accepted proposal replaces: those of ``proposal_for`` still stored (one the person
    forgot meanwhile is simply no longer replaced)."""
    ids = proposal_targets(hit["_source"])
    if not ids:
        return []
    found = store.memories_fetch(
        scope.reader(), ids=ids, memory_types=store.FACT_TYPES_INDICES, filters=scope.read_filters()
    )
    return [h for h in found.values() if h["_source"].get("user_id") == scope.user_id]


def proposal_reject(*, subject: MemorySubject, proposal_id: Any, actor: str, settle: bool = True) -> dict[str, Any]:
    """Delete a pending proposal and remember that the person rejected it (a hash of its text)."""
    scope = SubjectScope.of(subject)
    hit = _proposal_read(scope, proposal_id)
    memory_type, memory_id = _type_of(hit), hit["_id"]
    if not store.memory_delete_versioned(
        scope.writer(), index=hit["_index"], memory_id=memory_id, if_version=(hit["_seq_no"], hit["_primary_term"])
    ):
        fresh = store.memory_get_current(scope.reader(), index=hit["_index"], memory_id=memory_id)
        if fresh is not None and not is_pending(fresh["_source"]):
            raise Conflict(f"proposal {memory_id} was already accepted", field="proposal_id")
        raise Conflict(f"proposal {memory_id} was decided by someone else meanwhile", field="proposal_id")
    try:
        with transaction.atomic():
            RejectedProposal.objects.create(
                tenant=subject.tenant,
                subject=subject,
                proposal_id=memory_id,
                memory_type=memory_type,
                text_key=proposal_key(memory_type, hit["_source"]),
                rejected_by=actor[:200],
            )
    except IntegrityError:
        pass  # a document stored again under a rejected id (a redelivered run) and rejected again
    _audit(
        subject,
        actor,
        "proposal.reject",
        memory_id,
        type=memory_type,
        authority=hit["_source"].get("authority"),
        written_by=hit["_source"].get("written_by"),
    )
    if settle:
        _run_settle(subject, hit["_source"].get("written_by"), actor)
    return {"id": memory_id, "type": memory_type, "status": "rejected"}


def proposals_decide(
    *,
    subject: MemorySubject,
    decision: str,
    written_by: Any,
    actor: str,
    reviewer: dict[str, str],
    settle: bool = True,
) -> dict[str, Any]:
    """Accept or reject every pending proposal of one writer (``run:<id>`` for a consolidation run,
    ``token:<name>`` for an agent): what was decided, and what could not be (with why)."""
    from memory.selectors import proposal_hits

    if decision not in ("accept", "reject"):
        raise ValidationFailed("decision must be accept or reject", field="decision")
    if not isinstance(written_by, str) or not written_by:
        raise ValidationFailed("name the writer whose proposals to decide (written_by)", field="written_by")
    decided: list[str] = []
    refused: list[dict[str, str]] = []
    for hit in proposal_hits(subject=subject, written_by=written_by, limit=BULK_LIMIT):
        try:
            if decision == "accept":
                proposal_accept(subject=subject, proposal_id=hit["_id"], actor=actor, reviewer=reviewer, settle=settle)
            else:
                proposal_reject(subject=subject, proposal_id=hit["_id"], actor=actor, settle=settle)
        except (Conflict, NotFound, PermissionDenied) as err:
            refused.append({"id": hit["_id"], "detail": err.message})
            continue
        decided.append(hit["_id"])
    key = "accepted" if decision == "accept" else "rejected"
    return {key: decided, "refused": refused}


def _run_settle(subject: MemorySubject, written_by: Any, actor: str) -> None:
    """When the person has decided the last proposal of a consolidation run held for review (the
    mass-change guard), the run is finished: the rest of its plan (confirmations, outcomes) is applied and
    the subject's watermark moves on — as ``atlas_consolidate --approve`` would, without the rejected items."""
    from memory.models import ConsolidationRun
    from memory.selectors import proposal_hits

    if not isinstance(written_by, str) or not written_by.startswith("run:"):
        return
    run = ConsolidationRun.objects.filter(
        pk=int(written_by[4:]) if written_by[4:].isdigit() else -1,
        subject=subject,
        status=ConsolidationRun.Status.NEEDS_REVIEW,
    ).first()
    if run is None or proposal_hits(subject=subject, written_by=written_by, limit=1):
        return
    from .consolidation import consolidation_run_approve

    try:
        consolidation_run_approve(run=run, actor=actor)
    except ValidationFailed as err:  # another run holds the lease, or the window moved: an operator decides
        log.warning("run %s stays waiting for review after its last proposal: %s", run.pk, err.message)


def _view(memory_id: str, memory_type: str, source: dict[str, Any]) -> dict[str, Any]:
    from memory.elastic.documents import VECTOR_FIELDS

    out = {k: v for k, v in source.items() if k not in VECTOR_FIELDS}
    return {"id": memory_id, "type": memory_type, **out}


def proposals_withdraw(*, subject: MemorySubject, written_by: str) -> int:
    """Delete the pending proposals of one writer without remembering them as rejected — a held run an
    operator discarded: its next run asks the LLM again and may propose the same. Returns how many."""
    from memory.selectors import proposal_hits

    scope = SubjectScope.of(subject)
    hits = proposal_hits(subject=subject, written_by=written_by, limit=BULK_LIMIT)
    return store.memories_delete(scope.writer(), [(h["_index"], h["_id"]) for h in hits])
