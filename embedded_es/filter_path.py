"""``filter_path``, applied by the gateway to the answer it sends, never by the engine.

The gateway reads some engine answers before passing them on (get and mget are checked against
DLS by their ``found`` and ``_id`` fields); an engine-side ``filter_path`` could remove exactly the
fields those checks read. So the parameter stays here and is applied last, with Elasticsearch's
rules (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/common-options.html#common-options-response-filtering):
comma-separated dotted paths, ``*`` within a name, ``**`` for any depth, ``-`` to exclude, arrays
filtered element by element, and ``{}`` when nothing is left.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

_MISSING = object()


def _advance(paths: list[list[str]], key: str) -> list[list[str]]:
    """What is left of each path once ``key`` is consumed."""
    out: list[list[str]] = []
    for path in paths:
        head = path[0]
        if head == "**":
            out.append(path)  # ** goes on consuming
            if len(path) > 1 and fnmatchcase(key, path[1]):
                out.append(path[2:])
        elif fnmatchcase(key, head):
            out.append(path[1:])
    return out


def _include(node: Any, paths: list[list[str]]) -> Any:
    if any(not p or p == ["**"] for p in paths):
        return node
    if isinstance(node, list):
        kept = [r for r in (_include(item, paths) for item in node) if r is not _MISSING]
        return kept if kept else _MISSING
    if not isinstance(node, dict):
        return _MISSING
    out = {}
    for key, value in node.items():
        rest = _advance(paths, key)
        if rest:
            kept = _include(value, rest)
            if kept is not _MISSING:
                out[key] = kept
    return out if out else _MISSING


def _exclude(node: Any, paths: list[list[str]]) -> Any:
    if any(not p for p in paths):
        return _MISSING
    if isinstance(node, list):
        return [r for r in (_exclude(item, paths) for item in node) if r is not _MISSING]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        rest = _advance(paths, key)
        kept = _exclude(value, rest) if rest else value
        if kept is not _MISSING:
            out[key] = kept
    return out


def apply(value: Any, spec: str) -> Any:
    expressions = [e for e in spec.split(",") if e]
    includes = [e.split(".") for e in expressions if not e.startswith("-")]
    excludes = [e[1:].split(".") for e in expressions if e.startswith("-") and len(e) > 1]
    out = _include(value, includes) if includes else value
    if out is _MISSING:
        return {}
    if excludes:
        out = _exclude(out, excludes)
    return {} if out is _MISSING else out
