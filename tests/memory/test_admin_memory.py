"""The operators' memory pages in the admin: staff with the memory permissions browse, search, open, edit,
follow chains and forget; every look and change is audited; without a permission nothing changes; another
subject's memory through this subject's URL is a 404 even with the code-level filter off."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from memory import selectors
from memory.services import writes
from tenants.models import AuditRecord, Person
from tests.es_outage import elasticsearch_unreachable


@pytest.fixture
def operator(db) -> Person:
    return Person.objects.create_superuser(email="ops@example.com", password="ops-password-123")


def _staff_with(*codenames: str) -> Person:
    person = Person.objects.create_user(email=f"staff-{'-'.join(codenames) or 'none'}@example.com", password="x")
    person.is_staff = True
    person.save()
    person.user_permissions.set(Permission.objects.filter(content_type__app_label="tenants", codename__in=codenames))
    return person


def _url(name: str, *args) -> str:
    return reverse(f"admin:tenants_memorysubject_{name}", args=args)


@pytest.fixture
def maya_fact(maya) -> dict:
    writes.episode_write(subject=maya, text="I just moved to Lisbon", session_id="s1")
    writes.playbook_write(
        subject=maya, name="book a table", trigger_text="dinner plans", steps=[{"instruction": "call"}]
    )
    return writes.fact_write(subject=maya, text="Maya lives in Lisbon", fact_type="identity")


def test_an_operator_browses_searches_edits_follows_the_chain_and_forgets(client, operator, maya, maya_fact):
    client.force_login(operator)
    subject_page = client.get(reverse("admin:tenants_memorysubject_change", args=[maya.pk])).content.decode()
    assert _url("memories", maya.pk) in subject_page
    tenant_page = client.get(reverse("admin:tenants_tenant_change", args=[maya.tenant.pk])).content.decode()
    assert _url("memories", maya.pk) in tenant_page

    facts = client.get(_url("memories", maya.pk))
    assert facts.status_code == 200
    assert "Maya lives in Lisbon" in facts.content.decode()
    assert "I just moved to Lisbon" not in facts.content.decode()  # the facts tab holds facts only
    episodes = client.get(_url("memories", maya.pk), {"types": "episodic"}).content.decode()
    assert "I just moved to Lisbon" in episodes

    found = client.get(_url("memories", maya.pk), {"q": "where does Maya live", "types": "semantic"})
    assert found.status_code == 200
    assert found.context["memories"][0]["id"] == maya_fact["id"]
    assert found.context["legs"]

    detail = client.get(_url("memory", maya.pk, maya_fact["id"]))
    assert detail.status_code == 200
    etag = detail.context["etag"]
    edited = client.post(_url("memory", maya.pk, maya_fact["id"]), {"text": "Maya lives in Porto", "etag": etag})
    assert edited.status_code == 302
    new_id = edited["Location"].rstrip("/").rsplit("/", 1)[1]
    chain = client.get(_url("memory_chain", maya.pk, new_id))
    assert [(s["text"], s["position"]) for s in chain.context["chain"]] == [
        ("Maya lives in Lisbon", "older"),
        ("Maya lives in Porto", "this"),
    ]
    back = client.get(_url("memory_chain", maya.pk, maya_fact["id"]))
    assert [s["position"] for s in back.context["chain"]] == ["this", "newer"]

    confirm = client.get(_url("memory_forget", maya.pk, new_id))
    assert confirm.status_code == 200 and "cannot be restored" in confirm.content.decode()
    forgotten = client.post(_url("memory_forget", maya.pk, new_id), follow=True)
    (shown,) = [str(m) for m in forgotten.context["messages"]]
    assert shown.startswith(f"Memory {new_id} is forgotten. Removed — documents deleted: semantic 1; run records: 0;")
    assert client.get(_url("memory", maya.pk, new_id)).status_code == 404

    actions = list(AuditRecord.objects.filter(actor="admin:ops@example.com").values_list("action", flat=True))
    assert sorted(set(actions)) == [
        "memory.browse", "memory.chain", "memory.edit", "memory.forget", "memory.search", "memory.view",
    ]  # fmt: skip
    audit_text = str(list(AuditRecord.objects.values_list("target", "detail")))
    assert "Lisbon" not in audit_text and "Porto" not in audit_text  # ids, never the memories' text


def test_the_subjects_list_leads_with_the_memory_pages(client, operator, maya):
    """At 1,280 px the last column was cut off: the link to a subject's memories is the row's second cell."""
    client.force_login(operator)
    page = client.get(reverse("admin:tenants_memorysubject_changelist")).content.decode()
    row = page[page.index(f">{maya.external_id}</a>") :]
    assert row.index("Memories of maya") < row.index(maya.tenant.slug)


def test_a_stale_version_is_refused_and_nothing_changes(client, operator, maya, maya_fact):
    client.force_login(operator)
    etag = client.get(_url("memory", maya.pk, maya_fact["id"])).context["etag"]
    faro = writes.fact_edit(subject=maya, memory_id=maya_fact["id"], text="Maya lives in Faro")
    stale = client.post(_url("memory", maya.pk, maya_fact["id"]), {"text": "Maya lives in Porto", "etag": etag})
    assert stale.status_code == 412  # the version the form was read at was replaced meanwhile
    assert f"newest version is {faro['id']}" in stale.content.decode()
    texts = [s["text"] for s in selectors.memory_chain_get(subject=maya, memory_id=maya_fact["id"])]
    assert texts == ["Maya lives in Lisbon", "Maya lives in Faro"]
    assert not AuditRecord.objects.filter(action="memory.edit").exists()


def test_an_operator_can_record_that_the_old_version_was_wrong(client, operator, maya, maya_fact):
    client.force_login(operator)
    detail = client.get(_url("memory", maya.pk, maya_fact["id"]))
    page = detail.content.decode()
    assert 'value="natural" id="contradiction-natural" checked' in page
    assert 'name="text" rows="3" required maxlength="8000"' in page  # the service's limit (MAX_TEXT_CHARS)
    assert "It was wrong: the old version was never true" in page
    sent = {"text": "Maya lives in Lima", "etag": detail.context["etag"]}
    refused = client.post(_url("memory", maya.pk, maya_fact["id"]), {**sent, "contradiction": "mild"})
    assert refused.status_code == 400 and "contradiction must be one of natural, harsh" in refused.content.decode()
    stale = client.post(_url("memory", maya.pk, maya_fact["id"]), {**sent, "etag": '"x"', "contradiction": "harsh"})
    assert stale.status_code == 412
    assert [s["text"] for s in selectors.memory_chain_get(subject=maya, memory_id=maya_fact["id"])] == [
        "Maya lives in Lisbon"
    ]
    assert not AuditRecord.objects.filter(action="memory.edit").exists()
    edited = client.post(_url("memory", maya.pk, maya_fact["id"]), {**sent, "contradiction": "harsh"}, follow=True)
    assert "the old one stays in the chain, marked as wrong." in edited.content.decode()
    old, new = selectors.memory_chain_get(subject=maya, memory_id=maya_fact["id"])
    assert (old["retracted"], new["text"], new["contradiction"]) == (True, "Maya lives in Lima", "harsh")
    chain = client.get(_url("memory_chain", maya.pk, new["id"])).content.decode()
    assert "(harsh: it was wrong)" in chain
    # The memory page reads as labels and links, not raw keys and Python lists (issue 27 point 13).
    replaced = client.get(_url("memory", maya.pk, old["id"])).content.decode()
    assert "<dt>Replaced by</dt>" in replaced and f'href="{_url("memory", maya.pk, new["id"])}"' in replaced
    assert (
        "<dt>Retracted (it was wrong)</dt><dd>yes</dd>" in replaced
        and "<dt>Fact type</dt><dd>identity</dd>" in replaced
    )
    assert "superseded_by" not in replaced and "['" not in replaced
    # The newer version forgotten: the old one stays replaced, by nothing anyone can follow.
    from memory.services.forget import memory_forget

    memory_forget(subject=maya, memory_id=new["id"], actor="test")
    orphan = client.get(_url("memory", maya.pk, old["id"])).content.decode()
    assert "<dt>Replaced by</dt><dd>a newer version, since forgotten</dd>" in orphan
    assert "(forgotten)" not in orphan
    audit = AuditRecord.objects.get(action="memory.edit")
    assert audit.detail == {"new_id": new["id"], "contradiction": "harsh"}


def test_permissions_are_checked_and_a_refusal_changes_nothing(client, maya, maya_fact):
    client.force_login(_staff_with())
    assert client.get(_url("memories", maya.pk)).status_code == 403
    client.force_login(_staff_with("view_memory"))
    assert client.get(_url("memories", maya.pk)).status_code == 200
    detail = client.get(_url("memory", maya.pk, maya_fact["id"]))
    assert "Correct this fact" not in detail.content.decode()
    etag = detail.context["etag"]
    assert client.post(_url("memory", maya.pk, maya_fact["id"]), {"text": "x", "etag": etag}).status_code == 403
    assert client.post(_url("memory_forget", maya.pk, maya_fact["id"])).status_code == 403
    assert selectors.memory_get(subject=maya, memory_id=maya_fact["id"])["text"] == "Maya lives in Lisbon"
    assert not AuditRecord.objects.filter(action__in=["memory.edit", "memory.forget"]).exists()
    client.logout()
    assert client.get(_url("memories", maya.pk)).status_code == 302  # to the login


def test_another_subjects_memory_is_not_found_through_this_subjects_pages(
    client, operator, maya, tom, other_tenant_subject, settings
):
    client.force_login(operator)
    toms = writes.fact_write(subject=tom, text="Tom likes tea")
    foreign = writes.fact_write(subject=other_tenant_subject, text="The other Maya likes coffee")
    settings.ATLAS_CODE_FILTER = False  # only the subject key's DLS stands between them
    for memory_id in (toms["id"], foreign["id"]):
        for name in ("memory", "memory_chain", "memory_forget"):
            response = client.get(_url(name, maya.pk, memory_id))
            assert response.status_code == 404, (name, memory_id)
            assert "likes" not in response.content.decode()
        assert client.post(_url("memory_forget", maya.pk, memory_id)).status_code == 404
        assert client.post(_url("memory", maya.pk, memory_id), {"text": "hijack", "etag": '"x"'}).status_code == 404
    settings.ATLAS_CODE_FILTER = True
    assert selectors.memory_get(subject=tom, memory_id=toms["id"])["text"] == "Tom likes tea"
    assert [m["text"] for m in selectors.memory_list(subject=tom)["memories"]] == ["Tom likes tea"]


def test_bad_input_gets_a_clear_page(client, operator, maya):
    client.force_login(operator)
    unknown = client.get(_url("memories", maya.pk), {"types": "secrets"})
    assert unknown.status_code == 400 and "no memory type" in unknown.content.decode()
    assert client.get(_url("memories", maya.pk), {"sneaky": "1"}).status_code == 400
    assert client.get(_url("memories", maya.pk), {"cursor": "not-a-cursor"}).status_code == 400
    assert client.get(_url("memories", 999999)).status_code == 404
    # The names these pages took before REST's `types` and `include_superseded` became every interface's:
    # a bookmark is sent on (301) for one release; both names at once is refused.
    old = client.get(_url("memories", maya.pk), {"type": "episodic", "superseded": "1"})
    assert old.status_code == 301
    assert old["Location"] == f"{_url('memories', maya.pk)}?types=episodic&include_superseded=1"
    both = client.get(_url("memories", maya.pk), {"type": "episodic", "types": "semantic"})
    assert both.status_code == 400 and "this page takes no parameter &#x27;type&#x27;" in both.content.decode()


def test_an_elasticsearch_outage_is_a_503_page_saying_what_failed(client, operator, maya, maya_fact, settings):
    client.force_login(operator)
    with elasticsearch_unreachable(settings):
        for url in (_url("memories", maya.pk), _url("memory", maya.pk, maya_fact["id"])):
            response = client.get(url)
            assert response.status_code == 503, url
            assert "Elasticsearch is unreachable" in response.content.decode()


def test_browsing_pages_with_a_cursor(client, operator, maya):
    from memory.on_behalf import PAGE_SIZE

    for n in range(PAGE_SIZE + 3):
        writes.episode_write(subject=maya, text=f"turn number {n}", session_id="long", refresh=n == PAGE_SIZE + 2)
    client.force_login(operator)
    first = client.get(_url("memories", maya.pk), {"types": "episodic"})
    assert len(first.context["memories"]) == PAGE_SIZE and first.context["next_cursor"]
    assert "Next page" in first.content.decode() and "First page" not in first.content.decode()
    second = client.get(_url("memories", maya.pk), {"types": "episodic", "cursor": first.context["next_cursor"]})
    assert len(second.context["memories"]) == 3 and second.context["next_cursor"] is None
    seen = [m["id"] for m in first.context["memories"] + second.context["memories"]]
    assert len(set(seen)) == PAGE_SIZE + 3


def test_an_operators_correction_is_stamped_operator_and_replaces_the_persons_fact(client, operator, maya) -> None:
    mine = writes.fact_write(subject=maya, text="Maya lives in Faro", authority="person", written_by="person:m")
    client.force_login(operator)
    detail = client.get(_url("memory", maya.pk, mine["id"]))
    rows = {row["label"]: row.get("value") for row in detail.context["fields"]}
    assert (rows["Authority"], rows["Written by"], rows["Status"]) == ("person", "person:m", "current")
    edited = client.post(
        _url("memory", maya.pk, mine["id"]), {"text": "Maya lives in Braga", "etag": detail.context["etag"]}
    )
    assert edited.status_code == 302
    new_id = edited["Location"].rstrip("/").rsplit("/", 1)[1]
    new = selectors.memory_get(subject=maya, memory_id=new_id)
    assert (new["authority"], new["written_by"], new["status"]) == ("operator", f"operator:{operator.pk}", "current")
    assert selectors.memory_get(subject=maya, memory_id=mine["id"])["superseded_by"] == [new_id]
    listed = client.get(_url("memories", maya.pk)).content.decode()
    assert "<td>operator</td>" in listed


def test_the_memory_page_says_where_it_came_from(client, operator, maya):
    """The admin's memory page shows the provenance: authority, writer, the cited turns (linked; a
    forgotten one as such) and the consolidation run."""
    from memory.models import ConsolidationRun
    from memory.services.forget import memory_forget

    run = ConsolidationRun.objects.create(tenant=maya.tenant, subject=maya, status=ConsolidationRun.Status.DONE)
    kept = writes.episode_write(subject=maya, text="I take the 8:15 train", at="2026-03-02T08:00:00Z")
    gone = writes.episode_write(subject=maya, text="I commute by train", at="2026-03-01T08:00:00Z")
    fact = writes.fact_write(
        subject=maya, text="Maya commutes by train", source_episodes=[gone["id"], kept["id"]], at="2026-03-03T02:00:00Z"
    )
    from memory.elastic import store
    from memory.scope import SubjectScope

    # Stamped as the consolidation run's own write would be (the writing services stamp it; issue 28).
    store.memory_index(
        SubjectScope.writer(),
        memory_type="semantic",
        memory_id=fact["id"],
        source={**selectors.memory_hit(subject=maya, memory_id=fact["id"])["_source"], "authority": "consolidation",
                "written_by": f"run:{run.pk}"},
        refresh=True,
    )  # fmt: skip
    memory_forget(subject=maya, memory_id=gone["id"], actor="test")
    client.force_login(operator)
    response = client.get(_url("memory", maya.pk, fact["id"]))
    page = response.content.decode()
    assert response.context["provenance"]["authority"] == "consolidation"
    assert f"nightly consolidation, run {run.pk}" in page
    assert "a turn (forgotten since)" in page and gone["id"] not in page  # the id is free again: not shown
    assert f'href="{_url("memory", maya.pk, kept["id"])}">“I take the 8:15 train”</a>' in page
