"""Recall on the embedded stack, search by search: what each search a recall sends costs straight to
the noida engine and through our gateway, per leg, per index, per BM25 field, next to one plain BM25
search over the same indices — all interleaved query by query, so a shared machine's load hits every
row alike. Also where a whole recall's time goes: embedding the question, the searches, fusion.

The corpus is recall_latency.py's (10 subjects, half episodes, a third facts, the rest playbooks, a
100-entry catalog, English; half the subjects get one memory in Spanish, so the cross-lingual leg is
searched for them). Levels after the first are made by copying each subject's memories with their
vectors (new ids, the text marked as a copy): the engine's cost follows the number of documents it
scans, and embedding 7,500 more documents would take this machine kind a quarter of an hour.
Usage: python benchmarks/recall_profile.py [--levels 250 1000] [--queries 40] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _stack import atlas_stack, progress
from recall_latency import SPANISH, SUBJECTS, TOPICS, documents, pct

PLAIN = "plain BM25 (match text, 4 indices)"


def plain_bm25_body(text: str) -> dict[str, Any]:
    """The yardstick: one plain BM25 search over the recall's indices (match on ``text``, ten hits,
    vectors left out of the source), with the subject's key like recall's own searches."""
    from memory.elastic.mappings import VECTOR_FIELDS

    return {"query": {"match": {"text": text}}, "size": 10, "_source": {"excludes": VECTOR_FIELDS}}


def query_embeddings_forget() -> None:
    """Empty every query-embedding cache, so the next recall embeds its question as a new one would."""
    from memory.inference.embeddings import (
        crosslingual_embedding_provider,
        embedding_provider,
        multilingual_embedding_provider,
    )

    for provider in (embedding_provider(), multilingual_embedding_provider(), crosslingual_embedding_provider()):
        if provider is not None:
            provider.query_cache.clear()


def search_label(indices: tuple[str, ...], body: dict[str, Any]) -> str:
    """What one search of a recall is: its leg (BM25, or the kNN field) and its indices."""
    found = _find(body, "knn")
    leg = f"kNN {found['field']}" if found else "BM25 leg (multi_match, dfs)"
    return f"{leg} on {'+'.join(indices)}"


def _find(node: Any, key: str) -> Any:
    if isinstance(node, dict):
        if key in node:
            return node[key]
        for value in node.values():
            hit = _find(value, key)
            if hit is not None:
                return hit
    if isinstance(node, list):
        for value in node:
            hit = _find(value, key)
            if hit is not None:
                return hit
    return None


def one_field(body: dict[str, Any], field_name: str) -> dict[str, Any]:
    """The BM25 leg's body searching one of its fields only."""
    import copy

    clone = copy.deepcopy(body)
    _find(clone, "multi_match")["fields"] = [field_name]
    return clone


def timed(reader: Any, indices: tuple[str, ...], body: dict[str, Any]) -> float:
    """Wall ms of one search sent alone in an _msearch through the gateway, as recall sends them."""
    from memory.elastic import store

    t0 = time.perf_counter()
    store.memories_msearch(reader, searches=[(indices, body)])
    return (time.perf_counter() - t0) * 1000


class Engine:
    """The same searches sent straight to the noida engine, the subject's DLS query added by hand as the
    gateway adds it (embedded_es.dls), from a thread inside the server's network namespace (root)."""

    def __init__(self, es: Any) -> None:
        from elasticsearch import Elasticsearch

        self.pool = es.engine_thread()
        self.client = Elasticsearch(es.engine_url, request_timeout=600)

    def timed(self, indices: tuple[str, ...], body: dict[str, Any], dls_query: dict[str, Any]) -> float:
        from embedded_es.dls import search_body
        from memory.elastic import store

        header: dict[str, Any] = {"index": store.indices_of(indices)}
        if len(indices) > 1 and not _find(body, "knn"):
            header["search_type"] = "dfs_query_then_fetch"
        lines = [header, search_body(body, dls_query)]

        def run() -> float:
            t0 = time.perf_counter()
            self.client.msearch(searches=lines)
            return (time.perf_counter() - t0) * 1000

        return self.pool.submit(run).result()


class Recorder:
    """Wraps store.memories_msearch to keep the searches a recall sends (replayed one by one later)."""

    def __init__(self) -> None:
        from memory.elastic import store

        self.store = store
        self.original = store.memories_msearch
        self.calls: list[list[tuple[tuple[str, ...], dict[str, Any]]]] = []

    def __enter__(self) -> Recorder:
        def recording(reader: Any, *, searches: list) -> list:
            self.calls.append(list(searches))
            return self.original(reader, searches=searches)

        self.store.memories_msearch = recording
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.memories_msearch = self.original


