"""Whether one document matches a DLS query, decided from the document itself where that is certain.

A get or mget under document level security must answer a hidden document as a missing one. Asking the
engine costs a search, and on the engine a search reads the whole index whatever it asks (about 17 ms for
1,500 memories with their vectors, docs/embedded-elasticsearch.md), while the get itself takes 1 ms. The
role queries Atlas and most deployments write are a handful of exact clauses on keyword fields (tenant,
user, "no user" for shared documents), which a document's own values decide exactly as Lucene would.

``matches`` answers True, False, or None when it cannot be certain — any clause, option, mapping or value
it does not know — and the caller then asks the engine. Three-valued (Kleene) logic carries an unknown
clause through ``bool`` only where the other clauses cannot settle the answer. What it follows, from the
Elasticsearch 8.15 reference:

- ``term``/``terms`` on a ``keyword`` field match a document when one of its values equals the term
  exactly (query-dsl-term-query.html); a field with ``normalizer``, ``ignore_above``, ``null_value``,
  ``index: false`` or any other option changes what is indexed, so it is not decided here, nor is a field
  that another field copies into (``copy_to``) or that a runtime field shadows.
- ``exists`` matches when the field has an indexed value: not for ``null`` or ``[]``, yes for ``""``
  (query-dsl-exists-query.html).
- ``bool``: a document matches when every ``must``/``filter`` clause does, no ``must_not`` clause does, and
  at least ``minimum_should_match`` ``should`` clauses do; that defaults to 1 when there are ``should``
  clauses and no ``must``/``filter``, else 0 (query-dsl-bool-query.html).
- ``_id`` matches the document's id; ``_index`` its concrete index name (any other name — a pattern, an
  alias — is not decided here).

The values come from the document's ``_source`` as stored, top-level fields only (a dotted name is not
decided). A value that is not a string (a number, a boolean, an object) is not decided.
"""

from __future__ import annotations

from typing import Any

Verdict = bool | None

#: Options of a keyword field that do not change which terms a value indexes as.
_PLAIN_KEYWORD_KEYS = frozenset({"type", "doc_values", "store", "fields", "meta", "eager_global_ordinals"})
_BOOL_KEYS = frozenset({"filter", "must", "should", "must_not", "minimum_should_match", "boost", "_name"})


class Document:
    """One document as the check sees it: its concrete index, id, stored source and that index's mapping
    (the ``mappings`` object of ``GET <index>/_mapping``)."""

    def __init__(self, index: str, doc_id: str, source: dict[str, Any], mapping: dict[str, Any]) -> None:
        self.index, self.doc_id, self.source = index, doc_id, source
        self._properties = mapping.get("properties") or {}
        self._runtime = mapping.get("runtime") or {}
        self._copied_into = _copy_targets(self._properties)

    def keyword_values(self, field: str) -> list[str] | None:
        """The terms ``field`` indexed for this document, or None when that is not certain."""
        if "." in field or field in self._runtime or field in self._copied_into:
            return None
        spec = self._properties.get(field)
        if not isinstance(spec, dict) or spec.get("type") != "keyword" or set(spec) - _PLAIN_KEYWORD_KEYS:
            return None
        value = self.source.get(field)
        values = value if isinstance(value, list) else [value]
        if not all(item is None or isinstance(item, str) for item in values):
            return None
        return [item for item in values if item is not None]


def _copy_targets(properties: dict[str, Any]) -> set[str]:
    """Every field name a ``copy_to`` anywhere in the mapping writes into."""
    found: set[str] = set()
    stack = [properties]
    while stack:
        for spec in stack.pop().values():
            if not isinstance(spec, dict):
                continue
            targets = spec.get("copy_to")
            found.update([targets] if isinstance(targets, str) else targets or [])
            for nested in ("properties", "fields"):
                if isinstance(spec.get(nested), dict):
                    stack.append(spec[nested])
    return found


