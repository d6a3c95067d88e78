"""Supersession: a fact has at most one successor, on every path, and the reconciler that keeps it so.

A supersession claims each old fact first (one atomic update that names its successor and refuses a
fact that already has one), then stores the new fact. So of several writers replacing one fact the
first claim wins and the others are refused before they store anything: their callers get a Conflict
naming the newest version (the chain followed to its head). A crash between the two steps leaves a
claim without its new fact; the hourly reconciler releases it once it is older than CLAIM_GRACE. It
also repairs what older versions left: a half-linked supersession (the new fact stored, the old one
never pointed at it) is finished, and a fork (one fact with several successors) is cut back to one —
the newest successor wins, every other branch's head is superseded by the winner — and audited.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from elasticsearch import ConflictError, Elasticsearch

from atlas_site.errors import Conflict, PreconditionFailed
from memory.elastic import links, store
from memory.elastic.queries import FORGOTTEN_LINK
from memory.scope import SubjectScope
from memory.validation import timestamp
from tenants.models import Tenant
from tenants.selectors import tenant_es_client, writer_es_client
from tenants.services import audit_record

from .prepare import now

log = logging.getLogger(__name__)

# A claim whose new fact is not stored after this long was left by a writer that died (a write takes
# well under a second; the margin covers a slow embedding and an Elasticsearch hiccup).
CLAIM_GRACE = timedelta(minutes=10)
MAX_CHAIN_HOPS = 1000


def links_of(source: dict[str, Any], name: str) -> list[str]:
    """A memory's links named ``name`` (``superseded_by``, ``supersedes``, ``proposal_for``,
    ``source_episodes``) as a list: older documents may hold a single id."""
    links = source.get(name) or []
    return list(links) if isinstance(links, list) else [links]


def successors_of(source: dict[str, Any]) -> list[str]:
    """A fact's ``superseded_by`` as a list."""
    return links_of(source, "superseded_by")


def fact_chain_head(
    *, reader: Elasticsearch, filters: list[dict[str, Any]], memory_id: str, hit: dict[str, Any] | None = None
) -> str:
    """The newest version of ``memory_id``'s chain: its successors followed to the end (a claimed successor
    whose document is not stored yet is the head; a fork left by an older version follows its newest link;
    a chain whose newest version was forgotten ends in FORGOTTEN_LINK).
    ``hit``: the fact as just read (its successor may be newer than the last refresh)."""
    seen = {memory_id}
    current = memory_id
    for _ in range(MAX_CHAIN_HOPS):
        if current == FORGOTTEN_LINK:
            return current
        if hit is None:
            hit = store.memories_fetch(
                reader, ids=[current], memory_types=store.FACT_TYPES_INDICES, filters=filters
            ).get(current)
        links = [link for link in successors_of(hit["_source"]) if link not in seen] if hit else []
        if not links:
            return current
        current = links[-1]
        seen.add(current)
        hit = None
    return current


def already_replaced(
    *, scope: SubjectScope, hit: dict[str, Any], field: str, precondition: bool = False
) -> Conflict | PreconditionFailed:
    """The refusal of a second replacement of the fact ``hit`` (as just read), naming its chain's newest
    version by the caller's external id too when the facts have one (a caller that names facts by its own
    ids gets its own ids back), and giving it as the problem's ``newest`` member ({id, external_id})."""
    memory_id = hit["_id"]
    old = _fact_named(memory_id, hit["_source"].get("external_id"))
    newest = fact_chain_head(reader=scope.reader(), filters=scope.read_filters(), memory_id=memory_id, hit=hit)
    if newest == FORGOTTEN_LINK:
        message = (
            f"fact {old} was replaced by a version that was since forgotten. A replaced fact cannot be "
            "replaced again: write the fact anew"
        )
        extensions: dict[str, Any] = {"newest": None}
    else:
        newest_hit = store.memories_fetch(
            scope.reader(), ids=[newest], memory_types=store.FACT_TYPES_INDICES, filters=scope.read_filters()
        ).get(newest)
        newest_external = newest_hit["_source"].get("external_id") if newest_hit else None
        new = _fact_named(newest, newest_external)
        message = (
            f"fact {old} was already replaced; its newest version is {new}. A replaced fact cannot be "
            f"replaced again: edit the newest version ({new})"
        )
        extensions = {"newest": {"id": newest, "external_id": newest_external}}
    if precondition:
        return PreconditionFailed(
            f"fact {old} changed since it was read (If-Match does not match): " + message, extensions=extensions
        )
    return Conflict(message, field=field, extensions=extensions)


