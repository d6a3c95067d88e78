"""A consolidation run that ends announces consolidation.finished (no text: ids, status, counts); a skipped
run announces nothing; the facts it writes announce memory.created like any other write."""

from __future__ import annotations

from memory.consolidation.run import consolidation_run
from tests.fake_llm import Reply, empty_plan, fact
from tests.memory.consolidation.scripted import run_episode, say
from webhooks.models import WebhookEvent
from webhooks.services import endpoint_create


def test_a_finished_run_is_announced_and_a_skipped_one_is_not(maya, llm, settings) -> None:
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = True
    endpoint_create(
        tenant=maya.tenant,
        url="http://127.0.0.1:9/hook",
        events=["consolidation.finished", "memory.created"],
        actor="t",
    )
    say(maya, "remember: Maya is allergic to cats", 0)
    WebhookEvent.objects.all().delete()  # the episode's own memory.created
    llm.script(Reply(status=500))
    failed = consolidation_run(subject=maya)
    llm.script(empty_plan(facts=[fact("Maya is allergic to cats", [run_episode(maya)], fact_type="constraint")]))
    done = consolidation_run(subject=maya)
    assert consolidation_run(subject=maya).status == "skipped"  # no new episodes: not announced
    finished = [e.data for e in WebhookEvent.objects.filter(type="consolidation.finished").order_by("created_at")]
    assert finished == [
        {"run_id": failed.run.pk, "status": "failed", "episodes": 1, "started_by": failed.run.started_by},
        {"run_id": done.run.pk, "status": "done", "episodes": 1, "started_by": done.run.started_by},
    ]
    (created,) = WebhookEvent.objects.filter(type="memory.created")
    assert created.data["memory"]["text"] == "Maya is allergic to cats"
    assert created.data["memory"]["authority"] == "consolidation"
