"""The write gate: may this principal do this action to this memory, and how?

Every change to a stored memory asks :func:`write_decide` — the write services (facts, playbooks,
outcomes), the review of proposals, imports and consolidation — so the rules of who may change what
live here once, as the table in docs/governance.md ("Who may change what"), and
tests/memory/test_gate.py walks that table row by row.

The answers: ``APPLY`` (write it now), ``PROPOSE`` (store it as a pending proposal for the person), or
an error: ``Conflict`` (409: the memory waits for review, or was replaced) and ``PermissionDenied``
(403: this principal may not). The promises behind the table:

- a write never deletes, and never replaces a memory in place: a write naming an existing memory (by
  its external id) is the same write again (answered as stored) or a 409 — a change is a supersession
  or an edit, under the rules of ``CHANGE``;
- a lower authority (agent, consolidation, import) never changes a ``person`` memory directly;
- whoever proposed never decides, and deciding is a person's act: the person, an operator with the
  memory permissions, or a token holding the ``review`` scope (never implied by ``write``);
- a decision names the version that was shown (``version_check``).
"""

from __future__ import annotations

from typing import Any

from atlas_site.errors import Conflict, PermissionDenied, ValidationFailed
from memory.authority import (
    AGENT,
    BELOW_PERSON,
    CONSOLIDATION,
    OPERATOR,
    PERSON,
    REVIEW_AGENTS,
    REVIEW_OFF,
    Principal,
    is_pending,
    memory_authority,
)
from memory.elastic.queries import FORGOTTEN_LINK
from memory.services.guards import exfiltration_like, injection_like, instruction_like, secret_kinds

APPLY = "apply"
PROPOSE = "propose"

#: Store a new memory (no memory of that id is stored).
CREATE = "create"
#: Change a stored memory's content: an edit, a supersession, refined playbook steps.
CHANGE = "change"
#: Accept or reject a pending proposal.
DECIDE = "decide"
#: Count a run of a playbook, bump use counts, confirm a fact: statistics, not content.
COUNT = "count"
ACTIONS = (CREATE, CHANGE, DECIDE, COUNT)


def review_holds(*, review_mode: str, authority: str) -> bool:
    """Whether a tenant's review mode holds what a writer of ``authority`` writes as pending:
    ``consolidation`` holds the nightly job's facts and playbooks, ``agents`` those of agents too."""
    mode = review_mode or REVIEW_OFF
    if authority == CONSOLIDATION:
        return mode != REVIEW_OFF
    return authority == AGENT and mode == REVIEW_AGENTS


