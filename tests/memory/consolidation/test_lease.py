"""The subject's lease: a run is refused while another holds it, and runs once it lapses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.consolidation.run import consolidation_run
from memory.models import ConsolidationRun, ConsolidationState
from memory.services.consolidation_lease import consolidation_lease_acquire
from tests.memory.consolidation.scripted import say, stored, texts


def test_a_run_is_refused_while_another_holds_the_lease_and_not_after_it_lapses(maya, llm, settings) -> None:
    say(maya, "remember: Maya plays chess", 0)
    llm.script(job_remembering)
    assert consolidation_lease_acquire(subject=maya, owner="worker-a")
    refused = consolidation_run(subject=maya, owner="worker-b")
    assert refused.status == "busy" and "worker-a" in refused.error
    assert not ConsolidationRun.objects.exists() and llm.requests == []
    # worker-a crashed: its lease lapses and the next run takes over.
    ConsolidationState.objects.filter(subject=maya).update(lease_expires_at=datetime.now(UTC) - timedelta(seconds=1))
    assert consolidation_run(subject=maya, owner="worker-b").status == "done"
    assert texts(stored(maya)) == ["Maya plays chess"]
    assert ConsolidationState.objects.get(subject=maya).lease_owner == ""


def job_remembering(request):
    from tests.fake_llm import remembering

    return remembering(request)
