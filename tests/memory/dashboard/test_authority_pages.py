"""Authority in the person's dashboard (Django test client): a person's correction speaks as the person
and replaces an agent's fact at once; authority is shown and filterable (``?authority=``)."""

from __future__ import annotations

import pytest

from memory import selectors
from memory.models import ConsolidationRun
from memory.services import writes
from tests.memory.consolidation.scripted import held_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser_client(client, maya_person):
    client.force_login(maya_person)
    return client


def test_a_persons_edit_is_stamped_person_and_shown(browser_client, maya, maya_person) -> None:
    agents = writes.fact_write(subject=maya, text="Lives in Porto", written_by="token:svc")
    etag = writes.memory_etag(selectors.memory_hit(subject=maya, memory_id=agents["id"])["_source"])
    response = browser_client.post(f"/memory/{agents['id']}/", {"text": "Lives in Lisbon", "etag": etag})
    assert response.status_code == 302
    new_id = response["Location"].strip("/").split("/")[-1]
    new = selectors.memory_get(subject=maya, memory_id=new_id)
    # The person is named by an opaque id, never their login e-mail (issue 32, finding 10).
    assert (new["authority"], new["written_by"], new["status"]) == ("person", f"person:{maya_person.pk}", "current")
    assert selectors.memory_get(subject=maya, memory_id=agents["id"])["status"] == "superseded"
    page = browser_client.get(f"/memory/{new_id}/").content.decode()
    assert '<dd class="authority">You — agents and the nightly job cannot replace it without your review</dd>' in page
    listed = browser_client.get("/memories/facts/", {"authority": "person"}).content.decode()
    assert "Lives in Lisbon" in listed and "by you" in listed
    assert "Lives in Porto" not in listed
    agents_only = browser_client.get(
        "/memories/facts/", {"authority": "agent", "include_superseded": "on"}
    ).content.decode()
    assert "Lives in Porto" in agents_only and "Lives in Lisbon" not in agents_only
    refused = browser_client.get("/memories/facts/", {"authority": "root"})
    assert refused.status_code == 400


def test_a_proposals_page_sends_the_person_to_review_it_not_to_edit_it(browser_client, maya) -> None:
    mine = writes.fact_write(subject=maya, text="Lives in Faro", authority="person", written_by="person:m")
    proposal = writes.fact_write(subject=maya, text="Lives in Braga", supersedes=[mine["id"]], written_by="token:t")
    page = browser_client.get(f"/memory/{proposal['id']}/")
    html = page.content.decode()
    assert page.status_code == 200 and "This is a proposal waiting for your review" in html
    assert f'href="/review/#proposal-{proposal["id"]}"' in html
    assert page.context.get("form") is None  # no edit form: deciding happens in To review


def test_the_persons_last_decision_in_the_dashboard_finishes_a_run_held_for_review(browser_client, maya) -> None:
    run, (first, second, third) = held_run(maya, "Maya plays the cello", "Maya sings", "Maya paints")
    version = {m: selectors.memory_get(subject=maya, memory_id=m)["version"] for m in (first, second, third)}
    response = browser_client.post(f"/review/{first}/reject/", {"version": version[first]})
    assert response.status_code == 302
    assert ConsolidationRun.objects.get(pk=run.pk).status == "needs_review"  # two still wait
    shown = [f"{m}:{version[m]}" for m in (second, third)]
    response = browser_client.post(
        "/review/all/", {"decision": "accept", "written_by": f"run:{run.pk}", "shown": shown}
    )
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "done" and run.changes["refused"] == [run.plan["facts"][0]["key"]]
