"""`make run`'s demo data: two logins (operator, end user), the demo tenant's memories over several sessions,
a three-step chain, a playbook with outcomes, catalog entries — and a second run changes nothing."""

from __future__ import annotations

from collections import Counter

import pytest
from allauth.account.models import EmailAddress
from django.core.management import call_command

from memory import selectors
from memory.recall import memory_recall
from memory.services.prepare import memory_id_for
from tenants import services
from tenants.models import ApiKeyCredential, AuditRecord, Membership, MemorySubject, Person

OWN = ["episodic", "semantic", "procedural", "archive"]


def _all(subject: MemorySubject) -> list[dict]:
    out, cursor = [], None
    while True:
        page = selectors.memory_list(
            subject=subject, memory_types=OWN, include_superseded=True, page_size=200, cursor=cursor
        )
        out += page["memories"]
        if not (cursor := page["next_cursor"]):
            return out


@pytest.fixture
def seeded(atlas_es, db, monkeypatch):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    monkeypatch.setenv("ATLAS_DEMO_PASSWORD", "demo-password-1")
    call_command("atlas_demo_seed", verbosity=0)
    return MemorySubject.objects.select_related("tenant").get(tenant__slug="demo", external_id="alice")


def test_the_demo_has_two_logins_and_memories_to_look_at(seeded):
    alice = seeded
    operator, end_user = Person.objects.get(email="demo@atlas.local"), Person.objects.get(email="alice@atlas.local")
    assert operator.is_staff and not end_user.is_staff and end_user.check_password("demo-password-1")
    assert EmailAddress.objects.filter(user=end_user, email="alice@atlas.local", verified=True, primary=True).exists()
    assert alice.person == end_user
    roles = dict(Membership.objects.filter(tenant=alice.tenant).values_list("person__email", "role"))
    assert roles == {"demo@atlas.local": "owner", "alice@atlas.local": "member"}

    memories = _all(alice)
    assert Counter(m["type"] for m in memories) == {"episodic": 24, "semantic": 12, "procedural": 2}
    assert len({m["session_id"] for m in memories if m["type"] == "episodic"}) == 4
    home = next(m for m in memories if m["text"] == "Alice lives in Lisbon, in the Alfama district")
    chain = selectors.memory_chain_get(subject=alice, memory_id=home["id"])
    assert [m["text"] for m in chain] == [
        "Alice lives in Berlin", "Alice lives in Lisbon, in the Alfama district", "Alice lives in Porto",
    ]  # fmt: skip
    assert len(home["source_episodes"]) == 2
    router_id = memory_id_for(
        tenant_id=str(alice.tenant.es_id), user_id=str(alice.es_id), memory_type="procedural", external_id="p-router"
    )
    router = selectors.memory_get(subject=alice, memory_id=router_id)
    assert (router["success_count"], router["failure_count"]) == (2, 1)
    catalog = selectors.catalog_list(tenant=alice.tenant)["memories"]
    assert sorted(m["title"] for m in catalog) == [
        "Pro plan",
        "Return policy",
        "Support hours",
        "Travel partner discounts",
    ]
    bob = MemorySubject.objects.get(tenant=alice.tenant, external_id="bob")
    assert len(_all(bob)) == 4

    found = memory_recall(subject=alice, query="where does Alice live now?", k=3)
    assert found.hits[0]["text"] == "Alice lives in Porto"


def test_a_second_run_changes_nothing(seeded):
    alice = seeded
    before = sorted((m["id"], m.get("superseded_by"), m.get("success_count")) for m in _all(alice))
    audit_before = AuditRecord.objects.count()
    call_command("atlas_demo_seed", verbosity=0)
    assert sorted((m["id"], m.get("superseded_by"), m.get("success_count")) for m in _all(alice)) == before
    assert Person.objects.filter(email__in=["demo@atlas.local", "alice@atlas.local"]).count() == 2
    assert AuditRecord.objects.filter(action="memory.import").count() == 1
    # Only the memberships are re-stated (membership_add audits every call); nothing is written twice.
    assert set(
        AuditRecord.objects.all()[: AuditRecord.objects.count() - audit_before].values_list("action", flat=True)
    ) <= {"membership.set"}
