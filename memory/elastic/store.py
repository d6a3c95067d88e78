"""Document operations on the memory indices: index, fetch, update scripts, delete, scan.

Writes go through the caller-supplied writer client; reads through the
caller-supplied (subject or tenant) client. Painless sources live here, not in
the services.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from elastic_transport import ApiResponseMeta
from elasticsearch import ApiError, ConflictError, Elasticsearch, NotFoundError, helpers
from elasticsearch.exceptions import HTTP_EXCEPTIONS

from atlas_site.elastic.client import es_errors, write_blocked, write_blocked_message
from atlas_site.errors import DependencyUnavailable, ValidationFailed

from . import queries
from .indices import alias_name, generations_pattern
from .mappings import VECTOR_FIELDS

RETRY_ON_CONFLICT = 20
HOT_TYPES = ("episodic", "semantic", "procedural", "catalog")
FACT_TYPES_INDICES = ("semantic", "archive")

# A fact has at most one successor. A supersession first claims the old fact — this one atomic update
# names its successor — and only then stores the new fact, so of two writers replacing one fact the
# loser is refused before it has written anything. The script refuses (``ctx.op = 'none'``: the update
# API's "noop" result) when another fact already replaced this one; claiming it again for the same
# successor is a noop too — the caller reads the fact to tell the two apart. Elasticsearch runs an
# update's script on the document it just read and writes the result only if the document is still that
# version, re-reading and re-running the script on a version conflict (``retry_on_conflict``): the check
# and the claim are one atomic step. ``claimed_at`` (the time of the claim, not the new fact's possibly
# back-dated ``created_at``) lets the reconciler release a claim whose new fact never arrived.
CLAIM_SCRIPT = """
def links = ctx._source.superseded_by;
if (links != null && !(links instanceof List)) { links = [links]; }
if (links != null && links.size() > 0) { ctx.op = 'none'; return; }
ctx._source.superseded_by = [params.by];
if (ctx._source.superseded_at == null) { ctx._source.superseded_at = params.at; }
ctx._source.supersession_claimed_at = params.claimed_at;
if (params.harsh) { ctx._source.retracted = true; }
if (params.ends != null && ctx._source.valid_to == null) {
  ctx._source.valid_to = params.ends;
  ctx._source.valid_to_by_successor = true;
}
"""
# Undo a claim whose new fact was never stored (refused, failed, or the writer died): the fact is current again.
RELEASE_SCRIPT = """
def links = ctx._source.superseded_by;
if (links != null && !(links instanceof List)) { links = [links]; }
if (links == null || !links.contains(params.by)) { ctx.op = 'none'; return; }
if (links.size() > 1) {
  def kept = new ArrayList();
  for (def x : links) { if (x != params.by) { kept.add(x); } }
  ctx._source.superseded_by = kept;
  return;
}
ctx._source.remove('superseded_by');
ctx._source.remove('superseded_at');
ctx._source.remove('supersession_claimed_at');
ctx._source.retracted = false;
if (ctx._source.valid_to_by_successor == true) {
  ctx._source.remove('valid_to');
  ctx._source.remove('valid_to_by_successor');
}
"""
# The reconciler's repair of a chain older versions forked: the one successor, and the predecessors a fact names.
CHAIN_SET_SCRIPT = """
if (params.successor != null) {
  ctx._source.superseded_by = [params.successor];
  if (ctx._source.superseded_at == null) { ctx._source.superseded_at = params.at; }
}
if (params.supersedes != null) { ctx._source.supersedes = params.supersedes; }
"""


USAGE_SCRIPT = """
ctx._source.use_count = (ctx._source.use_count == null ? 0 : ctx._source.use_count) + params.n;
ctx._source.last_used_at = params.at;
"""
# A change some consolidation run makes (an outcome, a refinement, a confirmation) carries the run's
# event id: applied once, a redelivered run's second attempt is a noop. The last 50 ids are kept.
EVENT_GUARD = """
if (params.event != null) {
  if (ctx._source.applied_events == null) { ctx._source.applied_events = new ArrayList(); }
  if (ctx._source.applied_events.contains(params.event)) { ctx.op = 'none'; return; }
  ctx._source.applied_events.add(params.event);
  if (ctx._source.applied_events.size() > 50) { ctx._source.applied_events.remove(0); }
}
"""
CONFIRM_SCRIPT = (
    EVENT_GUARD
    + """
