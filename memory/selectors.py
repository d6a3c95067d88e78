"""Reading memories as one subject: recall (hybrid, fused, optionally reranked), list, get, chains.

Every read runs with the subject's own Elasticsearch key (DLS), plus the
application's filter as a second guard.
"""

from __future__ import annotations

from typing import Any

from atlas_site.cursors import MEMORY_SORT, cursor_decode, cursor_encode
from atlas_site.errors import NotFound, ValidationFailed
from memory import recall_constants as rc
from memory.authority import AUTHORED_TYPES, authority_parse, is_pending, memory_authority, memory_etag
from memory.elastic import queries, store
from memory.elastic.mappings import VECTOR_FIELDS
from memory.scope import SubjectScope, tenant_read_filters
from memory.scoping import filters_parse
from memory.validation import list_filters, memory_types_check
from tenants.models import MemorySubject, Tenant

RECALL_TYPES = ("episodic", "semantic", "procedural", "catalog")
TYPE_FIELDS = {
    "episodic": ("role", "event_type", "timestamp", "previous_turn_id", "mentions"),
    "semantic": (
        "fact_type",
        "confidence",
        "source_episodes",
        "last_used_at",
        "use_count",
        "supersedes",
        "superseded_by",
        "superseded_at",
        "retracted",
        "valid_from",
        "valid_to",
        "contradiction",
        "mentions",
    ),
    "procedural": (
        "name",
        "trigger_text",
        "description",
        "steps",
        "version",
        "success_count",
        "failure_count",
        "last_success_at",
        "outcome_score",
        "use_count",
        "last_used_at",
    ),
    "catalog": ("title", "category", "tags"),
}
TYPE_FIELDS["archive"] = TYPE_FIELDS["semantic"]
#: Any memory's scope within its subject (memory/scoping.py), shown as written when it has one.
SHOWN_SCOPE = ("session_id", "agent_id", "app_id", "run_id", "metadata")


def memory_shape(hit: dict[str, Any]) -> dict[str, Any]:
    """The caller's view of a stored memory: id, type, text, timestamps and the type's own fields."""
    source = hit["_source"]
    memory_type = source.get("memory_type", "?")
    out: dict[str, Any] = {
        "id": hit["_id"],
        "type": memory_type,
        "text": source.get("text"),
        "created_at": source.get("created_at"),
        "external_id": source.get("external_id"),
        "user_id": source.get("user_id"),
        "shared": "user_id" not in source,
    }
    for name in (*TYPE_FIELDS.get(memory_type, ()), *SHOWN_SCOPE):
        if name in source:
            out[name] = source[name]
    if memory_type in AUTHORED_TYPES:
        out["authority"] = memory_authority(source)
        out["status"] = memory_status(source)
        for name in ("written_by", "review_state", "proposal_for"):
            if name in source:
                out[name] = source[name]
        if is_pending(source):
            out["version"] = memory_etag(source)
    return out


def memory_status(source: dict[str, Any]) -> str:
    """A fact's or playbook's status: ``pending`` (waiting for review), ``superseded`` (replaced or
    retracted) or ``current``."""
    if is_pending(source):
        return "pending"
    if source.get("superseded_by") or source.get("retracted"):
        return "superseded"
    return "current"


def memory_get(*, subject: MemorySubject, memory_id: Any) -> dict[str, Any]:
    return memory_shape(memory_hit(subject=subject, memory_id=memory_id))


def memory_hit(*, subject: MemorySubject, memory_id: Any) -> dict[str, Any]:
    """The stored hit of one of the subject's memories (or the tenant catalog's), read with its key."""
    scope = SubjectScope.of(subject)
    if not isinstance(memory_id, str) or not memory_id:
        raise ValidationFailed("memory_id is required", field="memory_id")
    found = store.memories_fetch(
        scope.reader(), ids=[memory_id], memory_types=(*RECALL_TYPES, "archive"), filters=scope.read_filters()
    )
    if memory_id not in found:
        raise NotFound(f"no memory {memory_id} for this user", field="memory_id")
    return found[memory_id]


