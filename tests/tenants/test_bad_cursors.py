"""The tenant section's listings — the catalog and the support view of a subject's memories — take back
the cursors they hand out and refuse any other with a 400 page that names the cursor (``["notadate",
"x"]`` was a 500 on both)."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from memory.dashboard.tenant_views import CATALOG_PAGE_SIZE
from memory.on_behalf import PAGE_SIZE
from memory.services import catalog, writes
from tenants import services
from tenants.models import Person
from tests.bad_inputs import MALFORMED_CURSORS

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, writer, acme, alice):
    owner = Person.objects.create_user(email="owner@acme.test", password="a long enough password 1")
    services.membership_add(tenant=acme, email=owner.email, role="owner", actor="test")
    client.force_login(owner)
    return client


def _pages(client, url: str, params: dict, key: str) -> list[str]:
    seen, cursor = [], None
    while True:
        response = client.get(url, {**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.content[:300]
        seen += [m["id"] for m in response.context[key]]
        cursor = response.context["next_cursor"]
        if not cursor:
            return seen


def test_the_catalog_and_the_support_view_page_through_with_their_own_cursors(admin_client, acme, alice):
    entries = [
        catalog.catalog_entry_write(tenant=acme, actor="t", title=f"E{n}", text=f"entry {n}")
        for n in range(CATALOG_PAGE_SIZE + 2)
    ]
    facts = [writes.fact_write(subject=alice, text=f"Alice fact {n}", refresh=False) for n in range(PAGE_SIZE + 1)]
    writes.fact_write(subject=alice, text="the last fact")  # refreshes the index for all
    shown = _pages(admin_client, reverse("tenant:catalog", args=["acme"]), {}, "entries")
    assert sorted(shown) == sorted(e["id"] for e in entries)
    url = reverse("tenant:subject_memories", args=["acme", "alice"])
    shown = _pages(admin_client, url, {"types": "semantic"}, "memories")
    assert len(shown) == len(set(shown)) == len(facts) + 1


@pytest.mark.parametrize(("what", "cursor"), MALFORMED_CURSORS, ids=[w for w, _ in MALFORMED_CURSORS])
def test_a_malformed_cursor_is_a_400_page_naming_it(admin_client, acme, alice, what, cursor):
    catalog.catalog_entry_write(tenant=acme, actor="t", title="Returns", text="within 30 days")
    writes.fact_write(subject=alice, text="Alice likes tea")
    urls = [
        (reverse("tenant:catalog", args=["acme"]), {}),
        *(
            (reverse("tenant:subject_memories", args=["acme", "alice"]), {"types": t})
            for t in ("semantic", "procedural", "episodic", "catalog", "archive")
        ),
    ]
    for url, params in urls:
        response = admin_client.get(url, {**params, "cursor": cursor})
        assert response.status_code == 400, (url, params, what)
        assert "cursor is not one this service handed out" in html.unescape(response.content.decode()), (url, what)