double c = ctx._source.confidence == null ? 0.0 : ctx._source.confidence;
ctx._source.confidence = Math.min(1.0, Math.round((c + params.boost) * 1000000.0) / 1000000.0);
ctx._source.last_confirmed_at = params.at;
if (ctx._source.source_episodes == null) { ctx._source.source_episodes = new ArrayList(); }
for (def e : params.episodes) {
  if (!ctx._source.source_episodes.contains(e) && ctx._source.source_episodes.size() < 50) {
    ctx._source.source_episodes.add(e);
  }
}
"""
)
OUTCOME_SCRIPT = (
    EVENT_GUARD
    + """
if (params.success == null) {
} else if (params.success) {
  ctx._source.success_count = (ctx._source.success_count == null ? 0 : ctx._source.success_count) + 1;
  ctx._source.last_success_at = params.at;
} else {
  ctx._source.failure_count = (ctx._source.failure_count == null ? 0 : ctx._source.failure_count) + 1;
}
double s = ctx._source.success_count == null ? 0.0 : ctx._source.success_count * 1.0;
double f = ctx._source.failure_count == null ? 0.0 : ctx._source.failure_count * 1.0;
ctx._source.outcome_score = (s + params.prior_s) / (s + f + params.prior_n);
if (params.steps != null) {
  ctx._source.steps = params.steps;
  ctx._source.version = (ctx._source.version == null ? 1 : ctx._source.version) + 1;
  if (params.author != null) {
    ctx._source.authority = params.author.authority;
    ctx._source.written_by = params.author.written_by;
    ctx._source.writer_id = params.author.writer_id;
  }
}
"""
)


def indices_of(memory_types: tuple[str, ...] | list[str]) -> str:
    return ",".join(alias_name(t) for t in memory_types)


def memory_index(
    writer: Elasticsearch,
    *,
    memory_type: str,
    memory_id: str,
    source: dict[str, Any],
    refresh: bool,
    if_version: tuple[int, int] | None = None,
    create_only: bool = False,
) -> bool:
    """Store a memory; with ``if_version`` (seq_no, primary_term) only over that exact version
    (Elasticsearch answers 409 otherwise, raised as ConflictError). ``create_only``: never overwrite —
    False when a memory with that id is already stored (a derived id written before)."""
    if create_only:
        try:
            with es_errors("store a memory"):
                writer.create(
                    index=alias_name(memory_type),
                    id=memory_id,
                    document=source,
                    refresh="wait_for" if refresh else False,
                )
        except ConflictError:
            return False
        return True
    version = {"if_seq_no": if_version[0], "if_primary_term": if_version[1]} if if_version else {}
    with es_errors("store a memory"):
        writer.index(
            index=alias_name(memory_type),
            id=memory_id,
            document=source,
            refresh="wait_for" if refresh else False,
            **version,
        )
    return True


def memory_source_replace(
    writer: Elasticsearch, *, index: str, memory_id: str, source: dict[str, Any], if_version: tuple[int, int]
) -> bool:
    """Store ``source`` over the memory in this concrete ``index`` (any generation), only over the exact
    version that was read; False when it changed or went meanwhile. Forgetting's scrub of the copies of
    a forgotten text inside other memories — never a way to write a memory's content (the write gate)."""
    try:
        with es_errors("rewrite a memory"):
            writer.index(
                index=index,
                id=memory_id,
                document=source,
                refresh="wait_for",
                if_seq_no=if_version[0],
                if_primary_term=if_version[1],
            )
    except ConflictError:
        return False
    return True