def memory_list(
    *,
    subject: MemorySubject,
    memory_types: Any = None,
    include_superseded: bool = False,
    fact_type: Any = None,
    session_id: Any = None,
    page_size: Any = 50,
    cursor: Any = None,
    since: Any = None,
    until: Any = None,
    authority: Any = None,
    filters: Any = None,
) -> dict[str, Any]:
    """The subject's memories, newest first, ``page_size`` at a time; pass ``next_cursor`` back for more.
    ``authority`` narrows to the facts and playbooks of one authority (memory/authority.py), ``filters``
    to a scope (memory/scoping.py)."""
    scope = SubjectScope.of(subject)
    types = tuple(memory_types) if memory_types else (*RECALL_TYPES, *(("archive",) if include_superseded else ()))
    memory_types_check(types, allowed=(*RECALL_TYPES, "archive"))
    _page_size_check(page_size)
    extra = list_filters(fact_type=fact_type, since=since, until=until) + filters_parse(filters)
    if session_id is not None:
        extra.append(queries.field_equals("session_id", session_id))
    wanted = authority_parse(authority)
    if wanted is not None:
        extra += queries.authority_filter(wanted)
    filters = [
        *scope.read_filters(),
        *queries.visibility_filter(include_superseded=include_superseded, as_of=None),
        *extra,
    ]
    return _page(scope.reader(), types, _newest_first(filters, cursor), page_size)


def _page_size_check(page_size: Any) -> None:
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= 200:
        raise ValidationFailed("page_size must be an integer from 1 to 200", field="page_size")


def _newest_first(filters: list[dict[str, Any]], cursor: Any) -> dict[str, Any]:
    """A list's search body: ``filters``, newest first, after ``cursor`` (a previous page's next_cursor)."""
    body: dict[str, Any] = {
        "query": queries.list_query(filters=filters, memory_types=None),
        "sort": [{"created_at": "desc"}, {"memory_id": "desc"}],
        "_source": {"excludes": VECTOR_FIELDS},
    }
    if cursor is not None:
        body["search_after"] = cursor_decode(cursor, parts=MEMORY_SORT)
    return body


def _page(reader: Any, types: tuple[str, ...], body: dict[str, Any], page_size: int) -> dict[str, Any]:
    """One page of ``body``'s hits. It asks for one hit more than it shows: a cursor only when another
    page holds something, so a list that ends exactly on a page boundary offers no empty next page."""
    response = store.memories_search(reader, memory_types=types, body={**body, "size": page_size + 1})
    hits = response["hits"]["hits"]
    more, hits = len(hits) > page_size, hits[:page_size]
    next_cursor = cursor_encode(hits[-1]["sort"]) if more else None
    return {"memories": [memory_shape(h) for h in hits], "next_cursor": next_cursor}


def catalog_list(*, tenant: Tenant, page_size: Any = 50, cursor: Any = None) -> dict[str, Any]:
    """The tenant's catalog, newest first, read with the tenant's own key."""
    from tenants.selectors import tenant_es_client

    _page_size_check(page_size)
    body = _newest_first(tenant_read_filters(str(tenant.es_id)), cursor)
    return _page(tenant_es_client(tenant=tenant), ("catalog",), body, page_size)


def memory_chain_get(*, subject: MemorySubject, memory_id: Any) -> list[dict[str, Any]]:
    """The supersession chain through ``memory_id``, oldest first, followed both ways across the
    hot index and the archive (abc → xyz → pqr, whichever link you start from)."""
    scope = SubjectScope.of(subject)
    reader = scope.reader()
    seen: dict[str, dict[str, Any]] = {}
    frontier = [memory_id]
    while frontier:
        found = store.memories_fetch(
            reader, ids=frontier, memory_types=store.FACT_TYPES_INDICES, filters=scope.read_filters()
        )
        if memory_id not in found and not seen:
            raise NotFound(f"no fact {memory_id} for this user", field="memory_id")
        next_ids: list[str] = []
        for hit in found.values():
            hit_id = hit["_id"]  # the memory's own id, whichever id named it
            if hit_id in seen:
                continue
            seen[hit_id] = hit
            source = hit["_source"]
            links = list(source.get("supersedes") or []) + list(_as_list(source.get("superseded_by")))
            next_ids += [i for i in links if i not in seen]
        frontier = list(dict.fromkeys(i for i in next_ids if i not in seen))
        if len(seen) > 1000:
            break
    chain = [memory_shape(h) for h in seen.values()]
    return sorted(chain, key=lambda m: (m.get("created_at") or "", m["id"]))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


OWNED_TYPES = ("episodic", "semantic", "procedural", "archive")


