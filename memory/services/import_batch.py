"""What both import formats share (the documented line format, memory/portable/lines.py, and the export
format, memory/portable/importing.py): the report, the checks of a line that do not depend on its format
(unpaired surrogates, supersession cycles within the file), and storing a batch of prepared memories."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from memory.elastic import store

from . import gate
from .non_english_flags import non_english_marked
from .prepare import PreparedMemory, embed_into

BATCH = 200


@dataclass
class ImportReport:
    lines: int = 0
    written: Counter = field(default_factory=Counter)
    # Lines whose memory was stored already with the same content (a file imported again).
    unchanged: Counter = field(default_factory=Counter)
    errors: list[tuple[int, str]] = field(default_factory=list)
    subjects_created: list[str] = field(default_factory=list)
    supersessions: int = 0
    unit: str = "line"  # what an error's number counts: a line of the file, or an item of a converted dump


def has_lone_surrogate(value: Any) -> bool:
    """Whether any string in ``value`` cannot be encoded as UTF-8 (iterative: nesting depth is the input's)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


#: What a line of a fact that supersedes itself, or is on a cycle of supersessions, is told: the REST
#: API's own words for the first (services.writes.fact_write), this module's for the second.
SUPERSEDES_ITSELF = "a fact cannot supersede itself"
SUPERSEDES_A_CYCLE = "supersedes a fact that (indirectly) supersedes it: a cycle"


def supersession_cycle_errors(links: dict[Hashable, tuple[int, list[Hashable]]]) -> list[tuple[int, str]]:
    """The error of each line whose fact supersedes itself, directly or through other facts of the file.

    ``links`` maps each fact of the file (its key) to its line number and the keys it supersedes; keys
    that are not the file's facts are ignored (they name stored facts, which cannot close a cycle)."""
    graph = {key: [target for target in targets if target in links] for key, (_, targets) in links.items()}
    errors = []
    for key in _on_a_cycle(graph):
        errors.append((links[key][0], SUPERSEDES_ITSELF if key in graph[key] else SUPERSEDES_A_CYCLE))
    return sorted(errors)


def _on_a_cycle(graph: dict[Hashable, list[Hashable]]) -> set[Hashable]:
    """The nodes that reach themselves (Kosaraju: a component of several nodes, or one with a self-loop)."""
    replaced_by: dict[Hashable, list[Hashable]] = {node: [] for node in graph}
    for node, targets in graph.items():
        for target in targets:
            replaced_by[target].append(node)
    on_a_cycle: set[Hashable] = set()
    assigned: set[Hashable] = set()
    for root in reversed(_finish_order(graph)):
        if root in assigned:
            continue
        component, pending = {root}, [root]
        assigned.add(root)
        while pending:
            for node in replaced_by[pending.pop()]:
                if node not in assigned:
                    assigned.add(node)
                    component.add(node)
                    pending.append(node)
        if len(component) > 1 or root in graph[root]:
            on_a_cycle |= component
    return on_a_cycle


def _finish_order(graph: dict[Hashable, list[Hashable]]) -> list[Hashable]:
    """The nodes in the order a depth-first walk finishes them: iterative, so a chain as long as the file
    is no recursion."""
    order: list[Hashable] = []
    seen: set[Hashable] = set()
    for root in graph:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(graph[root]))]
        while stack:
            node, targets = stack[-1]
            child = next((t for t in targets if t not in seen), None)
            if child is None:
                stack.pop()
                order.append(node)  # everything it reaches finished before it
            else:
                seen.add(child)
                stack.append((child, iter(graph[child])))
    return order


def prepared_store(
    *, writer: Any, reader: Any, pending: list[tuple[int, PreparedMemory]], report: ImportReport
) -> list[PreparedMemory]:
    """Store a batch of prepared memories (numbered by line or item) in one bulk request, counting each
    in ``report`` as written, unchanged or as that number's error; returns those stored.

    A write never replaces a memory (memory/services/gate.py): a memory already stored under a line's id
    is left as it is — counted ``unchanged`` when the line says the same (a re-imported file), an error
    when it says something else (to change it, supersede it)."""
    fresh: list[tuple[int, PreparedMemory]] = []
    stored_already = _stored_already(reader, [p for _, p in pending])
    for number, item in pending:
        hit = stored_already.get(item.memory_id)
        if hit is None:
            fresh.append((number, item))
        elif gate.same_content(item.memory_type, hit["_source"], item.source):
            report.unchanged[item.memory_type] += 1
        else:
            refusal = gate.existing_refused(
                memory_type=item.memory_type, external_id=item.source.get("external_id") or "", memory_id=hit["_id"]
            )
            report.errors.append((number, refusal.message))
    items = [p for _, p in fresh]
    embed_into(items)
    with non_english_marked(items):
        failures = dict(
            store.memories_bulk_index(writer, [(p.memory_type, p.memory_id, p.source) for p in items], create_only=True)
        )
    stored = []
    for number, item in fresh:
        if item.memory_id in failures:
            report.errors.append((number, f"not stored: {failures[item.memory_id]}"))
        else:
            report.written[item.memory_type] += 1
            stored.append(item)
    return stored


def _stored_already(reader: Any, items: list[PreparedMemory]) -> dict[str, dict[str, Any]]:
    """The stored memories under the ids of ``items`` (a replaced fact may be in the archive)."""
    if not items:
        return {}
    types = {p.memory_type for p in items}
    if "semantic" in types:
        types.add("archive")
    found = store.memories_fetch(
        reader, ids=[p.memory_id for p in items], memory_types=tuple(sorted(types)), filters=[]
    )
    return {i: hit for i, hit in found.items() if hit["_id"] == i}
