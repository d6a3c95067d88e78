"""A dry run's plan printed as a diff, with nothing written."""

from __future__ import annotations

from memory.consolidation.diff import plan_diff
from memory.consolidation.run import consolidation_run
from memory.models import ConsolidationRun, ConsolidationState
from memory.selectors import memory_get
from memory.services import writes
from tests.fake_llm import empty_plan, fact
from tests.memory.consolidation.scripted import say, stored, texts


def test_dry_run_prints_the_diff_and_writes_nothing(maya, llm) -> None:
    old = writes.fact_write(subject=maya, text="Maya works at Acme", fact_type="identity")
    episode = say(maya, "Started at Globex on Monday!", 0)
    llm.script(
        empty_plan(
            supersessions=[
                {
                    "target_fact_ids": [old["id"]],
                    "contradiction": "natural",
                    "fact": fact("Maya works at Globex", [episode], fact_type="identity"),
                }
            ],
            facts=[fact("Maya's card is 4111111111111111", [episode])],
        )
    )
    outcome = consolidation_run(subject=maya, dry_run=True)
    assert outcome.status == "dry_run" and outcome.run is None
    assert plan_diff(outcome) == [
        f"- fact {old['id']} 'Maya works at Acme'  (supersede)",
        f"+ fact [identity 0.90] 'Maya works at Globex'  (replaces {old['id']}, natural; episodes {episode})",
        '! dropped fact: contains a secret (card_number)  "Maya\'s card is [redacted card_number]"',
    ]
    assert not ConsolidationRun.objects.exists() and not ConsolidationState.objects.exists()
    assert texts(stored(maya)) == ["Maya works at Acme"]
    assert memory_get(subject=maya, memory_id=old["id"]).get("superseded_by") is None