def memories_get(*, subject: MemorySubject, memory_ids: list[str]) -> dict[str, dict[str, Any]]:
    """{id: memory} for those of ``memory_ids`` the subject may see, in one read with its key
    (a fact's source episodes, say); ids it may not see, or that were forgotten, are simply absent."""
    scope = SubjectScope.of(subject)
    ids = [i for i in dict.fromkeys(memory_ids) if isinstance(i, str) and i][: 2 * rc.MAX_K]
    found = store.memories_fetch(
        scope.reader(), ids=ids, memory_types=(*RECALL_TYPES, "archive"), filters=scope.read_filters()
    )
    return {requested: memory_shape(hit) for requested, hit in found.items()}


def tenant_memory_counts(*, tenant: Tenant) -> dict[str, int]:
    """How many memories of each type the tenant holds (every subject's, the archive and the catalog), with
    the tenant's own key, in one round trip."""
    from tenants.selectors import tenant_es_client

    types = (*OWNED_TYPES, "catalog")
    body = queries.count_body(filters=[queries.field_equals("tenant_id", str(tenant.es_id))])
    responses = store.memories_msearch(tenant_es_client(tenant=tenant), searches=[((t,), body) for t in types])
    return {t: r["hits"]["total"]["value"] for t, r in zip(types, responses, strict=True)}


def memory_counts(*, subject: MemorySubject) -> dict[str, int]:
    """How many memories the subject owns, counted exactly in one round trip: ``semantic`` counts the
    current facts only, ``replaced`` the older versions still in the hot index, ``archive`` those moved
    out (together: every fact version); the other types all theirs; ``pending`` the facts and playbooks
    waiting for review (counted in no other number)."""
    scope = SubjectScope.of(subject)
    body = queries.count_body(filters=[*scope.read_filters(), queries.NOT_PENDING])
    searches = [((t,), body) for t in OWNED_TYPES]
    current = queries.count_body(
        filters=[*scope.read_filters(), *queries.visibility_filter(include_superseded=False, as_of=None)]
    )
    replaced = queries.count_body(filters=[*scope.read_filters(), queries.NOT_PENDING, *queries.replaced_filter()])
    pending = queries.count_body(filters=[*scope.read_filters(), *queries.pending_filter()])
    searches[OWNED_TYPES.index("semantic")] = (("semantic",), current)
    responses = store.memories_msearch(
        scope.reader(), searches=[*searches, (("semantic",), replaced), (("semantic", "procedural"), pending)]
    )
    counts = {t: r["hits"]["total"]["value"] for t, r in zip(OWNED_TYPES, responses, strict=False)}
    return counts | {
        "replaced": responses[-2]["hits"]["total"]["value"],
        "pending": responses[-1]["hits"]["total"]["value"],
    }


def proposal_hits(*, subject: MemorySubject, written_by: Any = None, limit: int = 500) -> list[dict[str, Any]]:
    """The subject's pending proposals (facts and playbooks waiting for review), oldest first, at most
    ``limit``; ``written_by`` narrows to one writer (``run:<id>``, ``token:<name>``)."""
    scope = SubjectScope.of(subject)
    body = {
        "query": queries.list_query(filters=_proposal_filters(scope, written_by), memory_types=None),
        "sort": [{"created_at": "asc"}, {"memory_id": "asc"}],
        "size": limit,
        "_source": {"excludes": VECTOR_FIELDS},
    }
    return store.memories_search(scope.reader(), memory_types=("semantic", "procedural"), body=body)["hits"]["hits"]


def _proposal_filters(scope: SubjectScope, written_by: Any) -> list[dict[str, Any]]:
    filters = [*scope.read_filters(), *queries.pending_filter()]
    if written_by is not None:
        if not isinstance(written_by, str) or not written_by or len(written_by) > 300:
            raise ValidationFailed("written_by must name a writer (run:<id>, token:<name>)", field="written_by")
        filters.append(queries.field_equals("written_by", written_by))
    return filters


def proposals_list(
    *, subject: MemorySubject, written_by: Any = None, page_size: Any = 50, cursor: Any = None
) -> dict[str, Any]:
    """The subject's pending proposals, newest first, each with ``replaces``: the current facts it would
    replace once accepted (so old and new can be shown side by side)."""
    scope = SubjectScope.of(subject)
    _page_size_check(page_size)
    body = _newest_first(_proposal_filters(scope, written_by), cursor)
    page = _page(scope.reader(), ("semantic", "procedural"), body, page_size)
    wanted = [t for p in page["memories"] for t in p.get("proposal_for") or []]
    found = memories_get(subject=subject, memory_ids=wanted) if wanted else {}
    for proposal in page["memories"]:
        proposal["replaces"] = [found[t] for t in proposal.get("proposal_for") or [] if t in found]
    return {"proposals": page["memories"], "next_cursor": page["next_cursor"]}
