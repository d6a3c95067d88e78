"""Importers for other products' dumps, through ``atlas_import --from``: each fixture in tests/memory/data/
is built from the product's documented shape.

- ``mem0_get_all.json``: what mem0's ``get_all`` returns — ``{"results": [...]}`` of MemoryItem dicts (id,
  memory, hash, created_at, updated_at, plus user_id/agent_id/run_id and metadata) as mem0ai/mem0
  ``mem0/memory/main.py`` builds them; ``categories`` and ``expiration_date`` as the platform API
  documents them (https://docs.mem0.ai/api-reference/memory/v1-get-memories).
- ``graphiti_dump.json``: Graphiti's ``EpisodicNode`` (getzep/graphiti ``graphiti_core/nodes.py``) and
  ``EntityEdge`` (``graphiti_core/edges.py``) as they serialise; the expired WORKS_AT edge is what
  ``resolve_edge_contradictions`` (``graphiti_core/utils/maintenance/edge_operations.py``) leaves: its
  ``invalid_at`` is the new edge's ``valid_at`` and ``expired_at`` the time it was noticed.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.provenance import memory_provenance
from memory.recall import memory_recall
from memory.selectors import memory_chain_get, memory_hit, memory_list
from tenants.models import Tenant
from tenants.selectors import subject_get

DATA = Path(__file__).resolve().parents[1] / "data"


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def _writer(atlas_es, db, settings):
    from tenants.services import shared_credential_ensure

    settings.ATLAS_USAGE_RECORDING = "off"
    shared_credential_ensure(kind="writer", actor="test")


def _by_external(subject) -> dict[str, dict]:
    page = memory_list(subject=subject, include_superseded=True, page_size=100)
    return {m["external_id"]: m for m in page["memories"]}


def test_mem0_get_all_becomes_facts_of_each_user() -> None:
    out, _ = run("atlas_import", str(DATA / "mem0_get_all.json"), "--from", "mem0", "--tenant", "from-mem0", "--create")
    assert out.strip() == (
        "imported 4 of 4 item(s) into from-mem0: 4 semantic; 0 supersession link(s); 0 error(s); "
        "created subjects alice, bob"
    )
    tenant = Tenant.objects.get(slug="from-mem0")
    alice, bob = subject_get(tenant=tenant, external_id="alice"), subject_get(tenant=tenant, external_id="bob")
    facts = _by_external(alice)
    assert {k: (m["text"], m["fact_type"], m["created_at"]) for k, m in facts.items()} == {
        "0b9c6c2e-5d1f-4f7e-9a3b-2f1d8e7c6a51": ("Is a vegetarian", "preference", "2024-07-20T01:37:27.383047-07:00"),
        "3e2a9f10-8b7c-4d6e-a5f4-1c2b3a4d5e6f": ("Works as a nurse in Leeds", "identity", "2024-07-21T10:00:00+00:00"),
        "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a": (
            "Prefers the meeting notes emailed, not posted",
            "world",
            "2024-09-01T08:15:00+00:00",
        ),
    }
    assert facts["3e2a9f10-8b7c-4d6e-a5f4-1c2b3a4d5e6f"]["valid_to"] == "2026-01-01T00:00:00+00:00"
    assert [m["text"] for m in _by_external(bob).values()] == ["Has two children"]
    nurse = facts["3e2a9f10-8b7c-4d6e-a5f4-1c2b3a4d5e6f"]["id"]
    provenance = memory_provenance(subject=alice, memory_id=nurse)
    assert provenance["authority"] == "import"
    assert provenance["written_by"]["name"] == "cli:atlas_import:mem0"
    hits = memory_recall(subject=alice, query="what does Alice do for work?", k=1).hits
    assert [h["text"] for h in hits] == ["Works as a nurse in Leeds"]


def test_mem0_list_form_under_one_subject(tmp_path: Path) -> None:
    items = json.loads((DATA / "mem0_get_all.json").read_text())["results"]
    path = tmp_path / "platform.json"
    path.write_text(json.dumps(items))  # the platform API answers the list itself
    run("atlas_import", str(path), "--from", "mem0", "--tenant", "mem0-one", "--create", "--subject", "carol")
    carol = subject_get(tenant=Tenant.objects.get(slug="mem0-one"), external_id="carol")
    assert len(_by_external(carol)) == 4


def test_graphiti_dump_becomes_episodes_and_facts_with_the_contradiction_as_a_chain() -> None:
    out, _ = run(
        "atlas_import", str(DATA / "graphiti_dump.json"), "--from", "graphiti", "--tenant", "from-zep", "--create"
    )
    assert out.strip() == (
        "imported 7 of 7 item(s) into from-zep: 3 episodic, 4 semantic; 1 supersession link(s); 0 error(s); "
        "created subjects alice"
    )
    alice = subject_get(tenant=Tenant.objects.get(slug="from-zep"), external_id="alice")
    memories = _by_external(alice)
    acme, globex = memories["edge-0001-acme"], memories["edge-0002-globex"]
    assert (acme["superseded_by"], acme["superseded_at"], acme["retracted"]) == (
        [globex["id"]],
        "2025-06-01T09:00:10+00:00",
        False,
    )
    assert (acme["valid_from"], acme["valid_to"]) == ("2025-01-10T09:00:00+00:00", "2025-06-01T09:00:00+00:00")
    assert [m["text"] for m in memory_chain_get(subject=alice, memory_id=globex["id"])] == [
        "Alice works at Acme",
        "Alice works at Globex",
    ]
    designer = memories["edge-0004-designer"]  # expired with no edge taking over: retracted
    assert (designer["retracted"], designer.get("superseded_by")) == (True, None)
    episode = memories["ep-0001-7c1e-4a55-9f00-000000000001"]
    assert (episode["text"], episode["timestamp"], episode["event_type"]) == (
        "user: I work at Acme as a designer",
        "2025-01-10T09:00:00+00:00",
        "message",
    )
    where = memory_provenance(subject=alice, memory_id=globex["id"])["episodes"]
    assert [(e["text"], e["timestamp"]) for e in where] == [
        ("user: I just started at Globex", "2025-06-01T09:00:00+00:00")
    ]
    current = [h["text"] for h in memory_recall(subject=alice, query="where does Alice work", k=3).hits]
    assert "Alice works at Globex" in current
    assert "Alice works at Acme" not in current and "Alice is a designer" not in current
    assert memory_hit(subject=alice, memory_id=acme["id"])["_source"]["authority"] == "import"


@pytest.mark.parametrize(
    ("source", "dump", "errors"),
    [
        (
            "mem0",
            {"results": [{"id": "m1", "memory": "ok", "created_at": "2024-01-01T00:00:00Z", "user_id": "alice"},
                         {"id": "m2", "memory": "", "created_at": "2024-01-01T00:00:00Z", "user_id": "alice"},
                         {"id": "m3", "memory": "no owner", "created_at": "2024-01-01T00:00:00Z"},
                         {"id": "m4", "memory": "when?", "created_at": "last week", "user_id": "alice"}]},
            [
                "item 2: results[1].memory: a non-empty string is required",
                "item 3: results[2].user_id: whose memory this is is not said (give --subject)",
                "item 4: results[3].created_at: created_at must be an ISO 8601 date-time, not 'last week'",
            ],
        ),
        (
            "graphiti",
            {"episodes": [{"uuid": "e1", "group_id": "alice", "valid_at": "2025-01-01T00:00:00Z"}],
             "edges": [{"uuid": "f1", "group_id": "alice", "fact": "x", "created_at": "2025-01-01T00:00:00Z"},
                       {"uuid": "f2", "group_id": "a lice", "fact": "y", "created_at": "2025-01-01T00:00:00Z"},
                       {"uuid": "f3", "group_id": "alice", "fact": "z", "created_at": "2025-01-01T00:00:00Z",
                        "episodes": "e1"}]},
            [
                "item 1: episodes[0].content: a non-empty string is required",
                "item 3: edges[1]: subject 'a lice' cannot be created: an external id is 1-128 characters, "
                "letters, digits and . _ @ : + - (not starting with a symbol)",
                "item 4: edges[2].episodes: a list of episode uuids",
            ],
        ),
        ("graphiti", [1, 2], ['a Graphiti dump is a JSON object {"episodes": [...], "edges": [...]}']),
    ],
)  # fmt: skip
def test_a_bad_dump_names_the_item_and_field_and_writes_nothing(tmp_path: Path, source, dump, errors) -> None:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError) as raised:
        call_command(
            "atlas_import", str(path), "--from", source, "--tenant", "bad-dump", "--create", stdout=out, stderr=err
        )
    if len(errors) == 1 and not errors[0].startswith("item"):
        assert str(raised.value) == errors[0]
    else:
        assert err.getvalue().splitlines() == errors
        assert "nothing was imported: fix the items above" in str(raised.value)
    tenant = Tenant.objects.get(slug="bad-dump")
    assert list(tenant.subjects.all()) == []  # not even a subject
