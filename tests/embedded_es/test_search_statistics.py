"""Term statistics of a search over several indices, as recall's BM25 leg relies on them.

With ``search_type=dfs_query_then_fetch`` Elasticsearch first collects term and field statistics
from every shard the search names and scores each shard with the aggregated values
(reference: "Search API", parameter ``search_type``; SearchPhaseController.aggregateDfs and
DfsQueryPhase in server/.../action/search). Scores then follow BM25 as Elasticsearch configures it
(LegacyBM25Similarity, which keeps the (k1 + 1) factor Lucene 8 dropped; explain shows it as
"boost 2.2"), k1 = 1.2, b = 0.75: idf = ln(1 + (N − n + 0.5) / (n + 0.5)) and
score = (k1 + 1) · idf · f / (f + k1 · (1 − b + b · dl / avgdl)), with N the documents that have the
field, n those with the term and avgdl = sumTotalTermFreq / N.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch


def bm25(*, tf: int, dl: int, n_docs: int, df: int, total_terms: int) -> float:
    idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    avgdl = total_terms / n_docs
    return 2.2 * idf * tf / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))


@pytest.fixture(scope="module")
def two_indices(admin: Elasticsearch) -> Iterator[tuple[str, str]]:
    prefix = f"stats-{uuid.uuid4().hex[:8]}"
    first, second = f"{prefix}-a", f"{prefix}-b"
    for index, texts in ((first, ["alpha beta"]), (second, ["gamma", "delta", "epsilon"])):
        admin.indices.create(index=index, mappings={"properties": {"text": {"type": "text"}}})
        for n, text in enumerate(texts):
            admin.index(index=index, id=f"{index}-{n}", document={"text": text})
        admin.indices.refresh(index=index)
    yield first, second
    admin.indices.delete(index=f"{first},{second}")


def test_dfs_search_scores_with_statistics_across_the_indices(admin: Elasticsearch, two_indices) -> None:
    both = ",".join(two_indices)
    response = admin.search(index=both, query={"match": {"text": "alpha"}}, search_type="dfs_query_then_fetch")
    (hit,) = response["hits"]["hits"]
    # N = 4 documents across both indices, one with "alpha", 5 terms in all; the hit has 2.
    assert hit["_score"] == pytest.approx(bm25(tf=1, dl=2, n_docs=4, df=1, total_terms=5), rel=1e-5)


def test_msearch_items_take_the_search_type_from_their_header(admin: Elasticsearch, two_indices) -> None:
    both = ",".join(two_indices)
    body = {"query": {"match": {"text": "alpha"}}}
    responses = admin.msearch(
        searches=[{"index": both, "search_type": "dfs_query_then_fetch"}, body, {"index": two_indices[0]}, body]
    )["responses"]
    across, alone = (r["hits"]["hits"][0]["_score"] for r in responses)
    assert across == pytest.approx(bm25(tf=1, dl=2, n_docs=4, df=1, total_terms=5), rel=1e-5)
    # One index searched alone has only its own statistics: N = 1, 2 terms.
    assert alone == pytest.approx(bm25(tf=1, dl=2, n_docs=1, df=1, total_terms=2), rel=1e-5)
