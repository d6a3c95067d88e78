"""Consolidation's LLM tokens per fact distilled, on a fixed scenario, with the fake LLM billing its calls
as a paid one would (tests/fake_llm.py ``billed``: about 4 characters a token in and out).

Scenario (seeded, the same every run): S subjects, each with F existing facts and E new turns in sessions
of 10 (every turn cites the turn before it, as agents' conversations do; every fourth turn holds
something to remember, a few turns repeat small talk), and one more subject with nothing new, which must
cost no call. Prints the calls, tokens in and out, facts written and tokens per fact.
Usage: python benchmarks/consolidation_tokens.py [--subjects 4] [--episodes 40] [--facts 25]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
from datetime import UTC, datetime, timedelta

from _stack import ROOT, atlas_stack, progress
from consolidation import TOPICS, fact_lines

sys.path.insert(0, str(ROOT))

SMALL_TALK = ["ok thanks", "great, thank you!", "sounds good", "ok thanks"]


def episode_lines(rng: random.Random, subject: str, count: int, start: datetime) -> list[str]:
    lines = []
    for n in range(count):
        topic = rng.choice(TOPICS)
        if n % 5 == 4:
            text = SMALL_TALK[n % len(SMALL_TALK)]
        else:
            text = f"Could you help me with the {topic} again? Last time we looked at part {n} of it and it was long."
        if n % 4 == 0:
            text += f" remember: {subject} cares about {topic} number {n}"
        lines.append(
            json.dumps(
                {
                    "id": f"{subject}-e{n}",
                    "user_id": subject,
                    "memory_type": "episodic",
                    "text": text,
                    "timestamp": (start + timedelta(minutes=n)).isoformat(),
                    "session_id": f"{subject}-s{n // 10}",
                }
            )
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subjects", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--facts", type=int, default=25)
    parser.add_argument(
        "--staged", action="store_true", help="a model per stage (ATLAS_LLM_MODEL_EXTRACTION / _JUDGEMENT)"
    )
    args = parser.parse_args()
    rng = random.Random(37)

    with atlas_stack():
        from django.conf import settings

        from memory.consolidation.run import consolidation_run
        from memory.portable.lines import memories_import
        from tenants.services import tenant_create
        from tests.fake_llm import FakeLlm, billed, billed_in, remembering

        fake = FakeLlm().start().script(billed(remembering))
        settings.ATLAS_LLM_BASE_URL = fake.base_url
        settings.ATLAS_LLM_MODEL = "fake-billed"
        if args.staged:
            settings.ATLAS_LLM_MODEL_EXTRACTION, settings.ATLAS_LLM_MODEL_JUDGEMENT = "fake-small", "fake-big"
        tenant = tenant_create(slug="tokens", name="Token benchmark", actor="benchmark")
        start = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
        names = [f"subject-{n}" for n in range(args.subjects)]
        lines = fact_lines("quiet", args.facts)
        for name in names:
            lines += fact_lines(name, args.facts) + episode_lines(rng, name, args.episodes, start)
        progress(f"importing {len(lines)} memories …")
        report = memories_import(tenant=tenant, lines=lines, create_subjects=True, actor="benchmark")
        assert not report.errors, report.errors[:3]
        subjects = {s.external_id: s for s in tenant.subjects.all()}

        progress(f"consolidating {args.subjects} subjects and one with nothing new …")
        quiet = consolidation_run(subject=subjects["quiet"])
        assert quiet.status == "skipped" and not fake.requests, "a subject with nothing new cost a call"
        prompt = completion = facts = 0
        for name in names:
            outcome = consolidation_run(subject=subjects[name])
            assert outcome.status == "done", outcome.error
            run = outcome.run
            prompt += run.prompt_tokens
            completion += run.completion_tokens
            facts += len(run.changes.get("facts", []))
        calls = len(fake.requests)
        by_model: dict[str, int] = {}
        for request in fake.requests:
            by_model[request["model"]] = by_model.get(request["model"], 0) + billed_in(request)
        fake.stop()

    print(
        f"# consolidation tokens — {datetime.now(UTC):%Y-%m-%d}, {platform.machine()}, python "
        f"{platform.python_version()}"
    )
    print(
        f"# command: python benchmarks/consolidation_tokens.py --subjects {args.subjects} "
        f"--episodes {args.episodes} --facts {args.facts}{' --staged' if args.staged else ''}"
    )
    print()
    print("| measure | value |")
    print("|---|---|")
    print(f"| LLM calls (subjects with new turns / with nothing new) | {calls} / 0 |")
    print(f"| tokens in | {prompt} |")
    print(f"| tokens out | {completion} |")
    print(f"| facts distilled | {facts} |")
    print(f"| tokens in per fact | {prompt / facts:.0f} |")
    print(f"| tokens (in + out) per fact | {(prompt + completion) / facts:.0f} |")
    for model, tokens in by_model.items():
        print(f"| tokens in asked of {model} | {tokens} |")


if __name__ == "__main__":
    main()
