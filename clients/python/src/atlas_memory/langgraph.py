"""LangGraph: ``AtlasStore``, a ``BaseStore`` kept in Atlas Memory (``pip install
'atlas-memory-client[langgraph]'``)::

    store = AtlasStore(client=Atlas(url, token), async_client=AsyncAtlas(url, token))
    store.put(("alice", "preferences"), "food", {"likes": "pizza"})
    store.get(("alice", "preferences"), "food").value        # {'likes': 'pizza'}
    store.search(("alice",), query="what does alice eat?")   # recall, best first

How LangGraph's model maps onto the API (docs/clients.md "LangGraph" says it for users):

- a namespace is ``(subject, *scope)``: its first label is the subject (one that exists), the rest is a
  scope inside that subject's memories;
- an item is one of the subject's facts. Its ``external_id`` is ``langgraph:`` and a SHA-256 of the scope
  and the key (stable, at most 128 characters whatever the labels), and its text is the JSON object
  ``{"scope": [...], "key": "...", "value": {...}}`` — the API keeps text only, so the value round-trips
  exactly through JSON (insertion order kept), and recall reads the same text;
- ``put`` over an existing key forgets the old fact and writes the new one (a write never replaces a
  stored memory: the 409 says so); ``put(..., None)`` and ``delete`` forget it;
- ``search`` with a query is a recall over the subject's facts (its 50 best, then the scope and the
  filter); without one it lists the subject's facts, newest first; ``list_namespaces`` lists them too;
- TTLs are refused (``supports_ttl`` is False) and ``index`` is ignored: every item's text is embedded.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ._async import AsyncAtlas
from ._client import Atlas
from ._plan import Plan, arun, call, pages, run
from .errors import Conflict, NotFound
from .models import Memory

#: What every item's external id begins with: the store's own facts among the subject's others.
EXTERNAL_ID_PREFIX = "langgraph:"
#: The most hits one recall returns (the API's bound on ``k``): a query search looks at these.
RECALL_K = 50
#: The largest page the API lists.
PAGE_SIZE = 200
#: A query search's default floor on recall's score: below any score recall gives (fused scores are
#: z-scores, negative for a fact below the mean), so every fact recall found is kept, ranked.
NO_FLOOR = -1e6
#: A put that meets a rival put of the same key tries this many times before it lets the 409 through.
PUT_ATTEMPTS = 3


def external_id_of(scope: tuple[str, ...], key: str) -> str:
    """The external id of the item ``key`` in ``scope`` (the namespace less its subject)."""
    named = json.dumps([list(scope), key], ensure_ascii=False, separators=(",", ":"))
    return EXTERNAL_ID_PREFIX + hashlib.sha256(named.encode()).hexdigest()


def text_of(scope: tuple[str, ...], key: str, value: dict[str, Any]) -> str:
    """The fact's text: the item as compact JSON (NaN and non-JSON values are refused)."""
    item = {"scope": list(scope), "key": key, "value": value}
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def item_of(subject: str, memory: Memory, *, score: float | None = None, scored: bool = False) -> Item | None:
    """The store's item a fact holds, or None for a fact the store did not write."""
    if not (memory.external_id or "").startswith(EXTERNAL_ID_PREFIX):
        return None
    try:
        data = json.loads(memory.text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("value"), dict):
        return None
    scope, key = data.get("scope"), data.get("key")
    if not isinstance(scope, list) or not all(isinstance(label, str) for label in scope) or not isinstance(key, str):
        return None
    if external_id_of(tuple(scope), key) != memory.external_id:
        return None  # a fact that claims another item's place
    fields = {
        "namespace": (subject, *scope),
        "key": key,
        "value": data["value"],
        "created_at": memory.created_at,
        "updated_at": memory.created_at,
    }
    return SearchItem(**fields, score=score) if scored else Item(**fields)


