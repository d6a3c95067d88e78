"""Who a fact or playbook speaks for (``authority``), who wrote it (``written_by``) and whether it waits
for review (``review_state``) — the one place these are read, stamped and compared.

Authority is stamped by the write services from the path a write took, never taken from a client:
``person`` (the person wrote or corrected it in the dashboard), ``agent`` (REST or MCP),
``consolidation`` (the nightly job), ``import`` and ``operator`` (the Django admin, an operator CLI).
A write of a lower authority — agent, consolidation, import — never replaces or retracts a ``person``
fact directly: it becomes a pending proposal for the person (docs/governance.md).
"""

from __future__ import annotations

from typing import Any

from atlas_site.errors import ValidationFailed

PERSON = "person"
AGENT = "agent"
CONSOLIDATION = "consolidation"
IMPORT = "import"
OPERATOR = "operator"
AUTHORITIES = (PERSON, AGENT, CONSOLIDATION, IMPORT, OPERATOR)
#: The writers whose word cannot replace a person's own fact without the person accepting it.
BELOW_PERSON = frozenset({AGENT, CONSOLIDATION, IMPORT})
#: The memory types that carry an authority (episodes are what the user said; the catalog is the tenant's).
AUTHORED_TYPES = ("semantic", "procedural", "archive")

PENDING = "pending"

#: Tenant review modes: what waits for the person's review before recall may use it.
REVIEW_OFF = "off"
REVIEW_CONSOLIDATION = "consolidation"
REVIEW_AGENTS = "agents"
REVIEW_MODES = (REVIEW_OFF, REVIEW_CONSOLIDATION, REVIEW_AGENTS)


def memory_authority(source: dict[str, Any]) -> str:
    """A stored memory's authority. Documents written before authority was kept have none: a fact or
    playbook carrying a consolidation run's event marker (``applied_events``) was written by the nightly
    job; everything else came through the API (agents) — the only other writers then."""
    stamped = source.get("authority")
    if stamped in AUTHORITIES:
        return stamped
    return CONSOLIDATION if source.get("applied_events") else AGENT


def authority_parse(value: Any, *, field: str = "authority") -> str | None:
    """A caller's ``authority`` filter: None, or one of AUTHORITIES (anything else is refused)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value not in AUTHORITIES:
        raise ValidationFailed(f"authority must be one of {', '.join(AUTHORITIES)}", field=field)
    return value


def outranked(*, writer: str, source: dict[str, Any]) -> bool:
    """Whether a write of authority ``writer`` may not replace the stored memory ``source`` directly."""
    return writer in BELOW_PERSON and memory_authority(source) == PERSON


def authority_stamp(source: dict[str, Any], *, authority: str, written_by: str) -> None:
    """Stamp a prepared fact or playbook with who it speaks for and who wrote it."""
    if authority not in AUTHORITIES:
        raise ValueError(f"unknown authority {authority!r}")
    source["authority"] = authority
    if written_by:  # a service's own write (a test, the demo seed) names no writer: none is stored
        source["written_by"] = written_by[:300]
    else:
        source.pop("written_by", None)


def is_pending(source: dict[str, Any]) -> bool:
    return source.get("review_state") == PENDING


def proposal_targets(source: dict[str, Any]) -> list[str]:
    """The facts a pending proposal would replace (``proposal_for``: a list of ids; none for a new memory)."""
    value = source.get("proposal_for") or []
    return list(value) if isinstance(value, list) else [value]


def by_token(principal: Any) -> dict[str, str]:
    """The authority and writer of a write through REST or MCP: an agent, named by its token."""
    return {"authority": AGENT, "written_by": f"token:{principal.token.name}"}


def by_person(user: Any) -> dict[str, str]:
    """The authority and writer of a write the person makes in the dashboard."""
    return {"authority": PERSON, "written_by": f"person:{user.get_username()}"}


def by_operator(user: Any) -> dict[str, str]:
    """The authority and writer of a write an operator makes in the Django admin."""
    return {"authority": OPERATOR, "written_by": f"operator:{user.get_username()}"}


def by_reviewer_token(principal: Any) -> dict[str, str]:
    """Who reviews through REST or MCP: the person themself with a personal token (one they made in the
    dashboard), an agent with any other token."""
    person = getattr(principal.token, "person", None)
    return by_person(person) if person is not None else by_token(principal)
