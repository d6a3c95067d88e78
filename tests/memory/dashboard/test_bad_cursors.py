"""A page cursor the pages never handed out, on every listing a person or an operator pages through —
the dashboard's tabs and the admin's memory pages: a 400 page that says what was wrong with the cursor,
never a 500 (``["notadate", "x"]`` was an Elasticsearch refusal turned 500)."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from memory.services import writes
from tenants.models import Person
from tests.bad_inputs import MALFORMED_CURSORS

pytestmark = pytest.mark.django_db
DASHBOARD_TABS = ("/memories/", "/memories/playbooks/", "/memories/episodes/", "/memories/catalog/")


def _says_cursor(response) -> bool:
    return "cursor" in html.unescape(response.content.decode())


@pytest.mark.parametrize(("what", "cursor"), MALFORMED_CURSORS, ids=[w for w, _ in MALFORMED_CURSORS])
def test_the_dashboard_tabs_refuse_a_malformed_cursor_with_a_400_page(client, maya_person, maya, what, cursor):
    writes.fact_write(subject=maya, text="Maya likes tea")
    client.force_login(maya_person)
    for tab in DASHBOARD_TABS:
        response = client.get(tab, {"cursor": cursor})
        assert response.status_code == 400, (tab, what)
        assert _says_cursor(response), (tab, what)


@pytest.fixture
def operator(db) -> Person:
    return Person.objects.create_superuser(email="ops@example.com", password="ops-password-123")


@pytest.mark.parametrize(("what", "cursor"), MALFORMED_CURSORS, ids=[w for w, _ in MALFORMED_CURSORS])
def test_the_admin_memory_pages_refuse_a_malformed_cursor_with_a_400_page(client, operator, maya, what, cursor):
    client.force_login(operator)
    url = reverse("admin:tenants_memorysubject_memories", args=[maya.pk])
    for memory_type in ("semantic", "episodic", "catalog", "archive"):
        response = client.get(url, {"types": memory_type, "cursor": cursor})
        assert response.status_code == 400, (memory_type, what)
        assert "cursor is not one this service handed out" in html.unescape(response.content.decode()), what
