"""What one search may cost, checked before the engine does any work (issue 32, finding 8).

A subject's key once sent ``_search`` with 40,000 ``wildcard`` clauses: the engine, which runs one
search at a time and re-analyses every document's text for every full-text clause (docs
"Performance"), was busy for 30 s and every tenant waited. Refused here, before the engine sees it:

- **Elasticsearch's own limits, for every principal** (the superuser's ``_search`` and ``_count``
  too): the clause count — Lucene counts every leaf query of a rewritten query and Elasticsearch 8
  sets the maximum from the heap and the search pool (``SearchUtils.calculateMaxClauseValue``:
  max(1024, heap MB × 64 / search threads)); the gateway takes 1024, the floor every ES 8 node
  keeps, and counts one per leaf clause (one per field of a multi-field query), a lower bound of
  Lucene's count, so whatever it refuses every ES 8 node refuses. The answer is 8.15.2's
  (elastic/elasticsearch#112678, backported in #112952): 400 ``search_phase_execution_exception``
  whose root cause is ``illegal_argument_exception`` "Query rewrite failed: too many clauses",
  caused by ``too_many_nested_clauses``. And ``index.max_regex_length`` (1000) for a ``regexp``
  query's pattern (``RegexpQueryBuilder.doToQuery``).
- **``search.allow_expensive_queries: false`` for API keys** (``SearchService.ALLOW_EXPENSIVE_QUERIES``;
  the field types' messages, ``StringFieldType``, ``ScriptQueryBuilder``, ``ScriptScoreQueryBuilder``):
  ``wildcard``, ``prefix``, ``regexp``, ``fuzzy`` (and ``fuzziness`` on a match query), ``script`` and
  ``script_score`` queries, and wildcard, fuzzy or regex syntax in ``query_string`` /
  ``simple_query_string`` text. Atlas never sends them (memory/elastic/queries.py: ``multi_match``,
  ``term(s)``, ``range``, ``exists``, ``ids``, ``knn``, ``function_score`` whose ``script_score``
  *function* Elasticsearch allows under that setting). A key the superuser minted with metadata
  ``{"embedded_es": {"allow_expensive_queries": true}}`` is exempt (the DLS tests use one).
- **The engine's own bound, for API keys**: at most ``EMBEDDED_ES_MAX_TEXT_CLAUSES`` (32) full-text
  clauses per request (one per field of a multi-field query, an ``_msearch`` counted whole) — each
  costs the engine a pass over every document's text, ≈ 45 µs a document (so 32 over 2,000
  documents ≈ 3 s); Atlas's recall sends one ``multi_match`` of at most nine fields.
- **At most ``EMBEDDED_ES_SEARCHES_PER_KEY`` (4) searches served at once per API key**, four times as
  many waiting for a slot in the gateway (not in the engine's line), and beyond that at once 429
  ``es_rejected_execution_exception`` — Elasticsearch's search pool (its size on a 2-core node:
  ``ThreadPool``, processors × 3 / 2 + 1) and queue, per key; a full queue is 429 there too
  (``ExceptionsHelper.status``: ``EsRejectedExecutionException`` is TOO_MANY_REQUESTS).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

from . import routes
from .errors import EsError
from .principal import Principal
from .privileges import SUPERUSER_DESCRIPTORS
from .query_guard import COMPOUND_QUERIES

MAX_CLAUSE_COUNT = 1024  # SearchUtils.DEFAULT_MAX_CLAUSE_COUNT, the floor of ES 8's computed limit
MAX_REGEX_LENGTH = 1000  # IndexSettings.MAX_REGEX_LENGTH_SETTING's default
TEXT_CLAUSES = 32
SEARCHES_PER_KEY = 4
QUEUE_PER_SLOT = 4  # searches of a key that may wait for each of its slots before the next is refused
_SETTING = "search.allow_expensive_queries"

_COMPOUND = COMPOUND_QUERIES  # where compound queries hold their sub-queries (query_guard's table)
_MULTI_FIELD = {"multi_match", "combined_fields", "query_string", "simple_query_string"}
_TEXT = {
    *_MULTI_FIELD,
    "match",
    "match_phrase",
    "match_phrase_prefix",
    "match_bool_prefix",
    "intervals",
    "more_like_this",
}
_EXPENSIVE = {
    "wildcard": f"[wildcard] queries cannot be executed when '{_SETTING}' is set to false.",
    "regexp": f"[regexp] queries cannot be executed when '{_SETTING}' is set to false.",
    "fuzzy": f"[fuzzy] queries cannot be executed when '{_SETTING}' is set to false.",
    "prefix": (
        f"[prefix] queries cannot be executed when '{_SETTING}' is set to false. "
        "For optimised prefix queries on text fields please enable [index_prefixes]."
    ),
    "script": f"[script] queries cannot be executed when '{_SETTING}' is set to false.",
    "script_score": f"[script score] queries cannot be executed when '{_SETTING}' is set to false.",
}
# Lucene query syntax that makes a query_string build a regexp (/…/), fuzzy (~) or wildcard/prefix (* ?) query.
_SYNTAX = (("/", "regexp"), ("~", "fuzzy"), ("*", "wildcard"), ("?", "wildcard"))
_MATCH_ALL_SYNTAX = re.compile(r"^\s*(\*|\*:\*)\s*$")


class ShardFailure(EsError):
    """A search every shard failed: ``search_phase_execution_exception`` around the shard's error."""

    def __init__(self, root: dict[str, Any], shard_reason: dict[str, Any], index: str) -> None:
        super().__init__(400, "search_phase_execution_exception", "all shards failed")
        self.root = root
        self.shard_reason = shard_reason
        self.index = index

    def body(self) -> dict[str, Any]:
        failed = [{"shard": 0, "index": self.index, "node": "embedded_es", "reason": self.shard_reason}]
        error = {
            "root_cause": [self.root],
            "type": self.error_type,
            "reason": self.reason,
            "phase": "query",
            "grouped": True,
            "failed_shards": failed,
        }
        if self.root["type"] == "illegal_argument_exception":
            error["caused_by"] = self.shard_reason
        return {"error": error, "status": self.status}


