"""Consolidation's own cost on the embedded stack, with the fake LLM answering instantly.

1. Throughput: S subjects, each with E new episodes and F existing facts, consolidated one after the
   other in this process (one worker): subjects per minute, and where a run's time goes (gathering the
   input: the episode read and the hybrid recalls; validation: the duplicate check embeds the proposed
   facts; applying: every write embeds with the three models and indexes).
2. One run over 100 new episodes: its time by phase, the prompt it sends (characters, and tokens
   estimated at 4 characters each — what a paid LLM would bill for input), and the writes it makes.

The fake LLM proposes, per subject, one fact per fourth new episode, one supersession and one
confirmation of existing facts: a busy night's plan.
Usage: python benchmarks/consolidation.py [--subjects 20] [--episodes 20] [--facts 30]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from _stack import ROOT, atlas_stack, progress

sys.path.insert(0, str(ROOT))

TOPICS = ["router", "flight", "recipe", "invoice", "marathon", "garden", "violin", "sailing", "chess", "pottery"]


def episode_lines(rng: random.Random, subject: str, count: int, start: datetime) -> list[str]:
    lines = []
    for n in range(count):
        topic = rng.choice(TOPICS)
        text = f"We talked about the {topic} again today (turn {n})."
        if n % 4 == 0:
            text += f" remember: {subject} cares about {topic} number {n}"
        at = (start + timedelta(minutes=n)).isoformat()
        lines.append(
            json.dumps(
                {
                    "id": f"{subject}-e{n}",
                    "user_id": subject,
                    "memory_type": "episodic",
                    "text": text,
                    "timestamp": at,
                    "session_id": f"{subject}-s{n // 10}",
                }
            )
        )
    return lines


def fact_lines(subject: str, count: int) -> list[str]:
    return [
        json.dumps(
            {
                "id": f"{subject}-f{n}",
                "user_id": subject,
                "memory_type": "semantic",
                "text": f"{subject} once mentioned the {TOPICS[n % len(TOPICS)]} (fact {n})",
                "days_ago": 30,
            }
        )
        for n in range(count)
    ]


def busy_night(request: dict) -> dict:
    """Facts from the 'remember:' turns, one supersession and one confirmation of existing facts."""
    from tests.fake_llm import empty_plan, fact, prompt_of, turns_of

    turns = turns_of(request)
    existing = prompt_of(request)["existing_facts"]
    facts = [fact(t["text"].split("remember:", 1)[1].strip(), [t["id"]]) for t in turns if "remember:" in t["text"]]
    plan = empty_plan(facts=facts)
    if len(existing) >= 2 and turns:
        plan["confirmations"] = [{"fact_id": existing[0]["id"], "source_episodes": [turns[0]["id"]]}]
        plan["supersessions"] = [
            {
                "target_fact_ids": [existing[1]["id"]],
                "contradiction": "natural",
                "fact": fact(existing[1]["text"] + " — and still does", [turns[-1]["id"]]),
            }
        ]
    return plan


class Phases:
    """Wall time per phase of each run, by wrapping the service's steps."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.prompt_chars = 0

    def wrap(self, module, name: str, phase: str) -> None:
        original = getattr(module, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.current[phase] += time.perf_counter() - t0

        setattr(module, name, timed)

    def take(self) -> dict[str, float]:
        out, self.current = dict(self.current), defaultdict(float)
        return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subjects", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=20, help="new episodes per subject (throughput part)")
    parser.add_argument("--facts", type=int, default=30, help="existing facts per subject")
    parser.add_argument("--big", type=int, default=100, help="new episodes of the one-run cost part")
    parser.add_argument(
        "--recall-queries", type=int, default=None, help="ATLAS_CONSOLIDATION_RECALL_QUERIES (default: the setting's)"
    )
    args = parser.parse_args()
    rng = random.Random(18)

    with atlas_stack():
        from django.conf import settings

        from memory.consolidation import run as job  # the run looks these names up in its own module
        from memory.inference import llm as llm_module
        from memory.portable.lines import memories_import
        from tenants.services import tenant_create
        from tests.fake_llm import FakeLlm

        fake = FakeLlm().start().script(busy_night)
        settings.ATLAS_LLM_BASE_URL = fake.base_url
        settings.ATLAS_LLM_MODEL = "fake-instant"
        settings.ATLAS_CONSOLIDATION_MAX_EPISODES = max(args.big, args.episodes)
        if args.recall_queries is not None:
            settings.ATLAS_CONSOLIDATION_RECALL_QUERIES = args.recall_queries
        recall_queries = settings.ATLAS_CONSOLIDATION_RECALL_QUERIES
        phases = Phases()
        phases.wrap(job, "consolidation_input_gather", "gather")
        phases.wrap(job.PlanValidator, "plan", "validate")
        phases.wrap(job, "plan_apply", "apply")
        original_chat = llm_module.ChatClient.chat_json

        def counted_chat(self, *, system, user, schema, schema_name):
            phases.prompt_chars += len(system) + len(user) + len(json.dumps(schema))
            t0 = time.perf_counter()
            try:
                return original_chat(self, system=system, user=user, schema=schema, schema_name=schema_name)
            finally:
                phases.current["llm (fake, instant)"] += time.perf_counter() - t0

        llm_module.ChatClient.chat_json = counted_chat

        tenant = tenant_create(slug="bench", name="Benchmark", actor="benchmark")
        start = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
        names = [f"subject-{n}" for n in range(args.subjects)] + ["big"]
        lines = []
        for name in names:
            lines += fact_lines(name, args.facts)
            lines += episode_lines(rng, name, args.big if name == "big" else args.episodes, start)
        progress(f"importing {len(lines)} memories for {len(names)} subjects …")
        report = memories_import(tenant=tenant, lines=lines, create_subjects=True, actor="benchmark")
        assert not report.errors, report.errors[:3]
        subjects = {s.external_id: s for s in tenant.subjects.all()}

        # Warm-up (model loading), not counted: one run of a throwaway subject.
        memories_import(tenant=tenant, lines=episode_lines(rng, "warmup", 4, start), create_subjects=True, actor="b")
        job.consolidation_run(subject=tenant.subjects.get(external_id="warmup"))
        phases.take()

        progress(f"consolidating {args.subjects} subjects × {args.episodes} new episodes …")
        per_run: list[dict[str, float]] = []
        t0 = time.perf_counter()
        for name in names[:-1]:
            run_t0 = time.perf_counter()
            outcome = job.consolidation_run(subject=subjects[name])
            assert outcome.status == "done", outcome.error
            timing = phases.take()
            timing["total"] = time.perf_counter() - run_t0
            per_run.append(timing)
        wall = time.perf_counter() - t0

        progress(f"one run over {args.big} new episodes …")
        phases.prompt_chars = 0
        big_t0 = time.perf_counter()
        big = job.consolidation_run(subject=subjects["big"])
        assert big.status == "done", big.error
        big_timing = phases.take()
        big_timing["total"] = time.perf_counter() - big_t0
        recalls = min(recall_queries, args.big)
        fake.stop()

    print(
        f"# consolidation benchmark — {datetime.now(UTC):%Y-%m-%d}, {platform.machine()} "
        f"{platform.processor() or platform.platform()}, python {platform.python_version()}"
    )
    print(
        f"# command: python benchmarks/consolidation.py --subjects {args.subjects} --episodes {args.episodes} "
        f"--facts {args.facts} --big {args.big} --recall-queries {recall_queries}"
    )
    print()
    print(
        f"## throughput: {args.subjects} subjects × {args.episodes} new episodes, {args.facts} facts each, "
        f"one process, at most {recall_queries} recalls a run"
    )
    print()
    print("| measure | value |")
    print("|---|---|")
    print(f"| subjects / minute | {args.subjects / wall * 60:.1f} |")
    print(f"| new episodes / minute | {args.subjects * args.episodes / wall * 60:.0f} |")
    phase_names = ["gather", "llm (fake, instant)", "validate", "apply", "total"]
    for phase in phase_names:
        values = [r.get(phase, 0.0) * 1000 for r in per_run]
        print(f"| run {phase}, ms p50 / max | {statistics.median(values):.0f} / {max(values):.0f} |")
    print()
    print(f"## one run over {args.big} new episodes ({args.facts} existing facts)")
    print()
    print("| measure | value |")
    print("|---|---|")
    for phase in phase_names:
        print(f"| {phase}, ms | {big_timing.get(phase, 0.0) * 1000:.0f} |")
    print(f"| hybrid recalls for related memories | {recalls} |")
    print(f"| prompt sent, characters | {phases.prompt_chars} |")
    print(f"| prompt, tokens (≈ characters / 4) | {phases.prompt_chars // 4} |")
    counts = big.run.change_counts()
    print(f"| changes written | {', '.join(f'{n} {k}' for k, n in counts.items())} |")


if __name__ == "__main__":
    main()
