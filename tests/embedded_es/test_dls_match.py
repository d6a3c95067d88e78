"""A get or mget under DLS decides a found document from its own values where that is certain
(embedded_es/dls_match.py), and asks the engine otherwise.

The rules the evaluator follows are Elasticsearch 8.15's (query-dsl-term-query.html, query-dsl-terms-query.html,
query-dsl-exists-query.html: ``null`` and ``[]`` have no value, ``""`` has one; query-dsl-bool-query.html:
``minimum_should_match`` defaults to 1 with only ``should`` clauses, else 0). The engine is the reference the
evaluator is checked against: every verdict it gives on random documents and random role-like queries must be
the engine's own answer to the same query.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import BadRequestError, Elasticsearch, NotFoundError

from embedded_es.dls_match import Document, fields_read, matches

from .conftest import Cluster, mint_key
from .documents import read_role, user_dls

MAPPING: dict[str, Any] = {
    "properties": {
        "a": {"type": "keyword"},
        "b": {"type": "keyword", "doc_values": False},
        "n": {"type": "keyword", "normalizer": "lowercase"},
        "capped": {"type": "keyword", "ignore_above": 3},
        "t": {"type": "text"},
        "src": {"type": "keyword", "copy_to": "dst"},
        "dst": {"type": "keyword"},
    }
}
SETTINGS = {"analysis": {"normalizer": {"lowercase": {"type": "custom", "filter": ["lowercase"]}}}}


def doc(source: dict[str, Any], *, index: str = "i", doc_id: str = "d") -> Document:
    return Document(index, doc_id, source, MAPPING)


# ------------------------------------------------------------------ the rules, one by one
@pytest.mark.parametrize(
    ("query", "source", "verdict"),
    [
        ({"term": {"a": "x"}}, {"a": "x"}, True),
        ({"term": {"a": "x"}}, {"a": "X"}, False),  # keyword: exact, case included
        ({"term": {"a": {"value": "x", "boost": 2}}}, {"a": ["y", "x"]}, True),  # any value of an array
        ({"term": {"a": "x"}}, {}, False),
        ({"term": {"a": {"value": "x", "case_insensitive": True}}}, {"a": "X"}, None),  # an option not decided
        ({"terms": {"a": ["x", "z"]}}, {"a": "z"}, True),
        ({"terms": {"a": {"index": "i", "id": "1", "path": "p"}}}, {"a": "z"}, None),  # a terms lookup
        ({"exists": {"field": "a"}}, {"a": ""}, True),  # "" is a value
        ({"exists": {"field": "a"}}, {"a": None}, False),
        ({"exists": {"field": "a"}}, {"a": []}, False),
        ({"exists": {"field": "a"}}, {"a": [None]}, False),
        ({"term": {"a": "1"}}, {"a": 1}, None),  # a number indexed as a keyword: not decided
        ({"term": {"a": 1}}, {"a": "1"}, None),
        ({"term": {"n": "x"}}, {"n": "X"}, None),  # a normalizer changes the term
        ({"exists": {"field": "capped"}}, {"capped": "long"}, None),  # ignore_above leaves it unindexed
        ({"term": {"t": "x"}}, {"t": "x"}, None),  # text is analysed
        ({"term": {"dst": "x"}}, {"src": "x"}, None),  # copy_to writes into it
        ({"term": {"missing_from_mapping": "x"}}, {"missing_from_mapping": "x"}, None),
        ({"term": {"a.b": "x"}}, {"a": {"b": "x"}}, None),  # a dotted path
        ({"term": {"_id": "d"}}, {}, True),
        ({"term": {"_index": "i"}}, {}, True),
        ({"term": {"_index": "other"}}, {}, None),  # an alias or pattern may name the index
        ({"match": {"t": "x"}}, {"t": "x"}, None),
        ({"match_all": {}}, {}, True),
        ({"match_none": {}}, {}, False),
        ({"bool": {}}, {}, True),
        ({"bool": {"should": [{"term": {"a": "x"}}]}}, {"a": "y"}, False),  # only should: one must match
        ({"bool": {"filter": [{"match_all": {}}], "should": [{"term": {"a": "x"}}]}}, {"a": "y"}, True),
        ({"bool": {"should": [{"match": {"t": "x"}}, {"term": {"a": "x"}}]}}, {"a": "x"}, True),  # one is enough
        ({"bool": {"should": [{"match": {"t": "x"}}, {"term": {"a": "x"}}]}}, {"a": "y"}, None),
        ({"bool": {"filter": [{"term": {"a": "y"}}, {"match": {"t": "x"}}]}}, {"a": "x"}, False),  # settled
        ({"bool": {"must_not": {"term": {"a": "x"}}}}, {"a": "x"}, False),
        ({"bool": {"should": [{"term": {"a": "x"}}], "minimum_should_match": "2"}}, {"a": "x"}, False),
        ({"bool": {"should": [{"term": {"a": "x"}}], "minimum_should_match": "50%"}}, {"a": "x"}, None),
    ],
)
def test_a_rule_decides_or_leaves_it_to_the_engine(query: dict, source: dict, verdict: bool | None) -> None:
    assert matches(query, doc(source)) is verdict


def test_the_fields_a_query_reads_are_the_ones_it_names() -> None:
    assert fields_read(user_dls("t1", "u1")) == {"tenant_id", "user_id"}
    assert fields_read({"bool": {"should": [{"terms": {"_index": ["i"]}}, {"exists": {"field": "a"}}]}}) == {"a"}


# ------------------------------------------------------------------ the evaluator against the engine
VALUES: list[Any] = [None, "", "x", "y", "X", ["x", "y"], [], [None], ["y"]]
FIELDS = ("a", "b", "n", "capped", "t", "dst")


def random_source(rng: random.Random) -> dict[str, Any]:
    source: dict[str, Any] = {}
    for field in ("a", "b", "n", "t", "src"):
        if rng.random() < 0.8:
            source[field] = rng.choice(VALUES)
    if rng.random() < 0.5:
        source["capped"] = rng.choice(["ab", "abcd", None])
    return source


def random_query(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    roll = rng.random()
    if depth < 3 and roll < 0.35:
        body: dict[str, Any] = {}
        for key in ("filter", "must", "should", "must_not"):
            if rng.random() < 0.5:
                body[key] = [random_query(rng, depth + 1) for _ in range(rng.randint(1, 3))]
        if "should" in body and rng.random() < 0.4:
            body["minimum_should_match"] = rng.choice([0, 1, 2, "1"])
        return {"bool": body}
    field = rng.choice(FIELDS)
    if roll < 0.6:
        return {"term": {field: rng.choice(["x", "y", "X", "", "ab"])}}
    if roll < 0.75:
        return {"terms": {field: rng.sample(["x", "y", "X", ""], rng.randint(1, 3))}}
    if roll < 0.9:
        return {"exists": {"field": field}}
    return rng.choice([{"match_all": {}}, {"match_none": {}}, {"term": {"_id": "d3"}}])


@pytest.fixture(scope="module")
def random_index(admin: Elasticsearch) -> Iterator[tuple[str, dict[str, dict[str, Any]]]]:
    index = f"dlsmatch-{uuid.uuid4().hex[:8]}"
    admin.indices.create(index=index, mappings=MAPPING, settings=SETTINGS)
    rng = random.Random(20261205)
    sources = {f"d{n}": random_source(rng) for n in range(40)}
    for doc_id, source in sources.items():
        admin.index(index=index, id=doc_id, document=source)
    admin.indices.refresh(index=index)
    yield index, sources
    admin.options(ignore_status=404).indices.delete(index=index)


def test_every_verdict_is_the_engines_answer(admin: Elasticsearch, random_index) -> None:
    """300 random queries over 40 random documents: wherever the evaluator decides, it agrees with the engine,
    and it decides most of them (else the fast path would be a fallback in disguise)."""
    index, sources = random_index
    rng = random.Random(5)
    decided = total = 0
    for _ in range(300):
        query = random_query(rng)
        body = {"bool": {"filter": [query]}}
        hits = admin.search(index=index, query=body, size=100, source=False)["hits"]["hits"]
        engine = {hit["_id"] for hit in hits}
        for doc_id, source in sources.items():
            verdict = matches(query, Document(index, doc_id, source, MAPPING))
            total += 1
            if verdict is not None:
                decided += 1
                assert verdict is (doc_id in engine), (query, doc_id, source)
    assert decided / total > 0.5, f"{decided}/{total} decided"


# ------------------------------------------------------------------ through the gateway
@pytest.fixture(scope="module")
def shared(admin: Elasticsearch) -> Iterator[str]:
    index = f"dlsget-{uuid.uuid4().hex[:8]}"
    admin.indices.create(
        index=index,
        mappings={
            "properties": {"tenant_id": {"type": "keyword"}, "user_id": {"type": "keyword"}, "text": {"type": "text"}}
        },
    )
    docs = {
        "mine": {"tenant_id": "t1", "user_id": "u1", "text": "apple"},
        "theirs": {"tenant_id": "t1", "user_id": "u2", "text": "apple"},
        "catalog": {"tenant_id": "t1", "text": "apple"},
        "other-tenant": {"tenant_id": "t2", "user_id": "u1", "text": "apple"},
        "no-tenant": {"user_id": "u1", "text": "apple"},
    }
    for doc_id, source in docs.items():
        admin.index(index=index, id=doc_id, document=source)  # not refreshed: a get is real-time
    yield index
    admin.options(ignore_status=404).indices.delete(index=index)


@pytest.mark.parametrize(
    "role_query",
    [
        user_dls("t1", "u1"),  # decided from the documents' values
        {"bool": {"filter": [user_dls("t1", "u1"), {"match": {"text": "apple"}}]}},  # left to the engine
    ],
    ids=["decided", "engine"],
)
def test_get_and_mget_show_what_the_role_shows_and_nothing_else(
    admin: Elasticsearch, cluster: Cluster, shared: str, role_query: dict
) -> None:
    """The attack: a key for u1 of t1 names every id in the index, before any refresh."""
    u1 = cluster.with_key(mint_key(admin, "u1", read_role([shared], role_query)))
    answers = u1.mget(index=shared, ids=["mine", "theirs", "catalog", "other-tenant", "no-tenant", "absent"])
    assert [(d["_id"], d["found"]) for d in answers["docs"]] == [
        ("mine", True),
        ("theirs", False),
        ("catalog", True),
        ("other-tenant", False),
        ("no-tenant", False),
        ("absent", False),
    ]
    assert all(set(d) == {"_index", "_id", "found"} for d in answers["docs"] if not d["found"])
    assert u1.get(index=shared, id="mine", source_includes=["text"])["_source"] == {"text": "apple"}
    for hidden in ("theirs", "other-tenant", "no-tenant"):
        with pytest.raises(NotFoundError):
            u1.get(index=shared, id=hidden)


def test_a_document_changed_to_another_user_is_hidden_from_then_on(
    admin: Elasticsearch, cluster: Cluster, shared: str
) -> None:
    u1 = cluster.with_key(mint_key(admin, "u1", read_role([shared], user_dls("t1", "u1"))))
    admin.index(index=shared, id="moving", document={"tenant_id": "t1", "user_id": "u1"})
    assert u1.get(index=shared, id="moving")["found"] is True
    admin.index(index=shared, id="moving", document={"tenant_id": "t1", "user_id": "u2"})
    assert u1.mget(index=shared, ids=["moving"])["docs"][0]["found"] is False


def test_an_mget_item_through_an_alias_of_several_indices_fails_alone(admin: Elasticsearch, cluster: Cluster) -> None:
    """Elasticsearch refuses a single-index operation through an alias of several indices, per mget item
    (concreteSingleIndex: "alias [..] has more than one index associated with it"). The gateway sends every
    item with its own index, which the engine refuses the same way; the engine's ``ids`` form with the alias
    in the path answers from one of the indices instead, a form only the superuser's requests reach. A get
    is refused too. (memories_fetch keeps the archive, an alias of its rollover generations, on the search
    path for this reason.)"""
    prefix = f"twin-{uuid.uuid4().hex[:8]}"
    first, second, alias = f"{prefix}-a", f"{prefix}-b", f"{prefix}-alias"
    reader = cluster.with_key(mint_key(admin, "twin-reader", read_role([f"{prefix}-*"])))
    for index, doc_id in ((first, "x"), (second, "y")):
        admin.index(index=index, id=doc_id, document={"v": doc_id}, refresh=True)
    admin.indices.update_aliases(
        actions=[{"add": {"index": first, "alias": alias}}, {"add": {"index": second, "alias": alias}}]
    )
    try:
        docs = reader.mget(index=alias, ids=["x", "y"])["docs"]
        reason = f"alias [{alias}] has more than one index associated with it [{', '.join(sorted([first, second]))}]"
        assert [(d["_id"], d["error"]["type"], d["error"]["reason"].startswith(reason)) for d in docs] == [
            ("x", "illegal_argument_exception", True),
            ("y", "illegal_argument_exception", True),
        ]
        assert reader.mget(docs=[{"_index": first, "_id": "x"}])["docs"][0]["found"] is True
        with pytest.raises(BadRequestError, match="more than one index"):
            reader.get(index=alias, id="x")
    finally:
        admin.options(ignore_status=404).indices.delete(index=[first, second])
