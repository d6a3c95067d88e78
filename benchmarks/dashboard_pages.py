"""Server time of each dashboard page at 1,000 memories per subject, on the embedded stack.

One run, one stack (benchmarks/_stack.py: embedded Elasticsearch, temporary SQLite). Each subject gets
``--memories`` memories through the importer (60 % conversation turns over 40 sessions, 30 % facts with
supersession chains, 10 % playbooks), the tenant 20 catalog entries; a person linked to the first
subject then requests every page through Django's test client — the whole middleware, view and
template stack in-process, without the HTTP hop — ``--rounds`` times after a warm-up. Edits are
timed on distinct facts (each edit replaces its fact). Prints a Markdown table (p50, p95, ms).
Usage: python benchmarks/dashboard_pages.py [--memories 1000] [--subjects 2] [--rounds 40]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from datetime import date

from _stack import atlas_stack, progress


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def records(user: str, n: int) -> list[str]:
    lines = []
    episodes, facts = int(n * 0.6), int(n * 0.3)
    playbooks = n - episodes - facts
    for i in range(episodes):
        lines.append({"id": f"{user}-e{i}", "user_id": user, "memory_type": "episodic", "session_id": f"s{i % 40}",
                      "text": f"turn {i}: about the garden, the rent and the dog number {i % 17}", "days_ago": (episodes - i) / 10})  # fmt: skip
    for i in range(facts):
        fact = {"id": f"{user}-f{i}", "user_id": user, "memory_type": "semantic", "fact_type": "preference",
                "text": f"fact {i}: prefers option {i % 23} for the {['garden', 'rent', 'dog'][i % 3]}", "days_ago": (facts - i) / 10,
                "source_episodes": [f"{user}-e{i}"]}  # fmt: skip
        if i % 3 and i >= 3:  # chains of three: f0 ← f1 ← f2, f3 ← f4 ← f5, …
            fact["supersedes"] = [f"{user}-f{i - 1}"]
        lines.append(fact)
    for i in range(playbooks):
        lines.append({"id": f"{user}-p{i}", "user_id": user, "memory_type": "procedural", "name": f"routine {i}",
                      "text": f"routine {i}", "trigger_text": f"when the {['router', 'heating', 'car'][i % 3]} fails ({i})",
                      "steps": [{"instruction": "look"}, {"instruction": "fix"}], "days_ago": i / 10})  # fmt: skip
    return [json.dumps(r) for r in lines]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--subjects", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    # Pages link the stylesheet by name: serve it from the app's folder, as tests and `make run` do
    # (production's collectstatic manifest is not part of a page's server time).
    os.environ["ATLAS_STATIC_FROM_APPS"] = "true"
    with atlas_stack():
        from django.test import Client

        from memory import selectors
        from memory.services.importing import memories_import
        from tenants import services
        from tenants.models import MemorySubject
        from tests.browser import person_create

        tenant = services.tenant_create(slug="bench", name="Bench", actor="benchmark")
        catalog = [json.dumps({"id": f"c{i}", "memory_type": "catalog", "title": f"policy {i}",
                               "text": f"policy {i} about returns and the garden"}) for i in range(20)]  # fmt: skip
        users = [f"user{u}" for u in range(args.subjects)]
        t0 = time.perf_counter()
        for user in users:
            report = memories_import(
                tenant=tenant, lines=records(user, args.memories), create_subjects=True, actor="benchmark"
            )
            assert not report.errors, report.errors[:3]
            progress(f"{user}: {dict(report.written)} in {time.perf_counter() - t0:.0f}s")
        memories_import(tenant=tenant, lines=catalog, create_subjects=False, actor="benchmark")
        subject = MemorySubject.objects.get(tenant=tenant, external_id=users[0])
        subject.person = person_create("bench@example.org", "a long enough password 1")
        subject.save(update_fields=["person"])
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(subject.person)

        first = client.get("/")
        assert first.status_code == 200, first.status_code
        first = first.content.decode()
        cursor = re.search(r'href="\?([^"]*)" rel="next"', first).group(1).replace("&amp;", "&")
        chain_middle = selectors.memory_get(subject=subject, memory_id=f"{users[0]}-f4")["id"]
        episode = selectors.memory_get(subject=subject, memory_id=f"{users[0]}-e7")["id"]
        editable = [
            selectors.memory_get(subject=subject, memory_id=f"{users[0]}-f{i}")
            for i in range(2, int(args.memories * 0.3), 3)
        ]
        editable = [f for f in editable if f is not None and not f.get("superseded_by")]

        def get(path: str):
            def run(_i: int) -> None:
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code)
                if getattr(response, "streaming", False):
                    b"".join(response.streaming_content)

            return run

        def edit(i: int) -> None:
            from memory.services.writes import memory_etag

            fact = editable[i]
            etag = memory_etag(selectors.memory_hit(subject=subject, memory_id=fact["id"])["_source"])
            response = client.post(f"/memory/{fact['id']}/", {"text": fact["text"] + " (edited)", "etag": etag})
            assert response.status_code == 302, response.status_code

        pages = [
            ("My memories: facts (`/`)", get("/")),
            ("facts, replaced versions shown", get("/memories/?superseded=on")),
            ("facts, second page (cursor)", get("/memories/?" + cursor)),
            ("facts, fact type + date range", get("/memories/?fact_type=preference&since=2000-01-01&until=2100-01-01")),
            ("conversations", get("/memories/episodes/")),
            ("one conversation", get("/memories/episodes/?session=s3")),
            ("playbooks", get("/memories/playbooks/")),
            ("catalog", get("/memories/catalog/")),
            ("search (recall, k=20)", get("/memories/?q=which+option+for+the+garden")),
            ("a fact with its chain and provenance", get(f"/memory/{chain_middle}/")),
            ("a conversation turn", get(f"/memory/{episode}/")),
            ("forget confirmation", get(f"/memory/{chain_middle}/forget/")),
            ("forget everything (counts)", get("/forget-everything/")),
            ("connect an agent", get("/connect/")),
            ("download (JSON, every index)", get("/export.json")),
            ("edit a fact (POST, supersession)", edit),
        ]
        rows = []
        for name, run in pages:
            rounds = min(args.rounds, len(editable) - 5) if run is edit else args.rounds
            warm = 5 if run is not edit else 0
            for i in range(warm):
                run(i)
            samples = []
            for i in range(rounds):
                t0 = time.perf_counter()
                run(i + warm if run is edit else i)
                samples.append((time.perf_counter() - t0) * 1000)
            rows.append((name, percentile(samples, 0.5), percentile(samples, 0.95), rounds))
            progress(f"{name}: p95 {rows[-1][2]:.1f} ms")
        print(f"\n{date.today()} · {platform.processor() or platform.machine()} · {args.subjects} subjects × "
              f"{args.memories} memories · `python benchmarks/dashboard_pages.py --memories {args.memories} "
              f"--subjects {args.subjects} --rounds {args.rounds}`\n")  # fmt: skip
        print("| page | p50 ms | p95 ms | requests |")
        print("|---|---:|---:|---:|")
        for name, p50, p95, n in rows:
            print(f"| {name} | {p50:.1f} | {p95:.1f} | {n} |")


if __name__ == "__main__":
    main()