def _fact_named(memory_id: str, external_id: str | None) -> str:
    """A fact as a message names it: by the caller's external id (and its own id) when it has one."""
    return f"{external_id} (id {memory_id})" if external_id else memory_id


def validity_end(old: dict[str, Any], new_valid_from: str | None) -> str | None:
    """When the replaced version ``old`` stopped holding, in valid time: its successor's stated valid_from
    (Lisbon from 1 November ends Berlin then, though we learnt it on 4 December) — unless ``old`` states its
    own end or the successor claims to start before ``old`` did. None: it held until it was replaced."""
    if not new_valid_from or old.get("valid_to"):
        return None
    began = timestamp(old.get("valid_from") or old.get("created_at"), field_name="valid_from")
    ends = timestamp(new_valid_from, field_name="valid_from")
    return ends.isoformat() if ends and (began is None or ends > began) else None


def supersession_claim(
    *,
    scope: SubjectScope,
    targets: Iterable[dict[str, Any]],
    new_id: str,
    harsh: bool,
    at: str,
    field: str = "supersedes",
    new_valid_from: str | None = None,
) -> list[dict[str, Any]]:
    """First step of a supersession: claim each target (a fetched hit) for ``new_id``, atomically.

    A target some other fact already replaced is a Conflict naming the newest version; the claims made
    before it are released, so a refused writer leaves nothing behind. A target already claimed for
    ``new_id`` (a retried write) counts as claimed. Returns the hits this call claimed (the ones to
    release if storing the new fact fails)."""
    writer = scope.writer()
    claimed_at = now().isoformat()
    claimed: list[dict[str, Any]] = []
    try:
        # One order for every writer: two replacing {a, b} at once cannot each hold one and both lose.
        for hit in sorted(targets, key=lambda h: h["_id"]):
            if store.fact_successor_claim(
                writer,
                index=hit["_index"],
                old_id=hit["_id"],
                new_id=new_id,
                at=at,
                harsh=harsh,
                claimed_at=claimed_at,
                ends=None if harsh else validity_end(hit["_source"], new_valid_from),
            ):
                claimed.append(hit)
            else:
                fresh = store.memory_get_current(scope.reader(), index=hit["_index"], memory_id=hit["_id"])
                if fresh is None or successors_of(fresh["_source"]) != [new_id]:
                    raise already_replaced(scope=scope, hit=fresh or hit, field=field)
    except BaseException:
        supersession_release(scope=scope, claimed=claimed, new_id=new_id)
        raise
    return claimed


def fact_claim_versioned(
    *, scope: SubjectScope, hit: dict[str, Any], new_id: str, harsh: bool, at: str, new_valid_from: str | None = None
) -> bool:
    """Claim the exact stored version ``hit`` was read at (it must carry ``_seq_no``/``_primary_term``):
    a compare-and-set. False when the fact changed since (the caller reads it again)."""
    try:
        return store.fact_successor_claim(
            scope.writer(),
            index=hit["_index"],
            old_id=hit["_id"],
            new_id=new_id,
            at=at,
            harsh=harsh,
            claimed_at=now().isoformat(),
            if_version=(hit["_seq_no"], hit["_primary_term"]),
            ends=None if harsh else validity_end(hit["_source"], new_valid_from),
        )
    except ConflictError:
        return False


def supersession_release(*, scope: SubjectScope, claimed: list[dict[str, Any]], new_id: str) -> None:
    """Undo claims for ``new_id`` whose new fact will not be stored."""
    writer = scope.writer()
    for hit in claimed:
        store.fact_successor_release(writer, index=hit["_index"], old_id=hit["_id"], new_id=new_id)