def too_many_clauses(index: str, limit: int = MAX_CLAUSE_COUNT) -> ShardFailure:
    reason = "Query rewrite failed: too many clauses"
    cause = {
        "type": "too_many_nested_clauses",
        "reason": f"Query contains too many nested clauses; maxClauseCount is set to {limit}",
    }
    return ShardFailure(
        {"type": "illegal_argument_exception", "reason": reason}, {**_iae(reason), "caused_by": cause}, index
    )


def _iae(reason: str) -> dict[str, Any]:
    return {"type": "illegal_argument_exception", "reason": reason}


def query_shard_failure(index: str, cause_type: str, message: str) -> ShardFailure:
    """What SearchExecutionContext.toQuery makes of an exception thrown while the query is built."""
    root = {
        "type": "query_shard_exception",
        "reason": f"failed to create query: {message}",
        "index_uuid": "_na_",
        "index": index,
    }
    return ShardFailure(root, {**root, "caused_by": {"type": cause_type, "reason": message}}, index)


def _env_int(name: str, default: int) -> int:
    value = int(os.environ.get(name, default))
    if value < 1:
        raise ValueError(f"{name} must be at least 1, not {value}")
    return value


def text_clause_limit() -> int:
    return _env_int("EMBEDDED_ES_MAX_TEXT_CLAUSES", TEXT_CLAUSES)


def expensive_allowed(principal: Principal) -> bool:
    """The superuser, and a key the superuser minted with the exemption in its metadata."""
    record = principal.api_key
    if record is None:
        return principal.permissions.superuser
    wanted = (record.metadata.get("embedded_es") or {}) if isinstance(record.metadata, dict) else {}
    return (
        isinstance(wanted, dict)
        and wanted.get("allow_expensive_queries") is True
        and record.limited_by == [SUPERUSER_DESCRIPTORS]
    )