def write_decide(
    *,
    principal: Principal,
    action: str,
    memory: dict[str, Any] | None,
    review_mode: str,
    memory_id: str = "",
    field: str | None = None,
) -> str:
    """The gate's answer for ``principal`` doing ``action`` to ``memory`` (its stored source; None for a
    new one) in a tenant whose review mode is ``review_mode``: APPLY or PROPOSE, else it raises."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    if action == COUNT:
        return APPLY
    if action == CREATE:
        return PROPOSE if review_holds(review_mode=review_mode, authority=principal.authority) else APPLY
    if memory is None:
        raise ValueError(f"{action} needs the stored memory")
    if action == DECIDE:
        _decide_check(principal, memory, memory_id)
        return APPLY
    _changeable_check(memory, memory_id, field)
    if principal.authority in BELOW_PERSON and memory_authority(memory) == PERSON:
        return PROPOSE
    return PROPOSE if review_holds(review_mode=review_mode, authority=principal.authority) else APPLY


def _changeable_check(memory: dict[str, Any], memory_id: str, field: str | None) -> None:
    """Only a current memory changes: a proposal is decided first, a replaced version is history."""
    what = f"{'fact' if memory.get('memory_type') == 'semantic' else 'memory'} {memory_id}".strip()
    if is_pending(memory):
        raise Conflict(f"{what} is a proposal waiting for review: accept or reject it first", field=field)
    newer = memory.get("superseded_by")
    if newer:
        ids = [i for i in (newer if isinstance(newer, list) else [newer]) if i != FORGOTTEN_LINK]
        by = ", ".join(ids) if ids else "a version since forgotten"
        raise Conflict(f"{what} was replaced by {by}: change the newest version", field=field)


def _decide_check(principal: Principal, proposal: dict[str, Any], memory_id: str) -> None:
    if not is_pending(proposal):
        raise Conflict(f"proposal {memory_id} was already accepted", field="proposal_id")
    if not principal.may_review:
        raise PermissionDenied(
            "deciding a proposal is the person's act: it needs the dashboard, or a token with the 'review' scope"
        )
    if proposal.get("writer_id") == principal.identity or (
        principal.authority != PERSON and proposal.get("written_by") == principal.written_by
    ):
        raise PermissionDenied(f"proposal {memory_id} is this writer's own: whoever proposed never decides")


def replacement_decide_check(*, principal: Principal, targets: list[dict[str, Any]], memory_id: str) -> None:
    """A proposal that replaces a fact the person wrote is theirs alone to accept (the dashboard, or their
    own personal token with the ``review`` scope) — not a tenant's reviewer, not an operator's import."""
    if principal.is_person or principal.authority == OPERATOR:
        return
    if any(memory_authority(t["_source"]) == PERSON for t in targets):
        raise PermissionDenied(
            f"proposal {memory_id} would replace a fact the person wrote: only they can accept it "
            "(in the dashboard, or with their personal token holding the 'review' scope)"
        )


def version_check(*, shown: Any, stored_version: str, memory_id: str, text: str) -> None:
    """A decision names the version that was shown (the proposal's ETag); a change since is a 409 that
    shows the text as it is now."""
    if not isinstance(shown, str) or not shown.strip():
        raise ValidationFailed(
            "name the version of the proposal you reviewed (its 'version', or an If-Match header)", field="version"
        )
    if shown.strip() != stored_version:
        raise Conflict(
            f"proposal {memory_id} changed since it was shown; it now reads: {text[:500]!r} (version {stored_version})",
            field="version",
        )


#: The fields that make two writes of one memory "the same write": what the memory says, not when it was
#: sent nor what the store keeps about it (use counts, links, review state).
CONTENT_FIELDS = {
    "episodic": ("text", "role", "event_type", "session_id", "agent_id"),
    "semantic": ("text", "fact_type", "confidence", "source_episodes", "valid_from", "valid_to", "supersedes"),
    "procedural": ("name", "trigger_text", "description", "steps", "text"),
    "catalog": ("title", "text", "category", "tags"),
}


def same_content(memory_type: str, stored: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether ``new`` says what ``stored`` says (a retried or re-imported write of the same memory). A
    proposal's replacement targets wait in ``proposal_for``: they count as what it supersedes. A link the
    stored memory lost to forgetting (FORGOTTEN_LINK where an id was) matches whatever id ``new`` names
    there: a file re-imported after a forget says the same as what it stored."""
    fields = CONTENT_FIELDS[memory_type]
    return all(_same(_normal(_content(stored, f)), _normal(_content(new, f))) for f in fields)


def _same(stored: Any, new: Any) -> bool:
    if isinstance(stored, list) and isinstance(new, list) and FORGOTTEN_LINK in stored:
        return len(stored) == len(new) and all(s in (FORGOTTEN_LINK, n) for s, n in zip(stored, new, strict=True))
    return stored == new


def _content(source: dict[str, Any], name: str) -> Any:
    if name == "supersedes":
        return source.get("supersedes") or source.get("proposal_for")
    return source.get(name)


def _normal(value: Any) -> Any:
    return None if value in ([], "", None) else value


def existing_refused(*, memory_type: str, external_id: str, memory_id: str) -> Conflict:
    """The 409 for a write that names a memory already stored with other content: a write never replaces."""
    how = {
        "semantic": f"send a new fact with supersedes: [{external_id!r}], or PATCH the fact {memory_id}",
        "procedural": f"record an outcome with refined_steps on playbook {memory_id}",
        "episodic": "a turn is what was said: store the new turn under an id of its own",
        "catalog": f"PATCH the catalog entry {memory_id}",
    }[memory_type]
    return Conflict(
        f"a memory with external id {external_id!r} is already stored (id {memory_id}) with other content; "
        f"a write never replaces a stored memory — to change it, {how}",
        field="external_id",
    )


def content_guard(*, principal: Principal, prepared: Any) -> None:
    """What an agent writes is read back into agents' prompts: a fact or playbook that reads as an
    injected instruction or would send conversations or data out is refused (400), with the consolidation
    guards' rules (memory/services/guards.py); a playbook's steps that hold a secret too.
    A fact may hold what the person told their agent to keep (a locker code): it is theirs, read only
    with their key. The person and operators write what they mean."""
    if principal.authority != AGENT:
        return
    source = prepared.source
    if prepared.memory_type == "procedural":
        steps_guard(principal=principal, name=source.get("name") or "", steps=source.get("steps") or [])
        return
    if prepared.memory_type == "semantic":
        _text_guard(source.get("text") or "", field="text", instructions=injection_like, secrets=False)


def steps_guard(*, principal: Principal, name: str, steps: list[dict[str, Any]]) -> None:
    """A playbook's steps as an agent wrote or refined them pass the guards consolidation's pass."""
    if principal.authority != AGENT:
        return
    everything = ".\n".join([name, *(s.get("instruction") or "" for s in steps)])  # one sentence a step
    _text_guard(everything, field="steps", instructions=instruction_like, secrets=True)


def _text_guard(text: str, *, field: str, instructions: Any, secrets: bool) -> None:
    found = secret_kinds(text) if secrets else []
    if found:
        raise ValidationFailed(f"refused: it holds a secret ({', '.join(found).replace('_', ' ')})", field=field)
    if instructions(text):
        raise ValidationFailed("refused: it reads as an instruction to the assistant", field=field)
    if exfiltration_like(text):
        raise ValidationFailed("refused: it would send conversations or data to an outside address", field=field)
