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

from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from elasticsearch import ConflictError

from atlas_site.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from memory import recall_constants as rc
from memory.authority import OPERATOR, Principal, authority_stamp, is_pending, memory_etag, proposal_targets
from memory.elastic import store
from memory.models import ConsolidationRun, RejectedProposal
from memory.scope import SubjectScope
from memory.services.proposal_keys import proposal_key
from memory.validation import require_text, timestamp
from tenants.models import MemorySubject
from tenants.services import audit_record

from . import gate
from .announce import memory_updated_announce, proposal_decided_announce, supersession_announce
from .prepare import PreparedMemory, dates_named, embed_into, now
from .supersession import supersession_claim, supersession_release

PROPOSAL_TYPES = ("semantic", "procedural")
BULK_LIMIT = 500


@dataclass(frozen=True)
class Decided:
    """A decision's answer: what to show the reviewer, and the consolidation runs held for review whose
    last proposal it decided. Approving those is the caller's (the interface's) next step
    (memory.consolidation.run.consolidation_runs_settle): this module never calls back into consolidation."""

    shown: dict[str, Any]
    runs_complete: list[int] = field(default_factory=list)


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
    reviewer: Principal,
    version: Any,
    text: Any = None,
) -> Decided:
    """Make a pending proposal a current memory; a replacement replaces its facts now (a Conflict naming
    the newest version when one was replaced meanwhile — the proposal stays pending). ``text`` (facts
    only): the reviewer's edit, accepted as theirs (``reviewer``'s authority and writer, re-embedded).

    The write gate decides who may (gate.write_decide DECIDE: the person, an operator, a token with the
    ``review`` scope — never the proposal's own writer; a replacement of the person's own fact only the
    person), and ``version`` must be the version that was shown (gate.version_check; None only for an
    operator approving a whole run). Shows the memory as now stored; reports the run it completed."""
    shown, written_by = _accept(
        subject=subject, proposal_id=proposal_id, actor=actor, reviewer=reviewer, version=version, text=text
    )
    return Decided(shown, runs_complete=_runs_complete(subject, written_by))