def copies_add(tenant: Any, copies: int) -> int:
    """Add ``copies`` copies of every memory of ``tenant`` (vectors included); returns how many."""
    from memory.elastic import store
    from tenants.selectors import tenant_es_client, writer_es_client

    reader = tenant_es_client(tenant=tenant)
    originals = [
        hit
        for hit in store.memories_scan(
            reader, memory_types=store.HOT_TYPES, query={"match_all": {}}, include_embedding=True
        )
        if "-copy" not in hit["_id"]
    ]
    items = []
    for n in range(1, copies + 1):
        for hit in originals:
            source = dict(hit["_source"])
            new_id = f"{hit['_id']}-copy{n}"
            source.update(memory_id=new_id, text=f"{source.get('text', '')} (copy {n})")
            if source.get("external_id"):
                source["external_id"] = f"{source['external_id']}-copy{n}"
            items.append((source["memory_type"], new_id, source))
    for start in range(0, len(items), 1000):
        failures = store.memories_bulk_index(writer_es_client(), items[start : start + 1000])
        if failures:
            raise SystemExit(f"copy failures: {failures[:3]}")
        progress(f"  copied {min(start + 1000, len(items))}/{len(items)}")
    return len(items)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", nargs="*", type=int, default=[250, 1000])
    parser.add_argument("--queries", type=int, default=40, help="questions per level (half per subject group)")
    parser.add_argument("--keep", type=Path, help="keep the stack's data here and reuse what it holds")
    args = parser.parse_args()
    rng = random.Random(11)
    tables = []
    with atlas_stack(args.keep) as es:
        engine = Engine(es)
        from memory.portable.lines import memories_import
        from memory.recall import memory_recall
        from memory.selectors import RECALL_TYPES
        from memory.services.writes import episode_write
        from tenants.models import MemorySubject, Tenant
        from tenants.services import tenant_create

        tenant = Tenant.objects.filter(slug="profile").first()
        if tenant is None:
            tenant = tenant_create(slug="profile", name="recall profile", actor="benchmark")
            lines = documents(rng, args.levels[0])
            progress(f"importing {len(lines)} documents ({args.levels[0]} per subject) …")
            report = memories_import(
                tenant=tenant,
                lines=lines,
                create_subjects=True,
                actor="benchmark",
                progress=lambda done, _r: progress(f"  {done}/{len(lines)}") if done % 250 < 32 else None,
            )
            if report.errors:
                raise SystemExit(f"import errors: {report.errors[:3]}")
            subjects = list(MemorySubject.objects.filter(tenant=tenant).order_by("external_id"))
            for subject in subjects[SUBJECTS // 2 :]:
                episode_write(subject=subject, text=SPANISH)
        subjects = list(MemorySubject.objects.filter(tenant=tenant).order_by("external_id"))
        base_level = args.levels[0]
        for level in args.levels:
            copies = level // base_level - 1
            if copies:
                from memory.elastic import store
                from tenants.selectors import tenant_es_client

                count = tenant_es_client(tenant=tenant).count(index=store.indices_of(store.HOT_TYPES))["count"]
                wanted = (SUBJECTS * base_level + 100 + SUBJECTS // 2) * (copies + 1)
                if count < wanted:
                    progress(f"copying to {level} per subject …")
                    copies_add(tenant, copies)
            words = [w for _, ws in TOPICS for w in ws]
            walls: dict[str, list[float]] = defaultdict(list)
            tooks: dict[str, list[float]] = defaultdict(list)
            parts: dict[str, list[float]] = defaultdict(list)
            for n in range(args.queries + 2):
                subject = subjects[n % SUBJECTS]
                text = " ".join(rng.sample(words, 3)) + f" {n}"
                query_embeddings_forget()
                jobs: list[tuple[str, tuple[str, ...], dict[str, Any]]] = []
                with Recorder() as recorder:
                    t0 = time.perf_counter()
                    result = memory_recall(subject=subject, query=text, k=10)
                    recall_wall = (time.perf_counter() - t0) * 1000
                from memory.scope import SubjectScope

                reader = SubjectScope.of(subject).reader()
                group = "bilingual subjects" if "crosslingual" in result.legs else "English-only subjects"
                for searches in recorder.calls:
                    for indices, body in searches:
                        jobs.append((search_label(indices, body), indices, body))
                        if _find(body, "multi_match"):
                            for field_name in _find(body, "multi_match")["fields"]:
                                jobs.append(
                                    (f"  BM25 leg, field {field_name} only", indices, one_field(body, field_name))
                                )
                jobs.append((PLAIN, RECALL_TYPES, plain_bm25_body(text)))
                rng.shuffle(jobs)
                plain_first = timed(reader, RECALL_TYPES, plain_bm25_body(text))
                dls_query = SubjectScope.of(subject).read_filters()[0]  # what the subject key's role holds
                if n < 2:
                    continue  # warm-up
                walls[f"recall ({group})"].append(recall_wall)
                walls[f"plain BM25 just before the recall ({group})"].append(plain_first)
                for key in ("embed", "search", "fusion", "total"):
                    parts[f"{key} ({group})"].append(result.timings_ms[key])
                rest = result.timings_ms["total"] - sum(result.timings_ms[key] for key in ("embed", "search", "fusion"))
                parts[f"the rest of the app: validation, scope, filters, shaping ({group})"].append(rest)
                for label, indices, body in jobs:
                    walls[label].append(timed(reader, indices, body))
                    tooks[label].append(engine.timed(indices, body, dls_query))
                if n % 5 == 0:
                    progress(f"  level {level}: query {n}/{args.queries}, recall {recall_wall:.0f} ms")
            tables.append((level, walls, tooks, parts))
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load average at the end: {' '.join(load)}")
    for level, walls, tooks, parts in tables:
        plain = statistics.median(walls[PLAIN])
        print(f"\n### {level} memories per subject ({SUBJECTS} subjects), each search alone\n")
        print("| search | n | straight to the engine p50 | through the gateway p50 | p95 | gateway p50 ÷ plain BM25 |")
        print("|---|---:|---:|---:|---:|---:|")
        for label in sorted(walls, key=lambda x: (x.startswith("recall") or x.startswith("plain BM25 just"), x)):
            w = walls[label]
            took = f"{statistics.median(tooks[label]):.1f}" if label in tooks else "—"
            print(
                f"| {label} | {len(w)} | {took} | {statistics.median(w):.1f} | {pct(w, 0.95):.1f} "
                f"| {statistics.median(w) / plain:.2f} |"
            )
        print("\n| part of a recall | n | p50 ms |\n|---|---:|---:|")
        for label, values in sorted(parts.items()):
            print(f"| {label} | {len(values)} | {statistics.median(values):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