# The fields that say a fact was replaced: a document stored again under its own id (a re-sent external
# id, a re-imported line) keeps them, or re-storing a replaced fact would make it current again — a second
# head beside its successor.
# ---------------------------------------------------------------------------------------------- repair
def supersessions_reconcile(*, tenant: Tenant) -> list[tuple[str, str]]:
    """Repair every supersession chain of ``tenant`` that breaks the one-successor rule.

    - a claim whose new fact was never stored (older than CLAIM_GRACE) is released;
    - a fact whose ``supersedes`` names an old fact that does not point back gets linked, when the old
      fact has no other successor (a supersession an older version left half-done);
    - a fact with several successors (a fork older versions let through) keeps the newest one; the head
      of every other branch is superseded by the winner, which names it among its predecessors;
    - a fact (or a pending proposal) naming a predecessor that is not there stops naming it: forgetting
      drops those links right after the delete, and a crash between the two left them (_stale_links_drop).

    Returns the (old id, new id) links it made or released (released: new id ``""``). Idempotent."""
    reader = tenant_es_client(tenant=tenant)
    writer = writer_es_client()
    tenant_id = str(tenant.es_id)
    query = {
        "bool": {
            "filter": [{"term": {"tenant_id": tenant_id}}],
            "should": [{"exists": {"field": name}} for name in ("supersedes", "superseded_by", "proposal_for")],
            "minimum_should_match": 1,
        }
    }
    facts = {hit["_id"]: hit for hit in store.memories_scan(reader, memory_types=store.FACT_TYPES_INDICES, query=query)}
    _fetch_missing(reader, tenant_id, facts)
    stamp = now()
    changes = _stale_links_drop(writer, facts, stamp)
    # Every claimed successor relation, from both ends: old id -> {successor ids}.
    successors: dict[str, set[str]] = {}
    for fact_id, hit in facts.items():
        for old_id in hit["_source"].get("supersedes") or []:
            if old_id in facts:
                successors.setdefault(old_id, set()).add(fact_id)
        for new_id in successors_of(hit["_source"]):
            if new_id != FORGOTTEN_LINK:
                successors.setdefault(fact_id, set()).add(new_id)
    for old_id, named in sorted(successors.items()):
        old = facts.get(old_id)
        if old is None:
            continue
        stored = sorted((n for n in named if n in facts), key=lambda n: (facts[n]["_source"].get("created_at", ""), n))
        dangling = [n for n in successors_of(old["_source"]) if n not in facts and n != FORGOTTEN_LINK]
        if (
            dangling
            and not stored
            and _claim_settled(old["_source"], stamp)
            and _forgotten(tenant, dangling, since=old["_source"].get("supersession_claimed_at")) == set(dangling)
        ):
            # Forgetting the newer version marks this one so right after its delete; a crash between left the
            # id. (A fresh claim may be a new fact under a forgotten id, being stored right now.)
            links.memory_links_forget(
                writer, index=old["_index"], memory_id=old_id, forgotten=dangling,
                modes={"superseded_by": "mark_if_empty"}, created_at=old["_source"].get("created_at"),
            )  # fmt: skip
            changes.append((old_id, FORGOTTEN_LINK))
            continue
        if dangling:
            if not _claim_abandoned(tenant, old["_source"], dangling, stamp):
                continue  # a writer may be storing the new fact right now, or its successor was forgotten
            for missing in dangling:
                store.fact_successor_release(writer, index=old["_index"], old_id=old_id, new_id=missing)
                changes.append((old_id, ""))
            if not stored and _is_archived(old):
                _unarchive(reader, writer, old)
            old["_source"]["superseded_by"] = [n for n in successors_of(old["_source"]) if n in facts]
        if not stored:
            continue
        if len(stored) == 1:
            if successors_of(old["_source"]) != stored and _link(writer, facts, old_id, stored[0], stamp):
                changes.append((old_id, stored[0]))
            continue
        changes += _fork_repair(writer, facts, tenant, old_id, stored, stamp)
    if changes:
        log.warning("repaired %d supersession link(s) in tenant %s", len(changes), tenant.slug)
    return changes