def matches(query: Any, doc: Document) -> Verdict:
    """True or False when ``doc`` certainly does or does not match ``query``; None when not certain."""
    if not isinstance(query, dict) or len(query) != 1:
        return None
    ((kind, body),) = query.items()
    if not isinstance(body, dict):
        return None
    if kind == "match_all" or kind == "match_none":
        return (kind == "match_all") if set(body) <= {"boost", "_name"} else None
    if kind == "bool":
        return _bool(body, doc)
    if kind == "term":
        return _term(body, doc)
    if kind == "terms":
        return _terms(body, doc)
    if kind == "exists":
        return _exists(body, doc)
    return None


def _clauses(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _bool(body: dict[str, Any], doc: Document) -> Verdict:
    if set(body) - _BOOL_KEYS:
        return None
    required = [matches(q, doc) for key in ("must", "filter") if key in body for q in _clauses(body[key])]
    excluded = [matches(q, doc) for q in _clauses(body.get("must_not", []))]
    optional = [matches(q, doc) for q in _clauses(body.get("should", []))]
    least = _minimum_should_match(
        body.get("minimum_should_match"), has_should=bool(optional), has_required=bool(required)
    )
    if least is None:
        return None
    verdicts = [*required, *(None if v is None else not v for v in excluded)]
    hits, unknown = optional.count(True), optional.count(None)
    if least:
        verdicts.append(True if hits >= least else False if hits + unknown < least else None)
    if False in verdicts:
        return False
    return None if None in verdicts else True


def _minimum_should_match(value: Any, *, has_should: bool, has_required: bool) -> int | None:
    """The number of should clauses a match needs; None for a form not decided here (a percentage, a
    negative count, a combination)."""
    if value is None:
        return 1 if has_should and not has_required else 0
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _field_and_value(body: dict[str, Any], value_key: str) -> tuple[str, Any] | None:
    """The one field of a term-level query and its value (the short form or ``{value: …}``)."""
    fields = [key for key in body if key not in ("boost", "_name")]
    if len(fields) != 1:
        return None
    field, spec = fields[0], body[fields[0]]
    if isinstance(spec, dict):
        if set(spec) - {value_key, "boost", "_name"} or value_key not in spec:
            return None
        spec = spec[value_key]
    return field, spec


def _indexed_terms(field: str, doc: Document) -> list[str] | None:
    if field == "_id":
        return [doc.doc_id]
    if field == "_index":
        return [doc.index]
    return doc.keyword_values(field)


def _any_equal(field: str, wanted: list[Any], doc: Document) -> Verdict:
    if not wanted or not all(isinstance(item, str) for item in wanted):
        return None
    terms = _indexed_terms(field, doc)
    if terms is None:
        return None
    if any(term in wanted for term in terms):
        return True
    # Another name may still be this index (a pattern, an alias, a remote cluster's prefix): not decided.
    return None if field == "_index" else False


def _term(body: dict[str, Any], doc: Document) -> Verdict:
    found = _field_and_value(body, "value")
    if found is None:
        return None
    field, value = found
    return _any_equal(field, [value], doc)


def _terms(body: dict[str, Any], doc: Document) -> Verdict:
    fields = [key for key in body if key not in ("boost", "_name")]
    if len(fields) != 1 or not isinstance(body[fields[0]], list):
        return None  # a terms lookup, or several fields
    return _any_equal(fields[0], body[fields[0]], doc)


def _exists(body: dict[str, Any], doc: Document) -> Verdict:
    field = body.get("field")
    if set(body) - {"field", "boost", "_name"} or not isinstance(field, str) or field in ("_id", "_index"):
        return None
    terms = doc.keyword_values(field)
    return None if terms is None else bool(terms)


def fields_read(query: Any) -> set[str]:
    """The source fields ``matches`` may read for ``query`` (those a term, terms or exists clause names)."""
    found: set[str] = set()
    stack = [query]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for kind, body in node.items():
                if kind in ("term", "terms") and isinstance(body, dict):
                    found.update(key for key in body if key not in ("boost", "_name", "_id", "_index"))
                elif kind == "exists" and isinstance(body, dict) and isinstance(body.get("field"), str):
                    found.add(body["field"])
                else:
                    stack.append(body)
    return found