def _accept(
    *, subject: MemorySubject, proposal_id: Any, actor: str, reviewer: Principal, version: Any, text: Any = None
) -> tuple[dict[str, Any], Any]:
    """proposal_accept's decision: the memory as now stored, and who had proposed it."""
    scope = SubjectScope.of(subject)
    hit = _proposal_read(scope, proposal_id)
    memory_type, memory_id = _type_of(hit), hit["_id"]
    targets = _targets(scope, hit)
    _decision_check(subject, reviewer, hit, version, targets)
    source = {k: v for k, v in hit["_source"].items() if k not in ("review_state", "proposal_for")}
    edited = text is not None
    if edited:
        if memory_type != "semantic":
            raise ValidationFailed("only a proposed fact's text can be edited", field="text")
        source["text"] = require_text(text, field_name="text")
        for derived in ("mentions", "mention_ranges"):  # of the proposed text: resolved again for the edited one
            source.pop(derived, None)
        created = timestamp(source.get("created_at"), field_name="created_at") or now()
        source.update(dates_named(source["text"], at=created))
        authority_stamp(source, **reviewer.stamp())
        embed_into([PreparedMemory(memory_type, memory_id, source)])
    if memory_type == "procedural" and proposal_targets(hit["_source"]):
        return _steps_accept(subject, scope, hit, actor=actor), hit["_source"].get("written_by")
    if memory_type != "semantic":
        targets = []
    claimed = supersession_claim(
        scope=scope,
        targets=targets,
        new_id=memory_id,
        harsh=source.get("contradiction") == "harsh",
        at=now().isoformat(),
        field="proposal_id",
        new_valid_from=source.get("valid_from"),
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
    replaced = [t["_id"] for t in targets]
    if replaced:
        supersession_announce(
            subject=subject, old_ids=replaced, new_id=memory_id, contradiction=source.get("contradiction") or "natural"
        )
    proposal_decided_announce(
        subject=subject, proposal_id=memory_id, memory_type=memory_type, decision="accepted", replaces=replaced
    )
    return _view(memory_id, memory_type, source), hit["_source"].get("written_by")


def _decision_check(
    subject: MemorySubject, reviewer: Principal, hit: dict[str, Any], version: Any, targets: list[dict[str, Any]]
) -> None:
    """The write gate on a decision: who may decide — a replacement of what the person wrote only the
    person, accepted or rejected — then that the version shown is the version stored (a refusal first:
    it shows nothing of the proposal)."""
    gate.write_decide(
        principal=reviewer,
        action=gate.DECIDE,
        memory=hit["_source"],
        review_mode=subject.tenant.review_mode,
        memory_id=hit["_id"],
    )
    gate.replacement_decide_check(principal=reviewer, targets=targets, memory_id=hit["_id"])
    if version is None and reviewer.authority == OPERATOR:
        return  # an operator approving a held run accepts what the run proposed, as the run recorded it
    gate.version_check(
        shown=version,
        stored_version=memory_etag(hit["_source"]),
        memory_id=hit["_id"],
        text=_proposal_text(hit["_source"]),
    )


def _proposal_text(source: dict[str, Any]) -> str:
    if source.get("memory_type") == "procedural":
        steps = "; ".join(s.get("instruction") or "" for s in source.get("steps") or [])
        return f"{source.get('name')}: {steps}"
    return source.get("text") or ""


def _steps_accept(subject: MemorySubject, scope: SubjectScope, hit: dict[str, Any], *, actor: str) -> dict[str, Any]:
    """Accept refined steps proposed for a playbook: the playbook takes them as its next version,
    credited to whoever proposed them (the proposal's authority and writer), and the proposal, now
    merged, is removed — over the exact version that was read, so one decision wins."""
    proposal = hit["_source"]
    target_id = proposal_targets(proposal)[0]
    target = store.memories_fetch(
        scope.reader(), ids=[target_id], memory_types=("procedural",), filters=scope.read_filters()
    ).get(target_id)
    if target is None or target["_source"].get("user_id") != scope.user_id:
        raise Conflict(f"the playbook {target_id} these steps were proposed for is gone", field="proposal_id")
    if not store.memory_delete_versioned(
        scope.writer(), index=hit["_index"], memory_id=hit["_id"], if_version=(hit["_seq_no"], hit["_primary_term"])
    ):
        raise Conflict(f"proposal {hit['_id']} was decided by someone else meanwhile", field="proposal_id")
    author = {k: proposal.get(k) or "" for k in ("authority", "written_by", "writer_id")}
    store.playbook_outcome_update(
        scope.writer(),
        index=target["_index"],
        memory_id=target["_id"],
        success=None,
        at=now().isoformat(),
        steps=proposal.get("steps"),
        author=author,
        prior_s=rc.OUTCOME_PRIOR_SUCCESSES,
        prior_n=rc.OUTCOME_PRIOR_RUNS,
    )
    _audit(
        subject,
        actor,
        "proposal.accept",
        hit["_id"],
        type="procedural",
        edited=False,
        authority=proposal.get("authority"),
        written_by=proposal.get("written_by"),
        replaces=[target["_id"]],
    )
    updated = store.memory_get_current(scope.reader(), index=target["_index"], memory_id=target["_id"])
    now_stored = updated["_source"] if updated else target["_source"]
    memory_updated_announce(
        subject=subject, memory_id=target["_id"], memory_type="procedural", source=now_stored, change="steps",
        key=f"{target['_id']}:v{now_stored.get('version')}",
    )  # fmt: skip
    proposal_decided_announce(
        subject=subject, proposal_id=hit["_id"], memory_type="procedural", decision="accepted",
        replaces=[target["_id"]], merged=True,
    )  # fmt: skip
    return _view(target["_id"], "procedural", now_stored)


def _targets(scope: SubjectScope, hit: dict[str, Any]) -> list[dict[str, Any]]:
    """What an accepted proposal replaces: the facts of ``proposal_for`` (or the playbook whose steps it
    refines) still stored — one the person forgot meanwhile is simply no longer replaced."""
    ids = proposal_targets(hit["_source"])
    if not ids:
        return []
    types = ("procedural",) if _type_of(hit) == "procedural" else store.FACT_TYPES_INDICES
    found = store.memories_fetch(scope.reader(), ids=ids, memory_types=types, filters=scope.read_filters())
    return [h for h in found.values() if h["_source"].get("user_id") == scope.user_id]


def proposal_reject(
    *, subject: MemorySubject, proposal_id: Any, actor: str, reviewer: Principal, version: Any
) -> Decided:
    """Delete a pending proposal and remember that the person rejected it (a hash of its text). The gate
    decides who may, and ``version`` must be the version shown, as for proposal_accept; reports the run it
    completed, as proposal_accept does."""
    shown, written_by = _reject(
        subject=subject, proposal_id=proposal_id, actor=actor, reviewer=reviewer, version=version
    )
    return Decided(shown, runs_complete=_runs_complete(subject, written_by))


def _reject(
    *, subject: MemorySubject, proposal_id: Any, actor: str, reviewer: Principal, version: Any
) -> tuple[dict[str, Any], Any]:
    """proposal_reject's decision: what to show, and who had proposed it."""
    scope = SubjectScope.of(subject)
    hit = _proposal_read(scope, proposal_id)
    memory_type, memory_id = _type_of(hit), hit["_id"]
    _decision_check(subject, reviewer, hit, version, _targets(scope, hit))
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
    proposal_decided_announce(
        subject=subject, proposal_id=memory_id, memory_type=memory_type, decision="rejected", replaces=[]
    )
    return {"id": memory_id, "type": memory_type, "status": "rejected"}, hit["_source"].get("written_by")


def proposals_decide(
    *,
    subject: MemorySubject,
    decision: str,
    written_by: Any,
    actor: str,
    reviewer: Principal,
    shown: dict[str, str] | None = None,
) -> Decided:
    """Accept or reject every pending proposal of one writer (``run:<id>`` for a consolidation run,
    ``token:<name>`` for an agent) that was shown: ``shown`` maps each shown proposal's id to the version
    shown — one that arrived since is left waiting, one that changed is refused (None: every proposal
    of the writer, for an operator approving a run). Shows what was decided and what could not be (with
    why); reports the run whose last proposal this decided."""
    from memory.selectors import proposal_hits

    if decision not in ("accept", "reject"):
        raise ValidationFailed("decision must be accept or reject", field="decision")
    if not isinstance(written_by, str) or not written_by:
        raise ValidationFailed("name the writer whose proposals to decide (written_by)", field="written_by")
    decided: list[str] = []
    refused: list[dict[str, str]] = []
    for hit in proposal_hits(subject=subject, written_by=written_by, limit=BULK_LIMIT):
        if shown is not None and hit["_id"] not in shown:
            continue  # arrived after the page was shown: it waits for its own decision
        version = shown.get(hit["_id"]) if shown is not None else None
        decide = _accept if decision == "accept" else _reject
        try:
            decide(subject=subject, proposal_id=hit["_id"], actor=actor, reviewer=reviewer, version=version)
        except (Conflict, NotFound, PermissionDenied, ValidationFailed) as err:
            refused.append({"id": hit["_id"], "detail": err.message})
            continue
        decided.append(hit["_id"])
    key = "accepted" if decision == "accept" else "rejected"
    runs = _runs_complete(subject, written_by) if decided else []
    return Decided({key: decided, "refused": refused}, runs_complete=runs)


def _runs_complete(subject: MemorySubject, written_by: Any) -> list[int]:
    """The consolidation run held for review (the mass-change guard) that ``written_by`` names, once no
    proposal of it waits any more: the person has decided its last one, so the rest of its plan
    (confirmations, outcomes) may be applied and the watermark move on — the caller's to approve."""
    from memory.selectors import proposal_hits

    if not isinstance(written_by, str) or not written_by.startswith("run:"):
        return []
    run = ConsolidationRun.objects.filter(
        pk=int(written_by[4:]) if written_by[4:].isdigit() else -1,
        subject=subject,
        status=ConsolidationRun.Status.NEEDS_REVIEW,
    ).first()
    if run is None or proposal_hits(subject=subject, written_by=written_by, limit=1):
        return []
    return [run.pk]


def _view(memory_id: str, memory_type: str, source: dict[str, Any]) -> dict[str, Any]:
    from memory.elastic.mappings import VECTOR_FIELDS

    out = {k: v for k, v in source.items() if k not in VECTOR_FIELDS}
    return {"id": memory_id, "type": memory_type, **out}


def proposals_withdraw(*, subject: MemorySubject, written_by: str) -> int:
    """Delete the pending proposals of one writer without remembering them as rejected — a held run an
    operator discarded: its next run asks the LLM again and may propose the same. Returns how many."""
    from memory.selectors import proposal_hits

    scope = SubjectScope.of(subject)
    hits = proposal_hits(subject=subject, written_by=written_by, limit=BULK_LIMIT)
    return store.memories_delete(scope.writer(), [(h["_index"], h["_id"]) for h in hits])
