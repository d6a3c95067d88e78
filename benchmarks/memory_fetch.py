"""Memories read by id: memories_fetch's one _msearch of a search per index (how it read until 2026-12-05)
against its multi-get of own ids over the hot indices, searching only what that did not find and the
archive (since 2026-12-05), on the embedded stack.

The subject of benchmarks/dashboard_pages.py (``--memories`` through the importer, two subjects), then the
nightly archive move (the replaced facts go to the archive, as in production). Each read is timed both
ways, alternating, so both see the same load, with the subject's key and read filters; both answer the same
hits (asserted). Prints a Markdown table (p50, p95, ms).
Usage: python benchmarks/memory_fetch.py [--memories 1000] [--rounds 200]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from datetime import date
from typing import Any

from _stack import atlas_stack, progress
from dashboard_pages import percentile, records


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with atlas_stack():
        from atlas_site.errors import ValidationFailed
        from memory import selectors
        from memory.elastic import store
        from memory.elastic.mappings import VECTOR_FIELDS
        from memory.portable.lines import memories_import
        from memory.scope import SubjectScope
        from memory.services.archive import superseded_facts_archive
        from tenants import services
        from tenants.models import MemorySubject

        tenant = services.tenant_create(slug="bench", name="Bench", actor="benchmark")
        for user in ("user0", "user1"):
            memories_import(tenant=tenant, lines=records(user, args.memories), create_subjects=True, actor="benchmark")
            progress(f"{user} imported")
        progress(f"{superseded_facts_archive(tenant=tenant)} replaced facts archived")
        scope = SubjectScope.of(MemorySubject.objects.get(tenant=tenant, external_id="user0"))
        reader, filters, every_index = scope.reader(), scope.read_filters(), (*selectors.RECALL_TYPES, "archive")

        def searched(ids: list[str], types: tuple[str, ...]) -> dict[str, dict[str, Any]]:
            """memories_fetch until 2026-12-05: a search per index for own or external ids, in one _msearch."""
            by_id = {"bool": {"should": [{"ids": {"values": ids}}, {"terms": {"external_id": ids}}],
                              "minimum_should_match": 1}}  # fmt: skip
            body = {"query": {"bool": {"filter": [by_id, *filters]}}, "size": 2 * len(ids),
                    "_source": {"excludes": VECTOR_FIELDS}}  # fmt: skip
            responses = store.memories_msearch(reader, searches=[((t,), body) for t in types])
            hits = [hit for response in responses for hit in response["hits"]["hits"]]
            own = {hit["_id"]: hit for hit in hits}
            found = {}
            for requested in ids:
                named = [hit for hit in hits if hit["_source"].get("external_id") == requested]
                if requested not in own and len(named) > 1:
                    raise ValidationFailed(f"the id {requested} names {len(named)} memories")
                if requested in own or named:
                    found[requested] = own.get(requested) or named[0]
            return found

        def fetched(ids: list[str], types: tuple[str, ...]) -> dict[str, dict[str, Any]]:
            return store.memories_fetch(reader, ids=ids, memory_types=types, filters=filters)

        def own_id(external_id: str) -> str:
            return selectors.memory_get(subject=scope.subject, memory_id=external_id)["id"]

        turns = [own_id(f"user0-e{i}") for i in range(30)]
        reads = [
            ("a turn by its own id (5 indices)", [turns[7]], every_index),
            ("a current fact by its own id (5 indices)", [own_id("user0-f5")], every_index),
            ("an archived fact by its own id (5 indices)", [own_id("user0-f4")], every_index),
            ("a fact by its external id (5 indices)", ["user0-f5"], every_index),
            ("a chain hop: a current fact by its own id (fact + archive)", [own_id("user0-f8")], store.FACT_TYPES_INDICES),
            ("30 turns by their own ids (5 indices)", turns, every_index),
        ]  # fmt: skip
        rows = []
        for name, ids, types in reads:
            answers = [
                {i: (hit["_id"], hit["_index"], hit["_source"]) for i, hit in way(ids, types).items()}
                for way in (searched, fetched)
            ]
            assert answers[0] == answers[1] and len(answers[0]) == len(ids), name
            samples: dict[str, list[float]] = {"searched": [], "fetched": []}
            for i in range(args.rounds + 5):
                ways = (("searched", searched), ("fetched", fetched))
                for way, read in ways if i % 2 == 0 else ways[::-1]:  # which goes first alternates too
                    t0 = time.perf_counter()
                    read(ids, types)
                    if i >= 5:  # warm-ups
                        samples[way].append((time.perf_counter() - t0) * 1000)
            old, new = (percentile(samples[w], 0.5) for w in ("searched", "fetched"))
            rows.append((name, old, percentile(samples["searched"], 0.95), new, percentile(samples["fetched"], 0.95)))
            progress(f"{name}: {old:.1f} → {new:.1f} ms")
        command = f"python benchmarks/memory_fetch.py --memories {args.memories} --rounds {args.rounds}"
        print(f"\n{date.today()} · {platform.processor() or platform.machine()} · 2 subjects × {args.memories} "
              f"memories · load average {os.getloadavg()[0]:.2f} (1 min, at the end) · `{command}`\n")  # fmt: skip
        print("| read | a search per index, p50 ms | p95 | multi-get first, p50 ms | p95 | ratio (p50) |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, old, old95, new, new95 in rows:
            print(f"| {name} | {old:.1f} | {old95:.1f} | {new:.1f} | {new95:.1f} | {old / new:.2f} |")


if __name__ == "__main__":
    main()
