"""Server time of each page people use — the end users' dashboard, the tenant section, the operators'
memory pages in the Django admin — at 1,000 memories per subject, on the embedded stack.

One run, one stack (benchmarks/_stack.py: embedded Elasticsearch, temporary SQLite). Each subject gets
``--memories`` memories through the importer (60 % conversation turns over 40 sessions, 30 % facts with
supersession chains, 10 % playbooks), the tenant 20 catalog entries, three members, five service tokens
and ten job runs per subject (no LLM configured: each is "skipped"). Then each page is requested
through Django's test client — the whole middleware, view and template stack in-process, without the
HTTP hop — ``--rounds`` times after 5 warm-ups: by a person linked to the first subject, by the tenant's
owner, by a staff operator holding the memory permissions. Edits are timed on distinct facts (each edit
replaces its fact). ``--deep-memories N`` adds one subject with N facts stored without embeddings
(tests/memory/factories.py: the importer's models would take N / 30 seconds) and times its first,
middle and last page, reached by cursor, and the tenant section's pages for it.
Prints Markdown tables (p50, p95, ms).
Usage: python benchmarks/dashboard_pages.py [--memories 1000] [--subjects 2] [--rounds 40] [--deep-memories 0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from collections.abc import Callable
from datetime import date
from typing import Any
from urllib.parse import urlencode

from _stack import atlas_stack, progress

PASSWORD = "a long enough password 1"


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


Page = tuple[str, Callable[[int], None], int, int]  # (name, run(i), requests, warm-ups)


def timed(pages: list[Page]) -> list[tuple[str, float, float, int]]:
    """Each page's p50 and p95 server time (ms) over its requests, after its warm-ups."""
    rows = []
    for name, run, rounds, warm in pages:
        for i in range(warm):
            run(i)
        samples = []
        for i in range(warm, warm + rounds):
            t0 = time.perf_counter()
            run(i)
            samples.append((time.perf_counter() - t0) * 1000)
        rows.append((name, percentile(samples, 0.5), percentile(samples, 0.95), rounds))
        progress(f"{name}: p95 {rows[-1][2]:.1f} ms")
    return rows


def getter(client: Any, path: str, *, contains: str | None = None, lacks: str | None = None):
    """A request of ``path`` that must answer 200 (and hold ``contains``, not ``lacks``), its stream read."""

    def run(_i: int) -> None:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
        elif contains is not None or lacks is not None:
            body = response.content.decode()
            assert contains is None or contains in body, (path, contains)
            assert lacks is None or lacks not in body, (path, lacks)

    return run


def cursor_at(subject: Any, position: int) -> str | None:
    """The facts list's cursor after its first ``position`` facts (None: the first page), by following
    memory_list's own cursors 200 at a time."""
    from memory import selectors

    cursor, walked = None, 0
    while walked < position:
        step = min(200, position - walked)
        page = selectors.memory_list(subject=subject, memory_types=["semantic"], page_size=step, cursor=cursor)
        cursor, walked = page["next_cursor"], walked + len(page["memories"])
        assert cursor is not None, (position, walked)
    return cursor


def staff_operator(email: str) -> Any:
    """A staff person holding the memory permissions the admin's memory pages check (memory/admin_memory.py)."""
    from django.contrib.auth.models import Permission

    from tests.browser import person_create

    person = person_create(email, PASSWORD, is_staff=True)
    codenames = ("view_memory", "change_memory", "forget_memory")
    person.user_permissions.set(Permission.objects.filter(content_type__app_label="tenants", codename__in=codenames))
    return person


