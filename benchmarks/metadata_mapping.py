"""Which mapping makes metadata filters work on every value type: ``flattened`` or typed nested entries.

Starts an embedded Elasticsearch, indexes the same memories under both mappings and runs equality, ``in``,
range and ``exists`` on strings, numbers, booleans and dates; prints one row per (mapping, case) with the
ids found and whether they are the expected ones. docs/scoping.md holds the table and the command::

    .venv/bin/python -m benchmarks.metadata_mapping
"""

from __future__ import annotations

from typing import Any

from elasticsearch import Elasticsearch

from embedded_es import EmbeddedElasticsearch

DOCS: dict[str, dict[str, Any]] = {
    "a": {"priority": 9, "project": "apollo", "urgent": True, "due": "2026-03-01"},
    "b": {"priority": 10, "project": "zeus", "urgent": False, "due": "2026-11-15"},
    "c": {"priority": 2.5, "project": "apollo"},
    "d": {},
}


def _entries(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, value in metadata.items():
        entry: dict[str, Any] = {"key": key}
        if isinstance(value, bool):
            entry["bool"] = value
        elif isinstance(value, int | float):
            entry["num"] = value
        elif len(value) == 10 and value[4] == "-":
            entry["date"] = value
        else:
            entry["kw"] = value
        out.append(entry)
    return out


def _nested(key: str, clause: dict[str, Any] | None) -> dict[str, Any]:
    must: list[dict[str, Any]] = [{"term": {"metadata_entries.key": key}}]
    if clause:
        must.append(clause)
    return {"nested": {"path": "metadata_entries", "query": {"bool": {"filter": must}}}}


# (case, flattened query, nested query, expected ids)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], set[str]]] = [
    (
        "string =",
        {"term": {"metadata.project": "apollo"}},
        _nested("project", {"term": {"metadata_entries.kw": "apollo"}}),
        {"a", "c"},
    ),
    (
        "string in",
        {"terms": {"metadata.project": ["zeus", "hera"]}},
        _nested("project", {"terms": {"metadata_entries.kw": ["zeus", "hera"]}}),
        {"b"},
    ),
    (
        "number =",
        {"term": {"metadata.priority": 10}},
        _nested("priority", {"term": {"metadata_entries.num": 10}}),
        {"b"},
    ),
    (
        "number gte 9",
        {"range": {"metadata.priority": {"gte": 9}}},
        _nested("priority", {"range": {"metadata_entries.num": {"gte": 9}}}),
        {"a", "b"},
    ),
    (
        "number lt 3",
        {"range": {"metadata.priority": {"lt": 3}}},
        _nested("priority", {"range": {"metadata_entries.num": {"lt": 3}}}),
        {"c"},
    ),
    (
        "boolean =",
        {"term": {"metadata.urgent": True}},
        _nested("urgent", {"term": {"metadata_entries.bool": True}}),
        {"a"},
    ),
    (
        "date gte",
        {"range": {"metadata.due": {"gte": "2026-06-01"}}},
        _nested("due", {"range": {"metadata_entries.date": {"gte": "2026-06-01"}}}),
        {"b"},
    ),
    (
        "date gte (other format)",
        {"range": {"metadata.due": {"gte": "2026-06-01T00:00:00Z"}}},
        _nested("due", {"range": {"metadata_entries.date": {"gte": "2026-06-01T00:00:00Z"}}}),
        {"b"},
    ),
    ("exists", {"exists": {"field": "metadata.urgent"}}, _nested("urgent", None), {"a", "b"}),
    (
        "not exists",
        {"bool": {"must_not": [{"exists": {"field": "metadata.urgent"}}]}},
        {"bool": {"must_not": [_nested("urgent", None)]}},
        {"c", "d"},
    ),
]


def _found(es: Elasticsearch, index: str, query: dict[str, Any]) -> set[str] | str:
    try:
        response = es.search(index=index, query=query, size=10)
    except Exception as exc:  # noqa: BLE001 — the row reports what the engine said
        return f"error: {type(exc).__name__}"
    return {hit["_id"] for hit in response["hits"]["hits"]}


def main() -> None:
    server = EmbeddedElasticsearch().start()
    try:
        es = Elasticsearch(server.url, basic_auth=("elastic", server.password), request_timeout=30)
        es.indices.create(index="m-flattened", mappings={"properties": {"metadata": {"type": "flattened"}}})
        es.indices.create(
            index="m-nested",
            mappings={
                "properties": {
                    "metadata": {"type": "object", "enabled": False},
                    "metadata_entries": {
                        "type": "nested",
                        "properties": {
                            "key": {"type": "keyword"},
                            "kw": {"type": "keyword"},
                            "num": {"type": "double"},
                            "date": {"type": "date"},
                            "bool": {"type": "boolean"},
                        },
                    },
                }
            },
        )
        for doc_id, metadata in DOCS.items():
            es.index(index="m-flattened", id=doc_id, document={"metadata": metadata})
            es.index(
                index="m-nested", id=doc_id, document={"metadata": metadata, "metadata_entries": _entries(metadata)}
            )
        es.indices.refresh(index="m-flattened,m-nested")
        print("| case | expected | flattened | typed nested entries |\n|---|---|---|---|")
        for name, flat, nested, expected in CASES:
            row = [name, ",".join(sorted(expected))]
            for index, query in (("m-flattened", flat), ("m-nested", nested)):
                found = _found(es, index, query)
                shown = found if isinstance(found, str) else ",".join(sorted(found)) or "—"
                row.append(f"{shown} {'ok' if found == expected else 'WRONG'}")
            print("| " + " | ".join(row) + " |")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