def memories_bulk_index(
    writer: Elasticsearch, items: list[tuple[str, str, dict[str, Any]]], *, create_only: bool = False
) -> list[tuple[str, str]]:
    """Index (memory_type, memory_id, source) triples, visible to search when this returns;
    returns (memory_id, error) for the failures. ``create_only``: never over a stored document (a
    stored id is that item's failure, Elasticsearch's version conflict)."""
    op = {"_op_type": "create"} if create_only else {}
    actions = ({"_index": alias_name(t), "_id": i, "_source": s, **op} for t, i, s in items)
    failures = []
    with es_errors("store memories"):
        for ok, result in helpers.streaming_bulk(
            writer, actions, chunk_size=200, raise_on_error=False, raise_on_exception=False, refresh="wait_for"
        ):
            if not ok:
                info = next(iter(result.values()))
                if write_blocked(info.get("error")):  # the whole cluster is refusing writes, not this item
                    raise DependencyUnavailable(write_blocked_message("store memories"))
                failures.append((info.get("_id", "?"), str(info.get("error", "unknown error"))))
    return failures


# The types whose alias names exactly one index at every moment (a reindex swaps it in one atomic alias
# update), so a multi-get may go through it. The archive's alias spans its rollover generations
# (bootstrap.ARCHIVE_POLICY), and Elasticsearch refuses a get through an alias of several indices ("can't
# execute a single index op", per item in an mget): the archive is searched.
SINGLE_INDEX_TYPES = HOT_TYPES


def memories_fetch(
    reader: Elasticsearch,
    *,
    ids: list[str],
    memory_types: tuple[str, ...],
    filters: list[dict[str, Any]],
    versions: bool = False,
) -> dict[str, dict[str, Any]]:
    """{requested id: hit} for the ids the reader may see (DLS) and the filters allow, across
    ``memory_types`` (``versions``: hits carry ``_seq_no``/``_primary_term`` for an optimistic write).

    An id is a memory's own id or the external id its writer gave it (an import's ``id``), so people
    and agents can use the ids they know; callers that write use ``hit["_id"]``. An external id that
    names memories of several types is refused rather than guessed.

    Own ids are first got (one multi-get over the single-index types) when the filters are ones the
    documents decide themselves (``queries.source_predicate``): on the embedded engine a search reads the
    whole index, a get only its document. What that does not find — external ids, and every id in the
    archive — is searched as before; with other filters everything is.
    """
    # FORGOTTEN_LINK stands where a forgotten memory's id was: never looked up (an external id could be
    # that very text, and the memory it names would pass for the forgotten one).
    ids = [i for i in ids if i != queries.FORGOTTEN_LINK]
    if not ids:
        return {}
    owned = queries.source_predicate(filters)
    got_types = [t for t in memory_types if t in SINGLE_INDEX_TYPES] if owned is not None else []
    got = _memories_mget(reader, ids=ids, memory_types=got_types, owned=owned, versions=versions) if owned else {}
    got_ids = {hit["_id"] for hits in got.values() for hit in hits}
    unresolved = [i for i in ids if i not in got_ids]
    searched = _memories_search_by_id(
        reader,
        ids_by_type={t: unresolved if t in got_types else ids for t in memory_types},
        filters=filters,
        versions=versions,
    )
    # In the types' order, as one search per index would list them: a memory stored in two indices at
    # once (an archive move between its copy and its delete) is the copy of the later type, as before.
    hits = [hit for t in memory_types for hit in [*got.get(t, []), *searched.get(t, [])]]
    own = {hit["_id"]: hit for hit in hits}
    found: dict[str, dict[str, Any]] = {}
    for requested in ids:
        if requested in own:
            found[requested] = own[requested]
            continue
        # Only searched hits: an id the multi-get found is resolved, so every external id is searched.
        named = [
            hit for t in memory_types for hit in searched.get(t, []) if hit["_source"].get("external_id") == requested
        ]
        if len(named) > 1:
            raise ValidationFailed(
                f"the id {requested} names {len(named)} memories (one per type): use the memory's own id", field="id"
            )
        if named:
            found[requested] = named[0]
    return found