def _fetch_missing(reader: Elasticsearch, tenant_id: str, facts: dict[str, dict[str, Any]]) -> None:
    """Add the old facts that new ones (or pending proposals) name but that were never pointed at anything
    (so the scan missed them)."""
    named = {old for hit in facts.values() for name in _LINKS_BACK for old in links_of(hit["_source"], name)} - set(
        facts
    )
    if not named:
        return
    found = store.memories_fetch(
        reader, ids=sorted(named), memory_types=store.FACT_TYPES_INDICES, filters=[{"term": {"tenant_id": tenant_id}}]
    )
    facts.update({hit["_id"]: hit for hit in found.values()})


_LINKS_BACK = ("supersedes", "proposal_for")


def _stale_links_drop(writer: Elasticsearch, facts: dict[str, dict[str, Any]], stamp: Any) -> list[tuple[str, str]]:
    """Unlink the predecessors that are not there: FORGOTTEN_LINK in their place in ``supersedes``, a
    pending ``proposal_for`` drops them (as forgetting leaves them).

    A supersession claims its old fact before it stores the new one, and a proposal names a fact it read,
    so a named predecessor that is missing was forgotten — once the link is older than CLAIM_GRACE (the
    archive moves a fact copy-first, so a fact is never missing while it moves). A predecessor stored after
    the memory naming it, and not pointing back at it, is not its predecessor: a forgotten id written again
    (the same external id derives it) for an unrelated fact, which the link would otherwise show replaced.
    Returns (named id, "") for every link dropped; ``facts`` is updated."""
    dropped: list[tuple[str, str]] = []
    for memory_id, hit in list(facts.items()):
        for name in _LINKS_BACK:
            named = links_of(hit["_source"], name)
            stale = [old for old in named if _stale_link(facts, hit, old, stamp)]
            if not stale:
                continue
            mode = "mark" if name == "supersedes" else "drop"  # as forgetting leaves them (forget.py)
            links.memory_links_forget(
                writer, index=hit["_index"], memory_id=memory_id, forgotten=stale, modes={name: mode},
                created_at=hit["_source"].get("created_at"),
            )  # fmt: skip
            if mode == "mark":
                hit["_source"][name] = [FORGOTTEN_LINK if old in stale else old for old in named]
            else:
                hit["_source"][name] = [old for old in named if old not in stale]
            dropped += [(old, "") for old in stale]
    return dropped


def _stale_link(facts: dict[str, dict[str, Any]], hit: dict[str, Any], old_id: str, stamp: Any) -> bool:
    if old_id == FORGOTTEN_LINK:
        return False
    written = timestamp(hit["_source"].get("created_at"), field_name="created_at")
    old = facts.get(old_id)
    if old is None:
        return written is not None and stamp - written > CLAIM_GRACE
    if hit["_id"] in successors_of(old["_source"]):
        return False
    old_written = timestamp(old["_source"].get("created_at"), field_name="created_at")
    return written is not None and old_written is not None and old_written > written


def _is_archived(hit: dict[str, Any]) -> bool:
    return hit["_source"].get("memory_type") == "archive"


def _unarchive(reader: Elasticsearch, writer: Elasticsearch, hit: dict[str, Any]) -> None:
    """A released fact the nightly archive had already moved (it looked replaced) goes back to the hot
    index, where current facts live — copy first, delete second, as the archive moves them."""
    whole = store.memory_get_current(reader, index=hit["_index"], memory_id=hit["_id"], include_embedding=True)
    if whole is None or successors_of(whole["_source"]):
        return
    failures = store.memories_bulk_index(
        writer, [("semantic", hit["_id"], {**whole["_source"], "memory_type": "semantic"})]
    )
    if failures:
        raise RuntimeError(f"could not move {hit['_id']} back from the archive: {failures[0][1]}")
    store.memories_delete(writer, [(hit["_index"], hit["_id"])])


def _claim_abandoned(tenant: Tenant, source: dict[str, Any], dangling: list[str], stamp: Any) -> bool:
    """Whether a claim's new fact will never come: claimed longer than CLAIM_GRACE ago, and not a successor
    someone stored and then forgot (forgetting the new version does not bring the old one back). A link
    without a claim time was made by an older version, which stored the new fact first: it is left alone."""
    claimed = source.get("supersession_claimed_at")
    return claimed is not None and _claim_settled(source, stamp) and not _forgotten(tenant, dangling, since=claimed)


