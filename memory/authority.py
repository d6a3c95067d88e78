"""Who a fact or playbook speaks for (``authority``), who wrote it (``written_by``) and whether it waits
for review (``review_state``) — the one place these are read, stamped and compared.

Authority is stamped by the write services from the path a write took, never taken from a client:
``person`` (the person wrote or corrected it in the dashboard), ``agent`` (REST or MCP),
``consolidation`` (the nightly job), ``import`` and ``operator`` (the Django admin, an operator CLI).
A write of a lower authority — agent, consolidation, import — never replaces or retracts a ``person``
fact directly: it becomes a pending proposal for the person (docs/governance.md).
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Principal:
    """Who acts: the authority its writes speak with, how provenance names it, and a stable identity
    compared so that whoever proposed never decides.

    ``identity``: ``token:<pk>``, ``person:<pk>``, ``operator:<pk>``, ``run:<id>``, ``import:<actor>``.
    ``may_review``: the person themself, an operator, or a token holding the ``review`` scope.
    ``is_person``: the subject's own person (the dashboard, or their personal token with ``review``):
    only they accept a replacement of a fact they wrote."""

    authority: str
    written_by: str
    identity: str
    may_review: bool = False
    is_person: bool = False

    def stamp(self) -> dict[str, str]:
        """The keyword arguments the write services take for who writes."""
        return {"authority": self.authority, "written_by": self.written_by, "writer_id": self.identity}


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


def authority_stamp(source: dict[str, Any], *, authority: str, written_by: str, writer_id: str = "") -> None:
    """Stamp a prepared fact or playbook with who it speaks for, who wrote it (``written_by``, shown) and
    the writer's stable identity (``writer_id``, compared so that whoever proposed never decides)."""
    if authority not in AUTHORITIES:
        raise ValueError(f"unknown authority {authority!r}")
    source["authority"] = authority
    for name, value in (("written_by", written_by), ("writer_id", writer_id)):
        if value:  # a service's own write (a test, the demo seed) names no writer: none is stored
            source[name] = value[:300]
        else:
            source.pop(name, None)


def memory_etag(source: dict[str, Any]) -> str:
    """A stored memory's version as an editor sees it: its content, not its use counts (a recall that
    bumps ``use_count`` must not make an editor's ``If-Match`` fail)."""
    import hashlib
    import json

    from memory.elastic.mappings import VECTOR_FIELDS

    ignored = (*VECTOR_FIELDS, "use_count", "last_used_at", "id", "type")  # id/type: the API's names, not stored
    content = {k: v for k, v in source.items() if k not in ignored}
    return '"' + hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:32] + '"'


def is_pending(source: dict[str, Any]) -> bool:
    return source.get("review_state") == PENDING


def proposal_targets(source: dict[str, Any]) -> list[str]:
    """The facts a pending proposal would replace (``proposal_for``: a list of ids; none for a new memory)."""
    value = source.get("proposal_for") or []
    return list(value) if isinstance(value, list) else [value]


def by_token(principal: Any) -> dict[str, str]:
    """The authority and writer of a write through REST or MCP: an agent, named by its token."""
    return token_principal(principal).stamp()


def token_principal(principal: Any) -> Principal:
    """The write gate's principal for a REST or MCP token: an agent, whatever the token (a personal token
    is an agent acting for the person, not the person). It may decide proposals only with the ``review``
    scope, and a personal token with it stands for its person (it may accept a replacement of their fact)."""
    token = principal.token
    may_review = "review" in principal.scopes
    return Principal(
        authority=AGENT,
        written_by=f"token:{token.name}",
        identity=f"token:{token.pk}",
        may_review=may_review,
        is_person=may_review and getattr(token, "person_id", None) is not None,
    )


def person_principal(user: Any) -> Principal:
    """The person in the dashboard: named by an opaque id, never their login e-mail (docs/governance.md)."""
    return Principal(
        authority=PERSON, written_by=f"person:{user.pk}", identity=f"person:{user.pk}", may_review=True, is_person=True
    )


def operator_principal(user: Any) -> Principal:
    """An operator in the Django admin or a CLI: named by an opaque id; they may decide proposals."""
    return Principal(
        authority=OPERATOR, written_by=f"operator:{user.pk}", identity=f"operator:{user.pk}", may_review=True
    )


def by_person(user: Any) -> dict[str, str]:
    """The authority and writer of a write the person makes in the dashboard."""
    return person_principal(user).stamp()


def by_operator(user: Any) -> dict[str, str]:
    """The authority and writer of a write an operator makes in the Django admin."""
    return operator_principal(user).stamp()