def _memories_mget(
    reader: Elasticsearch,
    *,
    ids: list[str],
    memory_types: list[str],
    owned: Callable[[dict[str, Any]], bool],
    versions: bool,
) -> dict[str, list[dict[str, Any]]]:
    """memory type → the hits of one real-time multi-get of ``ids`` in each type that ``owned`` accepts, shaped
    as a search's (``_index``, ``_id``, ``_source``; with ``versions`` the version a get carries). A document the
    reader may not see (DLS) answers "not found"; an item that failed (an index missing) is left to the search,
    which fails as it always did."""
    if not memory_types:
        return {}
    docs = [{"_index": alias_name(t), "_id": i} for t in memory_types for i in ids]
    keys = ("_index", "_id", "_source", *(("_seq_no", "_primary_term") if versions else ()))
    with es_errors("read memories"):
        answer = reader.mget(docs=docs, source_excludes=list(VECTOR_FIELDS))
    out: dict[str, list[dict[str, Any]]] = {}
    for (memory_type, _), doc in zip(((t, i) for t in memory_types for i in ids), answer["docs"], strict=True):
        if doc.get("found") and owned(doc["_source"]):
            out.setdefault(memory_type, []).append({k: doc[k] for k in keys if k in doc})
    return out


def _memories_search_by_id(
    reader: Elasticsearch, *, ids_by_type: dict[str, list[str]], filters: list[dict[str, Any]], versions: bool
) -> dict[str, list[dict[str, Any]]]:
    """memory type → the hits of its search for the memories with one of its ids as own or external id."""
    searches = []
    for memory_type, ids in ids_by_type.items():
        if not ids:
            continue
        by_id = {
            "bool": {"should": [{"ids": {"values": ids}}, {"terms": {"external_id": ids}}], "minimum_should_match": 1}
        }
        # Each index holds at most two matches per id: the memory with that id, the one with that external id.
        body: dict[str, Any] = {
            "query": {"bool": {"filter": [by_id, *filters]}},
            "size": 2 * len(ids),
            "_source": {"excludes": VECTOR_FIELDS},
        }
        if versions:
            body["seq_no_primary_term"] = True
        searches.append(((memory_type,), body))
    if not searches:
        return {}
    # One search per index, in one round trip: the embedded engine answers a search over five indices in
    # about twice the time of the five searched one by one (docs/dashboard.md "Page server time"), and
    # Elasticsearch finds the same hits either way.
    responses = memories_msearch(reader, searches=searches, what="read memories")
    return {types[0]: response["hits"]["hits"] for (types, _), response in zip(searches, responses, strict=True)}


