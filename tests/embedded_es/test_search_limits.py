"""One search cannot take the engine from every tenant (issue 32, finding 8; embedded_es/search_limits.py).

A subject's own key once sent ``_search`` with 40,000 ``wildcard`` clauses (1.3 MB): the engine, which
runs one search at a time, was busy for 30 s and another tenant's recall got a 503. Elasticsearch
refuses such searches before running them, and so does the gateway now, with Elasticsearch's answers:

- the clause count: ``IndexSearcher.maxClauseCount``, which Elasticsearch 8 computes as
  max(1024, heap MB × 64 / search threads) (``server/.../search/SearchUtils.java``,
  ``calculateMaxClauseValue``; reference: "Search settings", ``indices.query.bool.max_clause_count``
  is deprecated and ignored); 8.15.2 answers 400 ``search_phase_execution_exception`` with the root
  cause ``illegal_argument_exception`` "Query rewrite failed: too many clauses", caused by
  ``too_many_nested_clauses`` (elastic/elasticsearch#112678, backported in #112952);
- ``index.max_regex_length`` (1000; reference "Index modules", ``RegexpQueryBuilder.doToQuery``);
- ``search.allow_expensive_queries: false`` (reference "Query DSL" > "Allow expensive queries";
  the messages of ``StringFieldType``, ``ScriptQueryBuilder``, ``ScriptScoreQueryBuilder``), applied to
  API keys: Atlas's keys never send those queries (memory/elastic/queries.py), and the superuser
  stays held to Elasticsearch's own limits only;
- a full search pool and queue answer 429 ``es_rejected_execution_exception`` (``ExceptionsHelper.status``:
  ``EsRejectedExecutionException`` is TOO_MANY_REQUESTS; reference "Thread pools": ``search``, size
  processors × 3 / 2 + 1, queue 1,000): here per key, ``EMBEDDED_ES_SEARCHES_PER_KEY`` searches
  served and four times as many waiting.

"Before any work" is shown without timing: the refusals below come back while the engine process is
stopped (SIGSTOP), so the engine cannot have seen them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from elasticsearch import ApiError, Elasticsearch

from atlas_site.elastic.keys import owner_filter
from embedded_es import EmbeddedElasticsearch
from memory.elastic.queries import bm25_leg, knn_leg, ranking_functions
from tests.processes import paused

from .conftest import Cluster, engine_pids, mint_key, needs_embedded

pytestmark = needs_embedded

INDEX = "limits-memories"
ALLOWED = "[{}] queries cannot be executed when 'search.allow_expensive_queries' is set to false."
MAPPINGS = {
    "properties": {
        "tenant_id": {"type": "keyword"},
        "user_id": {"type": "keyword"},
        "memory_type": {"type": "keyword"},
        "text": {"type": "text", "analyzer": "english", "fields": {"exact": {"type": "text"}}},
        "timestamp": {"type": "date"},
        "use_count": {"type": "integer"},
        "embedding": {"type": "dense_vector", "dims": 3, "element_type": "byte", "similarity": "cosine"},
    }
}
DOCS = {
    "t1-u1-pie": {"tenant_id": "t1", "user_id": "u1", "memory_type": "semantic", "text": "I bake apple pie"},
    "t1-u2-tea": {"tenant_id": "t1", "user_id": "u2", "memory_type": "semantic", "text": "u2 drinks apple tea"},
    "t1-cat": {"tenant_id": "t1", "memory_type": "catalog", "text": "The apple orchard opens in May"},
    "t2-u9": {"tenant_id": "t2", "user_id": "u9", "memory_type": "semantic", "text": "another tenant's apple"},
}


def _subject_role(user_id: str) -> dict:
    """The app's subject reader role (atlas_site/elastic/keys.py subject_reader_role), over this test's index."""
    query = owner_filter(tenant_id="t1", user_id=user_id)
    return {"atlas_subject_reader": {"indices": [{"names": [INDEX], "privileges": ["read"], "query": query}]}}


def _plant(admin: Elasticsearch) -> None:
    if admin.indices.exists(index=INDEX):
        return
    admin.indices.create(index=INDEX, mappings=MAPPINGS)
    for doc_id, doc in DOCS.items():
        admin.index(index=INDEX, id=doc_id, document={**doc, "embedding": "7f0000"})
    admin.indices.refresh(index=INDEX)


@pytest.fixture(scope="module")
def world(cluster: Cluster, admin: Elasticsearch) -> dict[str, Elasticsearch]:
    _plant(admin)
    return {
        "admin": admin,
        "subject": Elasticsearch(cluster.url, api_key=mint_key(admin, "limits-u1", _subject_role("u1")), max_retries=0),
        "exempt": Elasticsearch(
            cluster.url,
            api_key=mint_key(
                admin,
                "limits-exempt",
                _subject_role("u1"),
                metadata={"embedded_es": {"allow_expensive_queries": True}},
            ),
            max_retries=0,
        ),
    }


@contextmanager
def _engine_stopped(cluster: Cluster) -> Iterator[None]:
    [engine] = engine_pids(cluster.server.data_dir)
    with paused(engine):
        yield


def _refusal(client: Elasticsearch, **search) -> ApiError:
    with pytest.raises(ApiError) as info:
        client.options(request_timeout=5).search(index=INDEX, **search)
    return info.value


def _shard_cause(error: ApiError) -> dict:
    """The cause of the (single) shard failure of a search_phase_execution_exception."""
    assert error.meta.status == 400, error.body
    assert error.body["error"]["type"] == "search_phase_execution_exception", error.body
    [failure] = error.body["error"]["failed_shards"]
    return failure["reason"]


def test_forty_thousand_wildcard_clauses_from_a_subject_key_are_refused_before_the_engine_works(
    cluster: Cluster, world: dict[str, Elasticsearch]
) -> None:
    """The finding's request (40,000 wildcard clauses, ≈ 1.3 MB) answered while the engine is stopped: the
    first wildcard clause is refused while the query is built, as Elasticsearch refuses it with
    ``search.allow_expensive_queries: false``."""
    subject = world["subject"]
    should = [{"wildcard": {"text": f"*{i:05d}*x?y*"}} for i in range(40_000)]
    subject.search(index=INDEX, query={"match": {"text": "apple"}})  # the gateway knows the index names now
    with _engine_stopped(cluster):
        error = _refusal(subject, query={"bool": {"should": should}})
    reason = _shard_cause(error)
    assert reason["type"] == "query_shard_exception"
    assert reason["caused_by"] == {"type": "exception", "reason": ALLOWED.format("wildcard")}
    assert error.body["error"]["root_cause"][0]["type"] == "query_shard_exception"


@pytest.mark.parametrize("who", ["admin", "subject"])
def test_more_clauses_than_elasticsearch_allows_are_refused_for_every_principal(
    cluster: Cluster, world: dict[str, Elasticsearch], who: str
) -> None:
    """1,025 leaf clauses is past the smallest maxClauseCount any ES 8 node has (1024); the superuser too."""
    client = world[who]
    client.search(index=INDEX, query={"match_all": {}})
    too_many = {"bool": {"should": [{"term": {"tenant_id": f"t{i}"}} for i in range(1025)]}}
    with _engine_stopped(cluster):
        error = _refusal(client, query=too_many)
    reason = _shard_cause(error)
    assert error.body["error"]["root_cause"] == [
        {"type": "illegal_argument_exception", "reason": "Query rewrite failed: too many clauses"}
    ]
    assert reason["caused_by"] == {
        "type": "too_many_nested_clauses",
        "reason": "Query contains too many nested clauses; maxClauseCount is set to 1024",
    }
    at_limit = {"bool": {"should": [{"term": {"tenant_id": f"t{i}"}} for i in range(1024)]}}
    assert client.search(index=INDEX, query=at_limit)["hits"]["total"]["value"] >= 1


def test_a_regexp_longer_than_index_max_regex_length_is_refused(
    cluster: Cluster, world: dict[str, Elasticsearch]
) -> None:
    admin = world["admin"]
    admin.search(index=INDEX, query={"match_all": {}})
    with _engine_stopped(cluster):
        error = _refusal(admin, query={"regexp": {"text": "a" * 1001}})
    assert _shard_cause(error)["caused_by"] == {
        "type": "illegal_argument_exception",
        "reason": "The length of regex [1001] used in the Regexp Query request has exceeded the allowed maximum "
        "of [1000]. This maximum can be set by changing the [index.max_regex_length] index level setting.",
    }
    assert admin.search(index=INDEX, query={"regexp": {"text": "a" * 1000}})["hits"]["total"]["value"] == 0


@pytest.mark.parametrize(
    ("query", "refused_as"),
    [
        ({"wildcard": {"text": "app*"}}, "wildcard"),
        ({"prefix": {"text": "app"}}, "prefix"),
        ({"regexp": {"text": "app.*"}}, "regexp"),
        ({"fuzzy": {"text": "appel"}}, "fuzzy"),
        ({"match": {"text": {"query": "appel", "fuzziness": "AUTO"}}}, "fuzzy"),
        ({"multi_match": {"query": "appel", "fields": ["text"], "fuzziness": 1}}, "fuzzy"),
        ({"query_string": {"query": "text:app*"}}, "wildcard"),
        ({"simple_query_string": {"query": "appel~1", "fields": ["text"]}}, "fuzzy"),
        ({"script": {"script": {"source": "doc['use_count'].size() == 0"}}}, "script"),
        ({"script_score": {"query": {"match_all": {}}, "script": {"source": "1.0"}}}, "script score"),
    ],
)
def test_queries_the_app_never_sends_are_refused_for_the_keys_it_mints(
    world: dict[str, Elasticsearch], query: dict, refused_as: str
) -> None:
    error = _refusal(world["subject"], query={"bool": {"filter": [{"term": {"tenant_id": "t1"}}, query]}})
    reason = _shard_cause(error)["caused_by"]
    assert reason["type"] == "exception"
    assert reason["reason"].startswith(ALLOWED.format(refused_as).rstrip("."))
    # The superuser, and a key it minted with the exemption, are not held to it (ES's default is true):
    # the engine answers them (noida has no [script] query, and says so).
    for client in (world["admin"], world["exempt"]):
        try:
            client.search(index=INDEX, query=query)
        except ApiError as exc:
            assert exc.body["error"] == {
                "root_cause": [{"type": "parsing_exception", "reason": "unknown query [script]"}],
                "type": "parsing_exception",
                "reason": "unknown query [script]",
            }


def test_a_uri_search_with_wildcard_syntax_is_refused_for_a_minted_key(world: dict[str, Elasticsearch]) -> None:
    error = _refusal(world["subject"], q="text:app*")
    assert _shard_cause(error)["caused_by"]["reason"] == ALLOWED.format("wildcard")


def test_more_full_text_clauses_than_the_engine_bound_are_refused_for_a_key(world: dict[str, Elasticsearch]) -> None:
    """The engine re-reads every document's text per full-text clause: a key may send 32 per request (an
    _msearch counted whole); recall sends one multi_match of at most nine fields."""
    subject = world["subject"]
    many = {"bool": {"should": [{"match": {"text": f"apple {i}"}} for i in range(33)]}}
    error = _refusal(subject, query=many)
    assert error.meta.status == 400
    assert error.body["error"]["type"] == "illegal_argument_exception"
    assert "EMBEDDED_ES_MAX_TEXT_CLAUSES" in error.body["error"]["reason"]
    half = {"bool": {"should": [{"match": {"text": f"apple {i}"}} for i in range(20)]}}
    answer = subject.msearch(searches=[{"index": INDEX}, {"query": half}, {"index": INDEX}, {"query": half}])
    first, second = answer["responses"]
    assert first["status"] == 200 and first["hits"]["total"]["value"] == 2
    assert second["status"] == 400 and second["error"]["type"] == "illegal_argument_exception"
    assert world["admin"].search(index=INDEX, query=many)["hits"]["total"]["value"] == 4


def test_a_recall_shaped_search_still_works(world: dict[str, Elasticsearch]) -> None:
    """The BM25 and kNN legs as memory/elastic/queries.py builds them (function_score with decay, the use
    boost's script_score function, the catalog prior), in one _msearch, with the subject's own key."""
    functions = ranking_functions(
        origin="2026-12-04T00:00:00Z", decay=True, use_boost=True, catalog_prior=True, outcome=True
    )
    filters = [owner_filter(tenant_id="t1", user_id="u1")]
    bm25 = bm25_leg(
        memory_types=("semantic", "catalog", "procedural"),
        text="apple pie",
        filters=filters,
        functions=functions,
        size=10,
    )
    knn = knn_leg(vector=[1.0, 0.0, 0.0], filters=filters, functions=functions, size=10)
    answer = world["subject"].msearch(searches=[{"index": INDEX}, bm25, {"index": INDEX}, knn])
    lexical, dense = answer["responses"]
    assert {h["_id"] for h in lexical["hits"]["hits"]} == {"t1-u1-pie", "t1-cat"}
    assert {h["_id"] for h in dense["hits"]["hits"]} == {"t1-u1-pie", "t1-cat"}


def test_searches_beyond_a_keys_cap_get_429_while_another_keys_search_is_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With EMBEDDED_ES_SEARCHES_PER_KEY=2 and the engine stopped (so searches stay in flight), a key has two
    searches at the engine and eight waiting in the gateway; its eleventh is answered 429 at once in
    Elasticsearch's rejection shape. Another key's search is not held behind them: it is served once the
    engine runs again, and so are the first key's ten."""
    monkeypatch.setenv("EMBEDDED_ES_SEARCHES_PER_KEY", "2")
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    try:
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        _plant(admin)
        busy_key = mint_key(admin, "busy", _subject_role("u1"))
        busy = Elasticsearch(server.url, api_key=busy_key, max_retries=0)
        other = Elasticsearch(server.url, api_key=mint_key(admin, "other", _subject_role("u2")), max_retries=0)
        query = {"match": {"text": "apple"}}
        for client in (busy, other):
            client.search(index=INDEX, query=query)  # keys verified, index names known
        answers: dict[str, int] = {}

        def search(name: str, client: Elasticsearch) -> None:
            try:
                answers[name] = client.options(request_timeout=30).search(index=INDEX, query=query)["hits"]["total"][
                    "value"
                ]
            except ApiError as exc:
                answers[name] = exc.meta.status

        [engine] = engine_pids(server.data_dir)
        with paused(engine):
            threads = [threading.Thread(target=search, args=(f"busy-{i}", busy)) for i in range(10)]
            threads.append(threading.Thread(target=search, args=("other", other)))
            for thread in threads:
                thread.start()
            threading.Event().wait(1.5)  # let the eleven reach the gateway
            with pytest.raises(ApiError) as info:  # on a connection of its own (the client keeps ten per node)
                Elasticsearch(server.url, api_key=busy_key, max_retries=0, request_timeout=5).search(
                    index=INDEX, query=query
                )
        for thread in threads:
            thread.join(timeout=30)
        assert info.value.meta.status == 429
        assert info.value.body["error"]["type"] == "es_rejected_execution_exception"
        assert info.value.body["error"]["root_cause"][0]["type"] == "es_rejected_execution_exception"
        # Each sees its own memory and the catalog.
        assert answers == {**{f"busy-{i}": 2 for i in range(10)}, "other": 2}
        assert busy.search(index=INDEX, query=query)["hits"]["total"]["value"] == 2  # its slots are free again
    finally:
        server.cleanup()