def _claim_settled(source: dict[str, Any], stamp: Any) -> bool:
    """Whether no writer can still be storing the fact this one's claim names: claimed longer than
    CLAIM_GRACE ago, or linked by an older version (no claim time), which stored the new fact first."""
    claimed = timestamp(source.get("supersession_claimed_at"), field_name="supersession_claimed_at")
    return claimed is None or stamp - claimed > CLAIM_GRACE


def _forgotten(tenant: Tenant, ids: list[str], *, since: Any = None) -> set[str]:
    """Which of these missing facts were forgotten one by one (memory.forget audits each by id) — after
    ``since`` when given (a claim's time: an id forgotten before it was claimed was written again since)."""
    from tenants.models import AuditRecord

    audited = AuditRecord.objects.filter(tenant=tenant, action="memory.forget")
    after = timestamp(since, field_name="supersession_claimed_at") if since is not None else None
    if after is not None:
        audited = audited.filter(created_at__gte=after)
    return {memory_id for memory_id in ids if audited.filter(target__endswith=f":{memory_id}").exists()}


def _same_owner(facts: dict[str, dict[str, Any]], a: str, b: str) -> bool:
    sa, sb = facts[a]["_source"], facts[b]["_source"]
    return (sa.get("tenant_id"), sa.get("user_id")) == (sb.get("tenant_id"), sb.get("user_id"))


def _link(writer: Elasticsearch, facts: dict[str, dict[str, Any]], old_id: str, new_id: str, stamp: Any) -> bool:
    """Finish a half-linked supersession with the writers' own claim (refused if a writer claimed the old
    fact since this run read it: then it is a fork, for the next run)."""
    if not _same_owner(facts, old_id, new_id):
        return False
    new = facts[new_id]["_source"]
    return store.fact_successor_claim(
        writer,
        index=facts[old_id]["_index"],
        old_id=old_id,
        new_id=new_id,
        at=new.get("created_at") or stamp.isoformat(),
        harsh=new.get("contradiction") == "harsh",
        claimed_at=stamp.isoformat(),
    )


def _head(facts: dict[str, dict[str, Any]], start: str) -> str:
    seen, current = {start}, start
    while True:
        links = [n for n in successors_of(facts[current]["_source"]) if n in facts and n not in seen]
        if not links:
            return current
        current = max(links, key=lambda n: (facts[n]["_source"].get("created_at", ""), n))
        seen.add(current)


def _fork_repair(
    writer: Elasticsearch,
    facts: dict[str, dict[str, Any]],
    tenant: Tenant,
    old_id: str,
    stored: list[str],
    stamp: Any,
) -> list[tuple[str, str]]:
    """``old_id`` has several successors ``stored`` (oldest first): keep the newest, fold the others in."""
    winner = stored[-1]
    losers = [n for n in stored[:-1] if _same_owner(facts, old_id, n)]
    at = stamp.isoformat()
    store.fact_chain_set(writer, index=facts[old_id]["_index"], memory_id=old_id, successor=winner, at=at)
    changes = [(old_id, winner)]
    winner_head = _head(facts, winner)
    folded: list[str] = []
    for loser in losers:
        source = facts[loser]["_source"]
        kept = [o for o in source.get("supersedes") or [] if o != old_id]
        store.fact_chain_set(writer, index=facts[loser]["_index"], memory_id=loser, supersedes=kept, at=at)
        head = _head(facts, loser)
        if head == winner_head:
            continue
        store.fact_chain_set(writer, index=facts[head]["_index"], memory_id=head, successor=winner_head, at=at)
        facts[head]["_source"]["superseded_by"] = [winner_head]
        folded.append(head)
        changes.append((head, winner_head))
    if folded:
        names = facts[winner_head]["_source"].get("supersedes") or []
        names = list(dict.fromkeys([*names, *folded]))
        store.fact_chain_set(writer, index=facts[winner_head]["_index"], memory_id=winner_head, supersedes=names, at=at)
        facts[winner_head]["_source"]["supersedes"] = names
    facts[old_id]["_source"]["superseded_by"] = [winner]
    audit_record(
        tenant=tenant,
        actor="reconciler",
        action="memory.fork_repair",
        target=old_id,
        detail={"kept": winner, "dropped": losers, "superseded_heads": folded, "newest": winner_head},
    )
    return changes