def memories_get(
    reader: Elasticsearch, *, ids: list[str], memory_type: str, filters: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """{id: hit} for the memories of one single-index type with these own ids (never an external id) that the
    reader may see (DLS) and the filters allow: one real-time multi-get, nothing searched. The filters must
    be ones the documents decide (``queries.source_predicate``)."""
    owned = queries.source_predicate(filters)
    if owned is None or memory_type not in SINGLE_INDEX_TYPES:
        raise ValueError("memories_get reads one single-index type under filters the documents decide")
    if not ids:
        return {}
    got = _memories_mget(reader, ids=ids, memory_types=[memory_type], owned=owned, versions=False)
    return {hit["_id"]: hit for hit in got.get(memory_type, [])}


def memory_get_current(
    reader: Elasticsearch, *, index: str, memory_id: str, include_embedding: bool = False
) -> dict[str, Any] | None:
    """One memory as it is stored right now (the get API is real-time; a search sees the last refresh),
    with ``_seq_no``/``_primary_term`` for a compare-and-set; None when it is gone or the reader may not
    see it (DLS answers a filtered get with 404)."""
    excludes = None if include_embedding else VECTOR_FIELDS
    try:
        with es_errors("read a memory"):
            response = reader.get(index=index, id=memory_id, source_excludes=excludes)
    except NotFoundError:
        return None
    return response.body if response.get("found") else None


def fact_successor_claim(
    writer: Elasticsearch,
    *,
    index: str,
    old_id: str,
    new_id: str,
    at: str,
    harsh: bool,
    claimed_at: str,
    if_version: tuple[int, int] | None = None,
    ends: str | None = None,
) -> bool:
    """Name ``new_id`` as the one successor of ``old_id`` — unless the fact already has one: then nothing
    changes and this answers False (also when that successor is ``new_id`` itself: the caller reads the
    fact to tell). ``if_version`` (seq_no, primary_term): only over exactly that stored version — a
    compare-and-set; Elasticsearch answers 409 otherwise (ConflictError), and such a write cannot be
    retried on conflict, so the caller re-reads. ``ends``: when the old version stopped holding (its
    successor's stated valid_from), set as its valid_to unless it states one — undone by a release."""
    version = (
        {"if_seq_no": if_version[0], "if_primary_term": if_version[1]}
        if if_version
        else {"retry_on_conflict": RETRY_ON_CONFLICT}
    )
    with es_errors("replace a fact"):
        response = writer.update(
            index=index,
            id=old_id,
            script={
                "source": CLAIM_SCRIPT,
                "params": {"by": new_id, "at": at, "harsh": harsh, "claimed_at": claimed_at, "ends": ends},
            },
            refresh="wait_for",
            **version,
        )
    return response.get("result") != "noop"


def fact_successor_release(writer: Elasticsearch, *, index: str, old_id: str, new_id: str) -> bool:
    """Withdraw ``new_id``'s claim on ``old_id`` (its new fact was never stored); False when it held none."""
    try:
        with es_errors("release a claim on a fact"):
            response = writer.update(
                index=index,
                id=old_id,
                script={"source": RELEASE_SCRIPT, "params": {"by": new_id}},
                retry_on_conflict=RETRY_ON_CONFLICT,
                refresh="wait_for",
            )
    except NotFoundError:
        return False
    return response.get("result") != "noop"


def fact_chain_set(
    writer: Elasticsearch,
    *,
    index: str,
    memory_id: str,
    at: str,
    successor: str | None = None,
    supersedes: list[str] | None = None,
) -> None:
    """Set a fact's one successor and/or the predecessors it names (the reconciler's repair of a fork)."""
    with es_errors("repair a supersession chain"):
        writer.update(
            index=index,
            id=memory_id,
            script={
                "source": CHAIN_SET_SCRIPT,
                "params": {"successor": successor, "supersedes": supersedes, "at": at},
            },
            retry_on_conflict=RETRY_ON_CONFLICT,
            refresh="wait_for",
        )


def memory_usage_bump(writer: Elasticsearch, *, index: str, memory_id: str, at: str, n: int = 1) -> bool:
    """Atomically add ``n`` uses; False when the memory is gone (forgotten meanwhile)."""
    try:
        with es_errors("record memory use"):
            writer.update(
                index=index,
                id=memory_id,
                script={"source": USAGE_SCRIPT, "params": {"n": n, "at": at}},
                retry_on_conflict=RETRY_ON_CONFLICT,
            )
    except NotFoundError:
        return False
    return True


def playbook_outcome_update(
    writer: Elasticsearch,
    *,
    index: str,
    memory_id: str,
    success: bool | None,
    at: str,
    steps: list | None,
    prior_s: int,
    prior_n: int,
    event: str | None = None,
    author: dict[str, str] | None = None,
) -> bool:
    """Count a run (``success`` None: none, only refined ``steps``); False when ``event`` was applied before.
    ``author`` (with ``steps``): who wrote the new steps — ``authority``, ``written_by``, ``writer_id``."""
    with es_errors("record a playbook outcome"):
        response = writer.update(
            index=index,
            id=memory_id,
            script={
                "source": OUTCOME_SCRIPT,
                "params": {
                    "success": success,
                    "at": at,
                    "steps": steps,
                    "author": author,
                    "prior_s": float(prior_s),
                    "prior_n": float(prior_n),
                    "event": event,
                },
            },
            retry_on_conflict=RETRY_ON_CONFLICT,
            refresh="wait_for",
        )
    return response.get("result") != "noop"


def fact_confirm_update(
    writer: Elasticsearch, *, index: str, memory_id: str, boost: float, at: str, episodes: list[str], event: str
) -> bool:
    """Raise a fact's confidence by ``boost`` (capped at 1), stamp ``last_confirmed_at`` and add the
    supporting episodes; once per ``event`` (False when it was applied before)."""
    with es_errors("confirm a fact"):
        response = writer.update(
            index=index,
            id=memory_id,
            script={
                "source": CONFIRM_SCRIPT,
                "params": {"boost": float(boost), "at": at, "episodes": episodes, "event": event},
            },
            retry_on_conflict=RETRY_ON_CONFLICT,
            refresh="wait_for",
        )
    return response.get("result") != "noop"


def memories_vectors(
    reader: Elasticsearch, *, ids: list[str], memory_types: tuple[str, ...], field: str = "embedding"
) -> dict[str, str]:
    """{id: stored vector (hex bytes)} of the memories ``ids`` the reader may see."""
    if not ids:
        return {}
    with es_errors("read memory vectors"):
        response = reader.search(
            index=indices_of(memory_types), query={"ids": {"values": ids}}, size=len(ids), source_includes=[field]
        )
    return {hit["_id"]: hit["_source"][field] for hit in response["hits"]["hits"] if field in hit["_source"]}


def memories_delete(writer: Elasticsearch, targets: list[tuple[str, str]]) -> int:
    """Delete (concrete index, id) pairs; returns how many were deleted (already-gone ones are fine)."""
    if not targets:
        return 0
    actions = ({"_op_type": "delete", "_index": index, "_id": memory_id} for index, memory_id in targets)
    deleted = 0
    with es_errors("delete memories"):
        for ok, result in helpers.streaming_bulk(
            writer, actions, chunk_size=500, raise_on_error=False, refresh="wait_for"
        ):
            info = result["delete"]
            if ok and info.get("result") == "deleted":
                deleted += 1
            elif write_blocked(info.get("error")):
                raise DependencyUnavailable(write_blocked_message("delete memories"))
            elif info.get("status") not in (200, 404):
                raise RuntimeError(f"could not delete {info.get('_id')}: {info.get('error')}")
    return deleted


def memory_delete_versioned(writer: Elasticsearch, *, index: str, memory_id: str, if_version: tuple[int, int]) -> bool:
    """Delete one memory only as it was read (seq_no, primary_term): False when it changed or went since —
    of two decisions on one proposal, exactly one wins."""
    try:
        with es_errors("delete a memory"):
            writer.delete(
                index=index,
                id=memory_id,
                if_seq_no=if_version[0],
                if_primary_term=if_version[1],
                refresh="wait_for",
            )
    except (ConflictError, NotFoundError):
        return False
    return True


def memories_scan(
    reader: Elasticsearch,
    *,
    memory_types: tuple[str, ...],
    query: dict[str, Any],
    page: int = 500,
    include_embedding: bool = False,
    every_generation: bool = False,
    versions: bool = False,
) -> Iterator[dict[str, Any]]:
    """Every matching hit (index, id, source), paged with search_after; ``every_generation`` reads every
    concrete index of the types, not only those behind their aliases (forgetting reaches old versions);
    ``versions``: hits carry ``_seq_no``/``_primary_term`` for a compare-and-set."""
    excludes = [] if include_embedding else VECTOR_FIELDS
    index = generations_pattern(memory_types) if every_generation else indices_of(memory_types)
    after = None
    while True:
        # _id cannot be sorted on (no doc values); memory_id is its keyword copy.
        body: dict[str, Any] = {"query": query, "size": page, "sort": [{"created_at": "asc"}, {"memory_id": "asc"}]}
        if versions:
            body["seq_no_primary_term"] = True
        if after is not None:
            body["search_after"] = after
        with es_errors("list memories"):
            hits = reader.search(index=index, source_excludes=excludes or None, **body)["hits"]["hits"]
        yield from hits
        if len(hits) < page:
            return
        after = hits[-1]["sort"]


def memories_search(
    reader: Elasticsearch, *, memory_types: tuple[str, ...], body: dict[str, Any], what: str = "search memories"
) -> dict[str, Any]:
    with es_errors(what):
        return reader.search(index=indices_of(memory_types), **body).body


def _is_knn(body: dict[str, Any]) -> bool:
    """Whether ``body`` is a kNN leg's search: a ``knn`` query, bare or inside ``function_score``."""
    query = body.get("query") or {}
    return "knn" in query or "knn" in (query.get("function_score") or {}).get("query", {})


def memories_msearch(
    reader: Elasticsearch, *, searches: list[tuple[tuple[str, ...], dict[str, Any]]], what: str = "search memories"
) -> list[dict[str, Any]]:
    """Run ``searches`` in one round trip. A BM25 search over several indices takes its term statistics
    across all of them (dfs_query_then_fetch), so its scores compare from one index to the next; a kNN
    search needs no term statistics (its scores are similarities), so it skips that extra phase.

    A search that failed raises what it would have raised alone (Elasticsearch answers an _msearch 200
    and puts each search's error in its place): a refusal stays an AuthorizationException, a failure of
    the cluster a 503 (``es_errors``; ``what`` names the attempt)."""
    lines: list[dict[str, Any]] = []
    for memory_types, body in searches:
        header: dict[str, Any] = {"index": indices_of(memory_types)}
        if len(memory_types) > 1 and not _is_knn(body):
            header["search_type"] = "dfs_query_then_fetch"
        lines += [header, body]
    with es_errors(what):
        answer = reader.msearch(searches=lines)
        for response in answer["responses"]:
            if "error" in response:
                raise _search_error(answer.meta, response)
    return answer["responses"]


def _search_error(meta: ApiResponseMeta, response: dict[str, Any]) -> ApiError:
    """The client's exception for one failed search of an _msearch, as if it had been sent alone."""
    status = int(response.get("status") or 500)
    error = response["error"]
    alone = ApiResponseMeta(
        status=status, http_version=meta.http_version, headers=meta.headers, duration=meta.duration, node=meta.node
    )
    message = error.get("type", "search failed") if isinstance(error, dict) else str(error)
    return HTTP_EXCEPTIONS.get(status, ApiError)(message=message, meta=alone, body={"error": error, "status": status})


def memories_count(reader: Elasticsearch, *, memory_types: tuple[str, ...], query: dict[str, Any]) -> int:
    with es_errors("count memories"):
        return int(reader.count(index=indices_of(memory_types), query=query)["count"])


def per_subject_counts(reader: Elasticsearch, *, body: dict[str, Any]) -> dict[str, int]:
    """{user_id: document count} from a per_subject_counts_body search of the episodes."""
    with es_errors("count episodes per subject"):
        response = reader.search(index=indices_of(("episodic",)), **body)
    return {bucket["key"]: int(bucket["doc_count"]) for bucket in response["aggregations"]["subjects"]["buckets"]}
