"""Every way in counts a recall in the usage ledger, once (memory.tasks.recall_usage_schedule): REST (recall,
turn), MCP, the dashboard's search, the support pages' search (a tenant admin's, an operator's in the Django
admin) and ``atlas_recall``. A page that calls another (``/`` is the facts list, ``/?q=`` its search), a
retried turn answered from its stored answer, a list and a refused request count nothing more; only an
agent's recall moves use counts."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from memory import tasks
from memory.services import writes
from tenants import services
from tenants.models import Person, UsageDay
from tenants.usage import usage_today
from tests.browser import person_create
from tests.memory.api.test_rest import world  # noqa: F401 — the live-server fixture
from tests.memory.dashboard.conftest import PASSWORD, linked_person
from tests.memory.mcp.conftest import call, payload, token_for, tool_error


def _recalls(tenant) -> int:
    row = UsageDay.objects.filter(tenant=tenant, day=usage_today()).first()
    return row.recalls if row else 0


@pytest.fixture
def bumps(settings, monkeypatch) -> list:
    """The use-count bumps scheduled (recorded, not run: no worker here)."""
    settings.ATLAS_USAGE_RECORDING = "celery"
    scheduled: list = []
    monkeypatch.setattr(tasks.memories_usage_record_task, "delay", lambda targets: scheduled.append(targets))
    return scheduled


@pytest.fixture
def maya_fact(maya) -> dict:
    return writes.fact_write(subject=maya, text="Maya lives in Lisbon", fact_type="identity")


@pytest.mark.django_db
def test_the_dashboard_search_counts_once_per_search_and_moves_no_use_count(client, maya, maya_fact, bumps):
    client.force_login(linked_person("maya@example.org", maya))
    assert client.get("/memories/?q=where+does+maya+live").status_code == 200
    assert _recalls(maya.tenant) == 1
    assert client.get("/?q=lisbon").status_code == 200  # the home page is the list, its search the same one
    assert _recalls(maya.tenant) == 2
    assert client.get("/memories/playbooks/?q=lisbon&agent_id=planner").status_code == 200
    assert _recalls(maya.tenant) == 3
    for not_a_recall in ("/", "/memories/facts/", "/memories/?q=lisbon&metadata_key=Bad-Key&metadata_value=1"):
        client.get(not_a_recall)
    assert _recalls(maya.tenant) == 3
    assert bumps == []  # a person's own search is not the agent using a memory


@pytest.mark.django_db
def test_the_support_pages_count_a_search_and_not_a_look(client, maya, maya_fact, bumps):
    admin = person_create("support@example.org", PASSWORD)
    services.membership_add(tenant=maya.tenant, email=admin.email, role="admin", actor="test")
    client.force_login(admin)
    base = f"/tenant/{maya.tenant.slug}/subjects/maya/memories/"
    assert client.get(f"{base}?q=lisbon").status_code == 200
    assert _recalls(maya.tenant) == 1
    assert client.get(base).status_code == 200
    assert client.get(f"{base}{maya_fact['id']}/").status_code == 200
    assert client.get(f"{base}?q=lisbon&metadata_key=priority").status_code == 400
    assert _recalls(maya.tenant) == 1
    operator = Person.objects.create_superuser(email="ops@example.com", password="ops-password-123")
    client.force_login(operator)
    browse = reverse("admin:tenants_memorysubject_memories", args=[maya.pk])
    assert client.get(browse, {"q": "lisbon"}).status_code == 200
    assert client.get(browse).status_code == 200
    assert _recalls(maya.tenant) == 2
    assert bumps == []


@pytest.mark.django_db
def test_atlas_recall_counts_once_and_a_refused_one_not_at_all(maya, maya_fact, bumps, capsys):
    tenant = maya.tenant.slug
    call_command("atlas_recall", "--tenant", tenant, "--subject", "maya", "where does maya live", "--json")
    assert _recalls(maya.tenant) == 1
    call_command("atlas_recall", "--tenant", tenant, "--subject", "maya", "lisbon")
    assert _recalls(maya.tenant) == 2
    with pytest.raises(CommandError):
        call_command("atlas_recall", "--tenant", tenant, "--subject", "maya", "lisbon", "--filters", '{"colour": 1}')
    assert _recalls(maya.tenant) == 2
    assert bumps == []  # an operator's look is not the agent using a memory


@pytest.mark.django_db(transaction=True)
def test_rest_counts_a_recall_and_a_turn_once_and_not_their_retries(world, settings) -> None:  # noqa: F811
    settings.ATLAS_USAGE_RECORDING = "off"  # no worker: the ledger is counted before any bump
    svc, tenant = world["svc"], world["tenant"]
    assert svc("POST", "subjects/alice/facts", json={"text": "Alice lives in Lisbon"}).ok
    assert svc("POST", "subjects/alice/recall", json={"query": "where does alice live"}).ok
    assert _recalls(tenant) == 1
    turn = {"text": "where do I live again?", "recall": {"k": 3}}
    for _ in range(2):  # the retry is answered from the stored answer: no second recall
        answer = svc("POST", "subjects/alice/turn", json=turn, headers={"Idempotency-Key": "turn-1"})
        assert answer.status_code == 201, answer.text
    assert _recalls(tenant) == 2
    assert svc("POST", "subjects/alice/recall", json={"query": "x", "filters": {"colour": 1}}).status_code == 400
    assert svc("GET", "subjects/alice/memories").ok
    assert _recalls(tenant) == 2


@pytest.mark.django_db(transaction=True)
def test_mcp_counts_a_recall_once(atlas_server, maya, maya_fact, settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"
    token = token_for(maya.tenant, maya)
    assert payload(call(atlas_server.url, token, "recall_memory", {"query": "where does maya live"}))["hits"]
    assert _recalls(maya.tenant) == 1
    tool_error(call(atlas_server.url, token, "recall_memory", {"query": "lisbon", "filters": {"colour": 1}}))
    payload(call(atlas_server.url, token, "list_memories", {}))
    assert _recalls(maya.tenant) == 1