def logged_in(person: Any) -> Any:
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(person)
    return client


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--subjects", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument(
        "--deep-memories", type=int, default=0, help="also seed one subject with this many facts (no embeddings)"
    )
    args = parser.parse_args()
    # Pages link the stylesheet by name: serve it from the app's folder, as tests and `make run` do
    # (production's collectstatic manifest is not part of a page's server time).
    os.environ["ATLAS_STATIC_FROM_APPS"] = "true"
    with atlas_stack():
        from django.urls import reverse

        from memory import selectors
        from memory.consolidation.run import consolidation_run
        from memory.portable.lines import memories_import
        from tenants import services, tokens
        from tenants.models import MemorySubject, Person
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
        subject.person = person_create("bench@example.org", PASSWORD)
        subject.save(update_fields=["person"])
        client = logged_in(subject.person)
        # The tenant section's other lists: members, service tokens, job runs (no LLM: each run is "skipped").
        for role in ("owner", "admin", "member"):
            person_create(f"{role}@bench.example.org", PASSWORD)
            services.membership_add(tenant=tenant, email=f"{role}@bench.example.org", role=role, actor="benchmark")
        for n in range(5):
            tokens.token_create(tenant=tenant, name=f"agent {n}", scopes=["read", "write"], actor="benchmark")
        for who in MemorySubject.objects.filter(tenant=tenant):
            for _ in range(10):
                assert consolidation_run(subject=who).status == "skipped"
        owner = logged_in(Person.objects.get(email="owner@bench.example.org"))
        operator = logged_in(staff_operator("ops@example.org"))

        first = client.get("/")
        assert first.status_code == 200, first.status_code
        first = first.content.decode()
        cursor = re.search(r'href="\?([^"]*)" rel="next"', first).group(1).replace("&amp;", "&")
        chain_middle = selectors.memory_get(subject=subject, memory_id=f"{users[0]}-f4")["id"]
        episode = selectors.memory_get(subject=subject, memory_id=f"{users[0]}-e7")["id"]
        entry = selectors.catalog_list(tenant=tenant, page_size=1)["memories"][0]["id"]
        editable = [
            selectors.memory_get(subject=subject, memory_id=f"{users[0]}-f{i}")
            for i in range(2, int(args.memories * 0.3), 3)
        ]
        editable = [f for f in editable if f is not None and not f.get("superseded_by")]

        def edit(i: int) -> None:
            from memory.services.writes import memory_etag

            fact = editable[i]
            etag = memory_etag(selectors.memory_hit(subject=subject, memory_id=fact["id"])["_source"])
            response = client.post(f"/memory/{fact['id']}/", {"text": fact["text"] + " (edited)", "etag": etag})
            assert response.status_code == 302, response.status_code

        def tenant_url(name: str, *path_args: str) -> str:
            return reverse(f"tenant:{name}", args=[tenant.slug, *path_args])

        def admin_url(name: str, *path_args: Any) -> str:
            return reverse(f"admin:tenants_memorysubject_{name}", args=[subject.pk, *path_args])

        n, warm = args.rounds, 5
        end_user = [(name, run, n, warm) for name, run in [
            ("My memories: facts (`/`)", getter(client, "/")),
            ("facts, replaced versions shown", getter(client, "/memories/?superseded=on")),
            ("facts, second page (cursor)", getter(client, "/memories/?" + cursor)),
            ("facts, fact type + date range", getter(client, "/memories/?fact_type=preference&since=2000-01-01&until=2100-01-01")),
            ("conversations", getter(client, "/memories/episodes/")),
            ("one conversation", getter(client, "/memories/episodes/?session=s3")),
            ("playbooks", getter(client, "/memories/playbooks/")),
            ("catalog", getter(client, "/memories/catalog/")),
            ("search (recall, k=20)", getter(client, "/memories/?q=which+option+for+the+garden")),
            ("a fact with its chain and provenance", getter(client, f"/memory/{chain_middle}/")),
            ("a conversation turn", getter(client, f"/memory/{episode}/")),
            ("forget confirmation", getter(client, f"/memory/{chain_middle}/forget/")),
            ("forget everything (counts)", getter(client, "/forget-everything/")),
            ("connect an agent", getter(client, "/connect/")),
            ("download (JSON, every index)", getter(client, "/export.json")),
        ]] + [("edit a fact (POST, supersession)", edit, min(n, len(editable)), 0)]  # fmt: skip
        tenant_admin = [(name, run, n, warm) for name, run in [
            ("subjects (counts per subject)", getter(owner, tenant_url("subjects"), contains=users[0])),
            ("a subject with its counts", getter(owner, tenant_url("subject", users[0]))),
            ("catalog", getter(owner, tenant_url("catalog"), contains="policy")),
            ("a catalog entry (edit form)", getter(owner, tenant_url("catalog_entry", entry))),
            ("service tokens", getter(owner, tenant_url("tokens"), contains="agent 4")),
            ("members", getter(owner, tenant_url("members"), contains="member@bench.example.org")),
            ("audit trail", getter(owner, tenant_url("audit"))),
            ("job runs", getter(owner, tenant_url("jobs"), contains="skipped")),
            ("support: a subject's facts (audited)", getter(owner, tenant_url("subject_memories", users[0]))),
            ("support: one fact (audited)", getter(owner, tenant_url("subject_memory", users[0], chain_middle))),
            ("support: its chain (audited)", getter(owner, tenant_url("subject_memory_chain", users[0], chain_middle))),
        ]]  # fmt: skip
        operator_admin = [(name, run, n, warm) for name, run in [
            ("a subject's facts", getter(operator, admin_url("memories"))),
            ("a subject's conversation turns", getter(operator, admin_url("memories") + "?type=episodic")),
            ("search (recall, k=20)", getter(operator, admin_url("memories") + "?q=which+option+for+the+garden")),
            ("a fact", getter(operator, admin_url("memory", chain_middle))),
            ("its chain", getter(operator, admin_url("memory_chain", chain_middle))),
        ]]  # fmt: skip
        sections = [
            ("End user (the dashboard, a person linked to the first subject)", timed(end_user)),
            (f"Tenant admin (`/tenant/{tenant.slug}/`, an owner)", timed(tenant_admin)),
            ("Operator (Django admin memory pages, staff with the memory permissions)", timed(operator_admin)),
        ]
        if args.deep_memories:
            sections.append(deep_section(tenant, args.deep_memories, n, warm, owner, tenant_url))
        command = (
            f"python benchmarks/dashboard_pages.py --memories {args.memories} --subjects {args.subjects} "
            f"--rounds {args.rounds}" + (f" --deep-memories {args.deep_memories}" if args.deep_memories else "")
        )
        print(f"\n{date.today()} · {platform.processor() or platform.machine()} · {args.subjects} subjects × "
              f"{args.memories} memories · load average {os.getloadavg()[0]:.2f} (1 min, at the end) · `{command}`")  # fmt: skip
        for title, rows in sections:
            print(f"\n{title}\n\n| page | p50 ms | p95 ms | requests |\n|---|---:|---:|---:|")
            for name, p50, p95, count in rows:
                print(f"| {name} | {p50:.1f} | {p95:.1f} | {count} |")


