"""The worst allowed input: how long one write of an 8,000-character text takes, and what it does to others.

One run, one stack (embedded Elasticsearch, temporary SQLite), the default models. Part 1: each kind of
adversarial text (plain ASCII, emoji, combining accents, CJK, right-to-left, one 8,000-character word,
mixed scripts), written as an episode in a session (the costliest write: its vector blends the turn with
and without the turn before it) and as a fact, ``--repeat`` times each; the table shows the median and
the worst, with the time in the embeddings. Part 2: ``--heavy`` threads write long texts of one tenant
at once while another tenant's subject writes a short turn; the table shows what that short turn waited.
Target (issue 25): any allowed input stored in ≤ 1 s; one tenant's heavy writes cannot starve another's.
Usage: python benchmarks/long_texts.py [--repeat 3] [--heavy 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from datetime import UTC, datetime

from _stack import atlas_stack, progress

LIMIT = 8000
KINDS = {
    "ASCII words": ("the quick brown fox jumps over the lazy dog " * 200)[:LIMIT],
    "emoji": ("😀🚀👩‍👩‍👧‍👦🇵🇹" * LIMIT)[:LIMIT],
    "combining accents": (("e" + "\u0301\u0308\u0323") * LIMIT)[:LIMIT],
    "CJK": ("漢字仮名交じり文" * LIMIT)[:LIMIT],
    "right-to-left": ("مرحبا بالعالم " * LIMIT)[:LIMIT],
    "one long word": "x" * LIMIT,
    "mixed scripts": ("Ωmega Жук 東京 ß ﬁ ａｂｃ \u200b\u202e " * LIMIT)[:LIMIT],
}
SHORT = "Can you book the dentist for Thursday?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--heavy", type=int, default=4)
    args = parser.parse_args()

    with atlas_stack():
        from memory.services import writes
        from tenants import services

        tenant = services.tenant_create(slug="heavy", name="Heavy", actor="benchmark")
        other = services.tenant_create(slug="light", name="Light", actor="benchmark")
        subject = services.subject_create(tenant=tenant, external_id="alice", actor="benchmark")
        light = services.subject_create(tenant=other, external_id="bob", actor="benchmark")

        embedding_ms: list[float] = []
        original_embed = writes.embed_into

        def timed_embed(prepared):
            started = time.perf_counter()
            try:
                return original_embed(prepared)
            finally:
                embedding_ms.append((time.perf_counter() - started) * 1000)

        writes.embed_into = timed_embed
        for _ in range(4):  # warm-up: models, sessions, connections
            writes.episode_write(subject=subject, text=SHORT, session_id="warm-up")
        load_before = os.getloadavg()[0]
        rows = []
        for kind, text in KINDS.items():
            for write in ("episode", "fact"):
                totals, embeds = [], []
                for n in range(args.repeat):
                    embedding_ms.clear()
                    started = time.perf_counter()
                    if write == "episode":
                        writes.episode_write(subject=subject, text=SHORT, session_id=f"{kind}-{n}")
                        embedding_ms.clear()
                        started = time.perf_counter()
                        writes.episode_write(subject=subject, text=text, session_id=f"{kind}-{n}")
                    else:
                        writes.fact_write(subject=subject, text=text)
                    totals.append((time.perf_counter() - started) * 1000)
                    embeds.append(sum(embedding_ms))
                rows.append((kind, write, statistics.median(totals), max(totals), statistics.median(embeds)))
            progress(f"  {kind}: done")

        waits: list[float] = []
        heavy_ms: list[float] = []

        def heavy(n: int) -> None:
            text = list(KINDS.values())[n % len(KINDS)]
            started = time.perf_counter()
            writes.episode_write(subject=subject, text=text, session_id=f"heavy-{n}")
            heavy_ms.append((time.perf_counter() - started) * 1000)

        for round_ in range(args.repeat):
            threads = [threading.Thread(target=heavy, args=(round_ * args.heavy + n,)) for n in range(args.heavy)]
            for t in threads:
                t.start()
            time.sleep(0.05)  # the heavy writes are in the embedding pool first
            started = time.perf_counter()
            writes.episode_write(subject=light, text=SHORT, session_id=f"light-{round_}")
            waits.append((time.perf_counter() - started) * 1000)
            for t in threads:
                t.join()
        load_after = os.getloadavg()[0]

    today = datetime.now(UTC).date().isoformat()
    print(f"\n{today}: one write of an {LIMIT:,}-character text, {args.repeat} writes per row, ", end="")
    print(f"load avg {load_before:.2f} → {load_after:.2f}")
    print("| text | write | median ms | worst ms | of which embeddings (median) ms |")
    print("|---|---|---:|---:|---:|")
    for kind, write, median, worst, embed in rows:
        print(f"| {kind} | {write} | {median:.0f} | {worst:.0f} | {embed:.0f} |")
    print(
        f"\n{args.heavy} long writes of one tenant at once, and one short turn of another tenant, {args.repeat} rounds"
    )
    print("| | median ms | worst ms |")
    print("|---|---:|---:|")
    print(f"| a long write among {args.heavy} | {statistics.median(heavy_ms):.0f} | {max(heavy_ms):.0f} |")
    print(f"| the other tenant's short turn | {statistics.median(waits):.0f} | {max(waits):.0f} |")


if __name__ == "__main__":
    main()