class Budget:
    """One request's searches, checked against the limits above (an ``_msearch`` shares one)."""

    def __init__(self, principal: Principal | None) -> None:
        """``principal`` None: the superuser, held to Elasticsearch's own limits only."""
        self.restricted = principal is not None and principal.api_key is not None
        self.expensive = principal is None or expensive_allowed(principal)
        self.text_limit = text_clause_limit()
        self.text_clauses = 0

    def check(self, body: dict[str, Any], index: str) -> None:
        """Raise the refusal Elasticsearch (or the engine's bound) gives ``body``; ``index`` names it."""
        for query in _queries(body):
            tally = _Tally()
            tally.walk(query)
            # Elasticsearch's order: while the query is built (a regex's length, then an expensive query),
            # then while it is rewritten (the clause count).
            if tally.long_regex is not None:
                raise query_shard_failure(index, "illegal_argument_exception", _regex_message(tally.long_regex))
            if tally.expensive and not self.expensive:
                raise query_shard_failure(index, "exception", _EXPENSIVE[tally.expensive])
            if tally.leaves > MAX_CLAUSE_COUNT:
                raise too_many_clauses(index)
            self.text_clauses += tally.text
        if self.restricted and self.text_clauses > self.text_limit:
            raise EsError(
                400,
                "illegal_argument_exception",
                f"[embedded_es] this request holds {self.text_clauses} full-text clauses (one per field), more than "
                f"the {self.text_limit} an API key may send (EMBEDDED_ES_MAX_TEXT_CLAUSES): the embedded engine "
                "reads every document's text once per clause",
            )


def _regex_message(length: int) -> str:
    return (
        f"The length of regex [{length}] used in the Regexp Query request has exceeded the allowed maximum of "
        f"[{MAX_REGEX_LENGTH}]. This maximum can be set by changing the [index.max_regex_length] index level setting."
    )


def _queries(body: dict[str, Any]) -> Iterator[Any]:
    """Each query Elasticsearch builds (and rewrites) on its own: the query, post_filter, kNN filters,
    retrievers' queries, rescore and highlight queries, aggregation filters."""
    for key in ("query", "post_filter"):
        if key in body:
            yield body[key]
    yield from _knn_filters(body.get("knn"))
    yield from _retriever_queries(body.get("retriever"))
    rescores = body.get("rescore")
    for rescore in rescores if isinstance(rescores, list) else [rescores]:
        if isinstance(rescore, dict) and isinstance(rescore.get("query"), dict):
            if "rescore_query" in rescore["query"]:
                yield rescore["query"]["rescore_query"]
    for key in ("aggs", "aggregations"):
        yield from _aggregation_queries(body.get(key))


def _knn_filters(knn: Any) -> Iterator[Any]:
    for item in knn if isinstance(knn, list) else [knn]:
        if isinstance(item, dict) and "filter" in item:
            yield {"bool": {"filter": item["filter"]}}


def _retriever_queries(node: Any) -> Iterator[Any]:
    if not isinstance(node, dict) or len(node) != 1:
        return
    ((kind, spec),) = node.items()
    if not isinstance(spec, dict):
        return
    for key in ("query", "filter"):
        if key in spec:
            yield spec[key] if key == "query" else {"bool": {"filter": spec[key]}}
    if kind == "knn":
        yield from _knn_filters(spec)
    for child in spec.get("retrievers") or [] if isinstance(spec.get("retrievers"), list) else []:
        yield from _retriever_queries(child)


def _aggregation_queries(aggs: Any) -> Iterator[Any]:
    if not isinstance(aggs, dict):
        return
    for definition in aggs.values():
        if not isinstance(definition, dict):
            continue
        if "filter" in definition:
            yield definition["filter"]
        filters = definition.get("filters", {}).get("filters") if isinstance(definition.get("filters"), dict) else None
        yield from filters.values() if isinstance(filters, dict) else filters or []
        for sub in ("aggs", "aggregations"):
            yield from _aggregation_queries(definition.get(sub))


