"""What a BM25 search costs the embedded engine, and whether a filter narrows it: the reason ``literal``
skips the engine's BM25 search and scores the dense legs' candidates in the app (memory/recall/lexical.py).

One embedded Elasticsearch, one index of ``--docs`` short texts (15 words each from a small vocabulary,
ten owners), the `english` analyzer on ``text`` as recall's indices have it, and a copy under the
`standard` analyzer. Each search ``--repeat`` times; the table gives the median. A filter that leaves a
hundred documents costs what no filter costs if the engine scores every document anyway.
Usage: python benchmarks/engine_bm25_scan.py [--docs 10000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime

from _stack import progress

WORDS = (
    "alpha beta gamma delta lisbon porto train window seat dinner place home vet cat dog hospital unit "
    "transfer amara where when did the to a of in"
).split()
QUESTION = "Which hospital unit did Amara transfer to"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    from elasticsearch import Elasticsearch, helpers

    from embedded_es import EmbeddedElasticsearch

    rng = random.Random(1)
    with EmbeddedElasticsearch() as server:
        es = Elasticsearch(server.url, basic_auth=("elastic", server.password), request_timeout=120)
        for index, analyzer in (("english", "english"), ("standard", "standard")):
            es.indices.create(
                index=index,
                mappings={"properties": {"text": {"type": "text", "analyzer": analyzer}, "owner": {"type": "keyword"}}},
            )
        progress(f"indexing {args.docs} documents twice …")
        docs = [
            {"text": " ".join(rng.choice(WORDS) for _ in range(15)), "owner": f"o{n % 10}"} for n in range(args.docs)
        ]
        for index in ("english", "standard"):
            helpers.bulk(es, ({"_index": index, "_id": str(n), **doc} for n, doc in enumerate(docs)), refresh=True)
        hundred = [str(rng.randrange(args.docs)) for _ in range(100)]
        match = {"match": {"text": QUESTION}}
        searches = [
            ("match, `english` analyzer", "english", match),
            (
                "match + a filter on one owner (a tenth)",
                "english",
                {"bool": {"must": match, "filter": {"term": {"owner": "o3"}}}},
            ),
            (
                "match + an ids filter (100 documents)",
                "english",
                {"bool": {"must": match, "filter": {"ids": {"values": hundred}}}},
            ),
            ("term query, one stemmed word", "english", {"term": {"text": "hospit"}}),
            ("match, `standard` analyzer", "standard", match),
            ("ids query alone (100 documents)", "english", {"ids": {"values": hundred}}),
            ("match_all", "english", {"match_all": {}}),
        ]
        rows = []
        for label, index, query in searches:
            progress(f"  {label}")
            times = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                es.search(index=index, query=query, size=10)
                times.append((time.perf_counter() - started) * 1000)
            rows.append((label, statistics.median(times)))
    print(f"\n{datetime.now(UTC).date().isoformat()}: {args.docs} documents, median of {args.repeat}")
    print("| search | median ms |")
    print("|---|---:|")
    for label, ms in rows:
        print(f"| {label} | {ms:.1f} |")


if __name__ == "__main__":
    main()
