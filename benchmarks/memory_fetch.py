"""One memory read by id over the five memory indices: one search over all five (how memories_fetch read
until 2026-12-03) against memories_fetch's one _msearch of a search per index, on the embedded stack.

The subject of benchmarks/dashboard_pages.py (``--memories`` through the importer, two subjects); each round
reads a turn by its own id, a fact by its own id and a fact by its external id, both ways, alternating,
so both see the same load. Both return the same hits (asserted). Prints a Markdown table (p50, p95, ms).
Usage: python benchmarks/memory_fetch.py [--memories 1000] [--rounds 200]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from datetime import date

from _stack import atlas_stack, progress
from dashboard_pages import percentile, records


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with atlas_stack():
        from memory import selectors
        from memory.elastic import store
        from memory.elastic.mappings import VECTOR_FIELDS
        from memory.portable.lines import memories_import
        from memory.scope import SubjectScope
        from tenants import services
        from tenants.models import MemorySubject

        tenant = services.tenant_create(slug="bench", name="Bench", actor="benchmark")
        for user in ("user0", "user1"):
            memories_import(tenant=tenant, lines=records(user, args.memories), create_subjects=True, actor="benchmark")
            progress(f"{user} imported")
        scope = SubjectScope.of(MemorySubject.objects.get(tenant=tenant, external_id="user0"))
        reader, filters, indices = scope.reader(), scope.read_filters(), (*selectors.RECALL_TYPES, "archive")

        def one_search(memory_id: str) -> set[str]:
            by_id = {"ids": {"values": [memory_id]}}, {"terms": {"external_id": [memory_id]}}
            query = {"bool": {"filter": [{"bool": {"should": list(by_id), "minimum_should_match": 1}}, *filters]}}
            hits = reader.search(
                index=store.indices_of(indices), query=query, size=2 * len(indices), source_excludes=VECTOR_FIELDS
            )["hits"]["hits"]
            return {hit["_id"] for hit in hits}

        def per_index(memory_id: str) -> set[str]:
            found = store.memories_fetch(reader, ids=[memory_id], memory_types=indices, filters=filters)
            return {hit["_id"] for hit in found.values()}

        reads = [
            ("a turn by its own id", selectors.memory_get(subject=scope.subject, memory_id="user0-e7")["id"]),
            ("a fact by its own id", selectors.memory_get(subject=scope.subject, memory_id="user0-f4")["id"]),
            ("a fact by its external id", "user0-f4"),
        ]
        rows = []
        for name, memory_id in reads:
            assert one_search(memory_id) == per_index(memory_id) != set(), name
            samples: dict[str, list[float]] = {"one": [], "per": []}
            for i in range(args.rounds + 5):
                ways = (("one", one_search), ("per", per_index))
                for way, read in ways if i % 2 == 0 else ways[::-1]:  # which goes first alternates too
                    t0 = time.perf_counter()
                    read(memory_id)
                    if i >= 5:  # warm-ups
                        samples[way].append((time.perf_counter() - t0) * 1000)
            one, per = (percentile(samples[w], 0.5) for w in ("one", "per"))
            rows.append((name, one, percentile(samples["one"], 0.95), per, percentile(samples["per"], 0.95)))
            progress(f"{name}: {one:.1f} → {per:.1f} ms")
        command = f"python benchmarks/memory_fetch.py --memories {args.memories} --rounds {args.rounds}"
        print(f"\n{date.today()} · {platform.processor() or platform.machine()} · 2 subjects × {args.memories} "
              f"memories · load average {os.getloadavg()[0]:.2f} (1 min, at the end) · `{command}`\n")  # fmt: skip
        print("| read | one search, p50 ms | p95 | a search per index, p50 ms | p95 | ratio (p50) |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, one, one95, per, per95 in rows:
            print(f"| {name} | {one:.1f} | {one95:.1f} | {per:.1f} | {per95:.1f} | {one / per:.2f} |")


if __name__ == "__main__":
    main()