def split(namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(subject, scope) of a namespace."""
    labels_check(namespace)
    if not namespace:
        raise InvalidNamespaceError("an AtlasStore namespace begins with the subject's id: (subject, *scope)")
    return namespace[0], tuple(namespace[1:])


def labels_check(namespace: tuple[str, ...]) -> None:
    """LangGraph's rule for labels, for ops sent to ``batch`` directly (its public methods check it too)."""
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidNamespaceError(f"namespace labels are non-empty strings without '.': {namespace!r}")


def matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter on a value: equality, nested objects, and the operators $eq $ne $gt $gte $lt $lte."""
    if isinstance(wanted, dict):
        if any(name.startswith("$") for name in wanted):
            return all(_operator(value, name, operand) for name, operand in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(matches(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return value == wanted


def _operator(value: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return value == operand
    if name == "$ne":
        return value != operand
    comparisons = {
        "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b,
        "$lte": lambda a, b: a <= b,
    }
    if name not in comparisons:
        raise ValueError(f"unsupported filter operator {name!r}")
    if value is None:
        return False
    return comparisons[name](float(value), float(operand))


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == label for p, label in zip(path, labels, strict=True))


class AtlasStore(BaseStore):
    """LangGraph's long-term memory store, kept as the subjects' facts in Atlas Memory.

    ``client`` (``Atlas``) serves ``batch`` (``get``, ``put``, ``search`` …); ``async_client``
    (``AsyncAtlas``) serves ``abatch`` (``aget``, ``aput`` …) without a thread — without it the async
    methods run ``batch`` in one. ``min_score``: a query search's floor on recall's score (by default
    none: every fact recall found, ranked, as LangGraph's own stores answer; None: the server's relevance
    floor, so fewer items, or none, when few fit). The token needs ``read`` and ``write``, and ``forget`` to
    overwrite or delete an item.
    """

    supports_ttl = False

    def __init__(
        self, *, client: Atlas | None = None, async_client: AsyncAtlas | None = None, min_score: float | None = NO_FLOOR
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("AtlasStore needs client=Atlas(...), async_client=AsyncAtlas(...), or both")
        self.client = client
        self.async_client = async_client
        self.min_score = min_score

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.client is None:
            raise ValueError("AtlasStore needs client=Atlas(...) to run synchronously")
        return run(self.client, self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self.async_client is None:
            return await asyncio.to_thread(self.batch, list(ops))
        return await arun(self.async_client, self._batch(list(ops)))

    # --- one batch: its reads see the store as it was, then its puts (the last per key) apply ----------
    def _batch(self, ops: list[Op]) -> Plan[list[Result]]:
        results: list[Result] = [None] * len(ops)
        # Each put's text is made before anything is sent: a value that is not JSON fails the batch whole.
        puts: dict[tuple[tuple[str, ...], str], str | None] = {}
        for index, op in enumerate(ops):
            if isinstance(op, GetOp):
                results[index] = yield from self._get(op)
            elif isinstance(op, SearchOp):
                results[index] = yield from self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[index] = yield from self._list_namespaces(op)
            elif isinstance(op, PutOp):
                _, scope = split(op.namespace)
                text = None if op.value is None else text_of(scope, str(op.key), dict(op.value))
                puts[(tuple(op.namespace), str(op.key))] = text
            else:
                raise ValueError(f"unknown operation {op!r}")
        for (namespace, key), text in puts.items():
            yield from self._put(namespace, key, text)
        return results

    def _get(self, op: GetOp) -> Plan[Item | None]:
        subject, scope = split(op.namespace)
        try:
            memory = yield call("memory_get", subject=subject, memory_id=external_id_of(scope, str(op.key)))
        except NotFound:
            return None
        return item_of(subject, memory)

    def _put(self, namespace: tuple[str, ...], key: str, text: str | None) -> Plan[None]:
        """Store ``text`` (``text_of``) as the item's fact, or forget the item (None)."""
        subject, scope = split(namespace)
        external_id = external_id_of(scope, key)
        if text is None:
            yield from _forget(subject, external_id)
            return
        for attempt in range(PUT_ATTEMPTS):
            try:
                yield call("fact_write", subject=subject, text=text, external_id=external_id)
                return
            except Conflict as exc:
                # The key holds another value: a write never replaces, so the old fact goes first.
                if attempt + 1 == PUT_ATTEMPTS or "external_id" not in {e.field for e in exc.errors}:
                    raise
            yield from _forget(subject, external_id)

    def _search(self, op: SearchOp) -> Plan[list[SearchItem]]:
        labels_check(op.namespace_prefix)
        subjects = yield from self._subjects(op.namespace_prefix[:1])
        query = (op.query or "").strip()
        found: list[Any] = []
        for subject in subjects:
            if query:
                found += yield from self._recalled(subject, query)
            else:
                found += [item_of(subject, m, scored=True) for m in (yield from _facts(subject))]
        items = [
            item
            for item in found
            if item is not None
            and item.namespace[: len(op.namespace_prefix)] == tuple(op.namespace_prefix)
            and all(matches(item.value.get(name), wanted) for name, wanted in (op.filter or {}).items())
        ]
        if query:
            items.sort(key=lambda item: -(item.score or 0.0))  # stable: one subject's keep recall's order
        else:
            items.sort(key=lambda item: item.updated_at, reverse=True)
        return items[op.offset : op.offset + op.limit]

    def _recalled(self, subject: str, query: str) -> Plan[list[SearchItem | None]]:
        try:
            recall = yield call(
                "recall", subject=subject, query=query, types=["semantic"], k=RECALL_K, min_score=self.min_score
            )
        except NotFound:
            return []
        return [item_of(subject, hit, score=hit.score, scored=True) for hit in recall.hits]

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
        conditions = tuple(op.match_conditions or ())
        for condition in conditions:
            labels_check(tuple(label for label in condition.path if label != "*"))
        # A prefix that names its first label names the one subject to read.
        named = next((c.path[:1] for c in conditions if c.match_type == "prefix" and c.path[:1] != ("*",)), ())
        namespaces: set[tuple[str, ...]] = set()
        for subject in (yield from self._subjects(tuple(named))):
            namespaces |= {item.namespace for m in (yield from _facts(subject)) if (item := item_of(subject, m))}
        kept = {ns for ns in namespaces if all(namespace_matches(c, ns) for c in conditions)}
        if op.max_depth is not None:
            kept = {ns[: op.max_depth] for ns in kept}
        return sorted(kept)[op.offset : op.offset + op.limit]

    def _subjects(self, named: tuple[str, ...]) -> Plan[list[str]]:
        """The subject a namespace prefix names, or every subject the token may read."""
        if named:
            return [named[0]]
        me = yield call("me")
        if me.subject:
            return [me.subject]
        return [s.id for s in (yield from pages("subject_list", "subjects", page_size=PAGE_SIZE))]


def _facts(subject: str) -> Plan[list[Memory]]:
    """The subject's current facts, newest first (none for a subject that does not exist)."""
    try:
        return (yield from pages("memory_list", "memories", subject=subject, types=["semantic"], page_size=PAGE_SIZE))
    except NotFound:
        return []


def _forget(subject: str, external_id: str) -> Plan[None]:
    try:
        yield call("memory_forget", subject=subject, memory_id=external_id)
    except NotFound:
        pass  # already gone: deleting is idempotent, as LangGraph's stores are