def deep_section(tenant: Any, count: int, n: int, warm: int, owner: Any, tenant_url: Callable[..., str]):
    """One subject with ``count`` facts, stored without embeddings (tests/memory/factories.py): the
    dashboard's first, middle and last page (cursors), and the tenant section's pages for it."""
    from memory.dashboard.views import PAGE_SIZE
    from tenants import services
    from tests.browser import person_create
    from tests.memory.factories import facts_bulk_store

    deep = services.subject_create(tenant=tenant, external_id="deep", actor="benchmark")
    t0 = time.perf_counter()
    ids = facts_bulk_store(subject=deep, count=count)
    progress(f"deep: {count} facts stored in {time.perf_counter() - t0:.1f}s")
    deep.person = person_create("deep@example.org", PASSWORD)
    deep.save(update_fields=["person"])
    client = logged_in(deep.person)
    middle, last = (count // 2) // PAGE_SIZE * PAGE_SIZE, (count - 1) // PAGE_SIZE * PAGE_SIZE
    middle_query, last_query = (urlencode({"cursor": cursor_at(deep, position)}) for position in (middle, last))
    pages = [
        ("facts, first page (`/`)", getter(client, "/", contains=ids[0])),
        (f"facts, middle page (cursor, from fact {middle + 1})",
         getter(client, "/memories/?" + middle_query, contains=ids[middle])),
        (f"facts, last page (cursor, from fact {last + 1})",
         getter(client, "/memories/?" + last_query, contains=ids[-1], lacks='rel="next"')),
        ("a fact", getter(client, f"/memory/{ids[middle]}/")),
        ("forget everything (counts)", getter(client, "/forget-everything/", contains=f"{count} facts")),
        ("tenant admin: subjects (counts per subject)", getter(owner, tenant_url("subjects"), contains="deep")),
        ("tenant admin: the subject with its counts", getter(owner, tenant_url("subject", "deep"))),
        ("tenant admin: its facts, first page", getter(owner, tenant_url("subject_memories", "deep"), contains=ids[0])),
        ("tenant admin: its facts, middle page (cursor)",
         getter(owner, tenant_url("subject_memories", "deep") + "?" + middle_query, contains=ids[middle])),
        ("tenant admin: its facts, last page (cursor)",
         getter(owner, tenant_url("subject_memories", "deep") + "?" + last_query, contains=ids[-1], lacks='rel="next"')),
    ]  # fmt: skip
    return f"One subject with {count:,} facts (`--deep-memories {count}`)", timed([(a, b, n, warm) for a, b in pages])


if __name__ == "__main__":
    main()