class _Tally:
    """Leaf clauses, full-text clauses, the first expensive query and the first over-long regex of one query."""

    def __init__(self) -> None:
        self.leaves = 0
        self.text = 0
        self.expensive: str | None = None
        self.long_regex: int | None = None

    def walk(self, node: Any) -> None:
        stack = [node]
        while stack:
            current = stack.pop()
            for item in current if isinstance(current, list) else [current]:
                if not isinstance(item, dict) or len(item) != 1:
                    continue  # query_guard has refused what is malformed
                ((kind, spec),) = item.items()
                if kind in _COMPOUND and isinstance(spec, dict):
                    stack.extend(spec[slot] for slot in _COMPOUND[kind] if slot in spec)
                    if kind == "script_score":
                        self._note_expensive("script_score")
                    continue
                self._leaf(kind, spec)

    def _leaf(self, kind: str, spec: Any) -> None:
        fields = spec.get("fields") if isinstance(spec, dict) and kind in _MULTI_FIELD else None
        width = len(fields) if isinstance(fields, list) and fields else 1
        self.leaves += width
        if kind in _TEXT:
            self.text += width
        if kind in _EXPENSIVE:
            self._note_expensive(kind)
        elif kind in _TEXT and isinstance(spec, dict):
            self._note_expensive(_text_expense(kind, spec))
        if kind == "regexp" and self.long_regex is None:
            pattern = _single_value(spec)
            if isinstance(pattern, str) and len(pattern) > MAX_REGEX_LENGTH:
                self.long_regex = len(pattern)

    def _note_expensive(self, kind: str | None) -> None:
        if kind is not None and self.expensive is None:
            self.expensive = kind


def _single_value(spec: Any) -> Any:
    """The value of a single-field query: ``{"f": "v"}`` or ``{"f": {"value": "v"}}``."""
    if not isinstance(spec, dict):
        return None
    for key, value in spec.items():
        if key in ("boost", "_name"):
            continue
        return value.get("value") if isinstance(value, dict) else value
    return None


def _text_expense(kind: str, spec: dict[str, Any]) -> str | None:
    """The expensive query a full-text clause builds: fuzziness, or query_string wildcard/fuzzy/regex syntax."""
    if kind in ("query_string", "simple_query_string"):
        text = spec.get("query")
        if not isinstance(text, str) or _MATCH_ALL_SYNTAX.match(text):
            return None
        return next((expense for char, expense in _SYNTAX if char in text), None)
    options = [spec] if kind in _MULTI_FIELD else [v for v in spec.values() if isinstance(v, dict)]
    fuzzy = any(str(o.get("fuzziness", "0")) not in ("0", "") for o in options)
    return "fuzzy" if fuzzy else None


class _KeySlots:
    def __init__(self, slots: int) -> None:
        self.free = asyncio.Semaphore(slots)
        self.waiting = 0
        self.users = 0


class SearchSlots:
    """Per API key, EMBEDDED_ES_SEARCHES_PER_KEY searches served at once and QUEUE_PER_SLOT times as many
    waiting for a slot — Elasticsearch's search pool and its queue, per key — and 429 beyond: one key's
    searches never stand in the engine's line (it runs one search at a time) more than the slots allow."""

    def __init__(self) -> None:
        self.per_key = _env_int("EMBEDDED_ES_SEARCHES_PER_KEY", SEARCHES_PER_KEY)
        self.queue = QUEUE_PER_SLOT * self.per_key
        self._keys: dict[str, _KeySlots] = {}

    @contextlib.asynccontextmanager
    async def slot(self, principal: Principal, action: str) -> AsyncIterator[None]:
        record = principal.api_key
        if record is None:
            yield
            return
        state = self._keys.setdefault(record.id, _KeySlots(self.per_key))
        if state.free.locked() and state.waiting >= self.queue:
            raise EsError(
                429,
                "es_rejected_execution_exception",
                f"rejected execution of [{action}] for API key [{record.id}]: [embedded_es] {self.per_key} "
                f"searches of this key are running and {state.waiting} waiting (EMBEDDED_ES_SEARCHES_PER_KEY)",
            )
        state.users += 1
        try:
            state.waiting += 1
            try:
                await state.free.acquire()
            finally:
                state.waiting -= 1
            try:
                yield
            finally:
                state.free.release()
        finally:
            state.users -= 1
            if not state.users:
                del self._keys[record.id]


#: The requests that hold one of a key's search slots: those that run queries over documents.
SEARCH_ACTIONS = frozenset({routes.SEARCH, routes.MSEARCH, routes.SCROLL, routes.EXPLAIN, routes.VALIDATE_QUERY})


def superuser_check(raw: bytes, index: str) -> None:
    """The superuser's ``_search`` / ``_count`` body, held to Elasticsearch's own limits only; a body that
    does not parse goes on to the engine, which answers it."""
    try:
        body = json.loads(raw)
    except ValueError:
        return
    if isinstance(body, dict):
        Budget(None).check(body, index)
