"""Which indices a request acts on and what its principal may do there, as Elasticsearch decides it.

The engine's index and alias names (kept between requests: ``EngineNames``), index expressions expanded
and authorised name by name, the DLS query that applies to them, and the documents a search looks up,
fetched as the caller (``Resolver``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from fnmatch import fnmatchcase
from typing import Any

from . import dls, dls_match, query_guard, routes, search_limits
from . import request_parts as parts
from .errors import EsError, security_forbidden, unsupported
from .exchange import Engine, path, with_query
from .journal import READ_ACTIONS
from .principal import Principal
from .privileges import denial_reason

AUTO_CREATE = "indices:admin/auto_create"


def is_pattern(part: str) -> bool:
    return part in ("_all", "*") or "*" in part or "?" in part


def denied(principal: Principal, action: str, indices: list[str]) -> EsError:
    return security_forbidden(denial_reason(principal.describe(), action, indices))


def authorize_cluster(principal: Principal, action: str) -> None:
    if not principal.permissions.allows_cluster(action):
        raise security_forbidden(denial_reason(principal.describe(), action))


# ------------------------------------------------------------------ the engine's names
#: Engine requests that never add, remove or re-point an index or alias name (besides GET and HEAD): those
#: that change nothing the engine persists, and the by-query writes, which change documents only.
_NAME_NEUTRAL = READ_ACTIONS | {routes.DELETE_BY_QUERY, routes.UPDATE_BY_QUERY}
#: Document writes: they may add a name (an index created on first write), never remove or re-point one.
_NAME_ADDING = frozenset({routes.INDEX_OP_INDEX, routes.INDEX_OP_CREATE, routes.UPDATE, routes.DELETE, routes.BULK})


def _name_effect(method: str, path_qs: str) -> tuple[str, str | None]:
    """What an engine request may do to the index and alias names: "none", "add" (with the one name a
    single-document write targets), or "change" (anything not known to be harmless: creating, deleting,
    aliasing, reindexing, every unknown request)."""
    if method in ("GET", "HEAD"):
        return "none", None
    route = routes.classify(method, path_qs)
    if route.action in _NAME_NEUTRAL:
        return "none", None
    if route.action in _NAME_ADDING:
        return "add", None if route.action == routes.BULK else route.index
    return "change", None


def _write_indices(aliases_by_index: Mapping[str, Any]) -> dict[str, str]:
    """{alias: its write index} from ``GET /_alias``: the index marked ``is_write_index``, or the alias's
    only index unless that one is marked false (IndexAbstraction.Alias#getWriteIndex). An alias with no
    write index is left out: a write through it fails in the engine, as in Elasticsearch."""
    members: dict[str, list[tuple[str, Any]]] = {}
    for index, meta in aliases_by_index.items():
        for alias, spec in ((meta or {}).get("aliases") or {}).items():
            members.setdefault(alias, []).append((index, (spec or {}).get("is_write_index")))
    out: dict[str, str] = {}
    for alias, indices in members.items():
        marked = [index for index, flag in indices if flag is True]
        if marked:
            out[alias] = marked[0]
        elif len(indices) == 1 and indices[0][1] is not False:
            out[alias] = indices[0][0]
    return out


class EngineNames:
    """The engine's {index: [aliases]}, kept between requests.

    A single-document write would otherwise ask the engine for it each time (GET /_alias, to know whether
    the write creates an index). Every engine request that may change names is ``watching``: while one is
    in flight no cached map is used or stored, and its end drops the map, so a concurrent alias swap
    (index_reindex) is never answered from a map older than the last change that completed. A document
    write may add a name (a first write creates its index): after one the map is still good for "this
    name exists", and fetched again for anything else.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._cache: dict[str, list[str]] | None = None
        self._write_index: dict[str, str] = {}  # alias → its write index, read with _cache
        self._complete = False
        self._generation = 0
        self._changing = 0

    @contextmanager
    def watching(self, method: str, path_qs: str) -> Iterator[None]:
        """Around every engine request: what it may do to the names decides what is kept of the map."""
        effect, target = _name_effect(method, path_qs)
        if effect == "change":
            self._changing += 1
            self.forget()
        try:
            yield
        finally:
            if effect == "change":
                self._changing -= 1
                self.forget()
            elif effect == "add" and not (target is not None and self.known(target)):
                self._generation += 1
                self._complete = False

    def known(self, name: str) -> bool:
        """Whether the cached map holds ``name`` (as an index or an alias)."""
        cached = self._cache
        if cached is None or self._changing:
            return False
        return name in cached or any(name in aliases for aliases in cached.values())

    def forget(self) -> None:
        self._generation += 1
        self._cache = None
        self._complete = False

    async def read(self) -> tuple[dict[str, list[str]], dict[str, str]]:
        """The alias map and {alias: the index a write through it goes to}, read and cached together."""
        if self._cache is not None and self._complete and not self._changing:
            return self._cache, self._write_index
        generation = self._generation
        resp = await self._engine.engine_json("GET", "/_alias")
        data = resp.json() if resp.status == 200 else {}
        alias_map = {index: sorted((meta or {}).get("aliases", {})) for index, meta in data.items()}
        write_index = _write_indices(data)
        if resp.status == 200 and generation == self._generation and not self._changing:
            self._cache, self._write_index, self._complete = alias_map, write_index, True
        return alias_map, write_index

    async def alias_map(self) -> dict[str, list[str]]:
        """{concrete index: [its aliases]} as the engine knows it now."""
        return (await self.read())[0]

    async def existing(self) -> list[str]:
        alias_map = await self.alias_map()
        names = set(alias_map)
        for aliases in alias_map.values():
            names.update(aliases)
        return sorted(n for n in names if not n.startswith("."))

    async def exists(self, name: str) -> bool:
        if self.known(name):
            return True  # names were at most added since the map was read
        return name in await self.existing()

    async def concrete_one(self, name: str) -> str:
        """The one index behind an alias, or ``name`` itself."""
        alias_map = await self.alias_map()
        behind = [index for index, aliases in alias_map.items() if name in aliases]
        return behind[0] if len(behind) == 1 else name


# ------------------------------------------------------------------ authorisation
class Resolver:
    """Index expressions resolved and authorised for a principal, and what DLS lets it see."""

    def __init__(self, engine: Engine, names: EngineNames) -> None:
        self._engine = engine
        self.names = names

    async def resolve(
        self, principal: Principal, expression: str, action: str, *, allow_no_indices: bool = True
    ) -> list[str]:
        """The names a request acts on, each authorized for ``action``, as Elasticsearch resolves them.

        - No role grants ``action`` on any index: 403 (RBACEngine.authorizeIndexAction, checkIndicesAction).
        - Wildcards expand only to names the principal may act on (IndicesAndAliasesResolver with the
          authorized indices); ``-name`` after a wildcard excludes.
        - Explicit names must each be authorized: 403 naming the refused ones.
        - Nothing left: ``[]`` when the request allows no indices (the caller answers empty),
          otherwise 404 ``index_not_found_exception``.
        """
        if not principal.permissions.grants_somewhere(action):
            raise denied(principal, action, [expression])
        pieces = expression.split(",")
        if any(not p for p in pieces):
            raise unsupported("", expression, "an index expression with an empty name")
        existing: list[str] | None = None
        names: list[str] = []
        refused: list[str] = []
        wildcard_seen = False
        for part in pieces:
            if part.startswith("<") or ":" in part:
                raise unsupported("", part, "date math and remote cluster index expressions")
            if part.startswith("-") and wildcard_seen:
                names = [n for n in names if not fnmatchcase(n, part[1:])]
                continue
            if is_pattern(part):
                wildcard_seen = True
                if existing is None:
                    existing = await self.names.existing()
                pattern = "*" if part == "_all" else part
                names.extend(
                    n for n in existing if fnmatchcase(n, pattern) and principal.permissions.allows_index(action, n)
                )
            elif principal.permissions.allows_index(action, part):
                names.append(part)
            else:
                refused.append(part)
        if refused:
            raise denied(principal, action, refused)
        names = list(dict.fromkeys(names))
        if not names and not allow_no_indices:
            raise EsError(404, "index_not_found_exception", f"no such index [{expression}]")
        return names

    async def single(self, principal: Principal, name: str, action: str) -> str:
        """A single index or alias named exactly (document APIs do not expand wildcards or lists)."""
        if not principal.permissions.grants_somewhere(action):
            # Authorization runs before the request is resolved or validated (RBACEngine.authorizeIndexAction).
            raise denied(principal, action, [name])
        if is_pattern(name) or "," in name:
            bad = parts.invalid_index_name(name)
            raise bad if bad else unsupported("", name, "a document API takes one index name")
        return (await self.resolve(principal, name, action, allow_no_indices=False))[0]

    async def writable(self, principal: Principal, name: str, action: str) -> str:
        """A target a document is written to: authorized, and created only by whoever may create it."""
        name = await self.single(principal, name, action)
        if not await self.names.exists(name):
            parts.raise_if_invalid(name)
            # Creating an index on first write needs a privilege of its own (create_index, auto_configure,
            # manage): TransportBulkAction authorizes indices:admin/auto_create for missing indices.
            if not principal.permissions.allows_index(AUTO_CREATE, name):
                raise denied(principal, AUTO_CREATE, [name])
        return name

    async def dls_for(self, principal: Principal, names: list[str], action: str) -> dict[str, Any] | None:
        per_name = {n: principal.permissions.dls_query(n, action) for n in names}
        if len({json.dumps(q, sort_keys=True) for q in per_name.values()}) <= 1:
            return next(iter(per_name.values()), None)
        # Different restrictions per index: key each on the concrete index name.
        alias_map = await self.names.alias_map()
        per_concrete: dict[str, Any] = {}
        for name, query in per_name.items():
            concrete = [i for i, aliases in alias_map.items() if name in aliases] or [name]
            for index in concrete:
                if index in per_concrete and per_concrete[index] != query:
                    raise unsupported("", name, "one index reached through names with different DLS queries")
                per_concrete[index] = query
        return dls.combine_by_index(per_concrete)

    async def visible(self, index: str, ids: list[str], query: dict[str, Any]) -> set[str]:
        """Which of ``ids`` in ``index`` match the DLS ``query``.

        GET is real-time in Elasticsearch and DLS still applies to it, so a
        document not yet searchable is checked again after a refresh.
        """
        body = {"query": {"bool": {"filter": [{"ids": {"values": ids}}, query]}}, "_source": False, "size": len(ids)}
        search = path([index], "_search")
        resp = await self._engine.engine_json("POST", search, body)
        found = {h["_id"] for h in resp.json()["hits"]["hits"]} if resp.status == 200 else set()
        if len(found) < len(ids):
            await self._engine.engine("POST", path([index], "_refresh"))
            resp = await self._engine.engine_json("POST", search, body)
            found = {h["_id"] for h in resp.json()["hits"]["hits"]} if resp.status == 200 else set()
        return found

    async def visible_found(self, query: dict[str, Any], found: list[dict[str, Any]]) -> set[tuple[str, str]]:
        """Which ``found`` documents — as a get or mget found them: ``_index``, ``_id``, ``_seq_no``,
        ``_primary_term`` and the ``routing`` asked for, if any — match the DLS ``query``, as (index, id).

        Each is decided from its own stored values where that is certain (``dls_match``): the fields the
        query reads, fetched again by id (1 ms, where a search reads the whole index), at the same sequence
        number. The rest — a changed document, a query or mapping ``dls_match`` does not decide — with one
        search per index (``visible``)."""
        decided, undecided = await self._match_by_values(query, found)
        for index in sorted({index for index, _ in undecided}):
            ids = [doc_id for named, doc_id in undecided if named == index]
            decided.update((index, doc_id) for doc_id in await self.visible(index, ids, query))
        return decided

    async def _match_by_values(
        self, query: dict[str, Any], found: list[dict[str, Any]]
    ) -> tuple[set[tuple[str, str]], list[tuple[str, str]]]:
        """(the documents that match, those not decided) by ``dls_match`` over each one's stored values."""
        everything = [(doc["_index"], doc["_id"]) for doc in found]
        fields = dls_match.fields_read(query)
        if not found or any(set(name) & set(",*?") for name in fields):
            return set(), everything
        params = {"_source_includes": ",".join(sorted(fields))} if fields else {"_source": "false"}
        wanted = [{k: doc[k] for k in ("_index", "_id", "routing") if k in doc} for doc in found]
        resp = await self._engine.engine_json("POST", with_query("/_mget", params), {"docs": wanted})
        indices = sorted({doc["_index"] for doc in found})
        mappings = await self._engine.engine("GET", path(indices, "_mapping"))
        if resp.status != 200 or mappings.status != 200:
            return set(), everything
        mapping_of = {name: body.get("mappings") or {} for name, body in mappings.json().items()}
        matched, undecided = set(), []
        for doc, now in zip(found, resp.json()["docs"], strict=True):
            same = now.get("found") and all(
                doc.get(k) is not None and now.get(k) == doc[k] for k in ("_seq_no", "_primary_term")
            )
            verdict = None
            if same and doc["_index"] in mapping_of:
                values = dls_match.Document(
                    doc["_index"], doc["_id"], now.get("_source") or {}, mapping_of[doc["_index"]]
                )
                verdict = dls_match.matches(query, values)
            if verdict is None:
                undecided.append((doc["_index"], doc["_id"]))
            elif verdict:
                matched.add((doc["_index"], doc["_id"]))
        return matched, undecided

    async def fetch_as(self, principal: Principal, index: str, doc_id: str) -> dict[str, Any] | None:
        """A document's source as ``principal`` may read it: None when forbidden by DLS or missing.

        A lookup on an index the principal may not read is a 403, as the GET Elasticsearch runs
        for a terms lookup is authorized as the caller.
        """
        name = await self.single(principal, index, routes.GET)
        resp = await self._engine.engine("GET", path([name], "_doc", doc_id))
        doc = resp.json() if resp.status == 200 else None
        if not doc or not doc.get("found"):
            return None
        query = await self.dls_for(principal, [name], routes.GET)
        if query is not None and (doc["_index"], doc_id) not in await self.visible_found(query, [doc]):
            return None
        return doc.get("_source") or {}

    async def inspect(
        self,
        principal: Principal,
        body: dict[str, Any],
        names: list[str],
        *,
        dls_on: bool,
        count: bool = False,
        budget: search_limits.Budget | None = None,
    ) -> dict[str, Any]:
        """Check a search body (its parts, then what it may cost) and resolve the documents it looks up, as
        the caller. An ``_msearch`` passes one ``budget`` for all its searches."""
        seen = query_guard.check_count(body, dls=dls_on) if count else query_guard.check_search(body, dls=dls_on)
        (budget or search_limits.Budget(principal)).check(body, names[0] if names else "_all")
        for lookup in seen.lookups:
            index = lookup.index
            if index is None:
                if len(names) != 1:
                    raise query_guard.parsing_error("a lookup without [index] needs a search over one index")
                index = names[0]
            lookup.apply(await self.fetch_as(principal, index, lookup.doc_id))
        return query_guard.mlt_finish(body) if seen.lookups else body
