"""Export and import keep a memory's scope: a filtered export holds that scope's memories only, and a full
export imported into another tenant answers every filter of the table as the original did."""

from __future__ import annotations

import json

import pytest

from atlas_site.errors import ValidationFailed
from memory.portable.export import memories_export
from memory.portable.lines import memories_import
from memory.selectors import memory_list
from tenants.selectors import subject_get
from tenants.services import tenant_create
from tests.memory.scoping.table import TABLE, scoped_memories_write


@pytest.fixture
def scoped(maya, tom):
    return scoped_memories_write(maya=maya, tom=tom)


def test_a_filtered_export_holds_that_scope_only(tenant, maya, scoped):
    records = list(memories_export(tenant=tenant, subject=maya, filters={"agent_id": "planner"}))
    assert [r["id"] for r in records[1:]] == [scoped["e1"], scoped["f1"]]
    assert records[1]["metadata"] == {"priority": 9, "project": "apollo", "urgent": True, "due": "2026-03-01"}
    assert {r["app_id"] for r in records[1:]} == {"web", "mobile"}
    assert "metadata_entries" not in records[1]


def test_a_tenant_export_with_a_filter_leaves_out_the_catalog_and_other_scopes(tenant, scoped):
    records = list(memories_export(tenant=tenant, filters={"app_id": "web"}))
    assert sorted((r["subject"], r["type"]) for r in records[1:]) == [
        ("maya", "episodic"),
        ("maya", "procedural"),
        ("tom", "episodic"),
        ("tom", "procedural"),
    ]


def test_a_bad_filter_is_refused_before_the_export_starts(tenant, maya):
    with pytest.raises(ValidationFailed, match="unknown filter field"):
        memories_export(tenant=tenant, subject=maya, filters={"team": "x"})


def test_the_scope_survives_a_round_trip(tenant, maya, scoped):
    lines = [json.dumps(r) for r in memories_export(tenant=tenant, subject=maya)]
    other = tenant_create(slug=f"{tenant.slug}-b", name="b", actor="test")
    report = memories_import(tenant=other, lines=lines, create_subjects=True, actor="test")
    assert report.errors == [] and sum(report.written.values()) == 4
    moved = subject_get(tenant=other, external_id="maya")
    text_of = {m["id"]: m["text"] for m in memory_list(subject=maya)["memories"]}
    key_of_text = {text_of[memory_id]: key for key, memory_id in scoped.items()}
    for filters, expected in TABLE:
        found = {key_of_text[m["text"]] for m in memory_list(subject=moved, filters=filters)["memories"]}
        assert found == expected, filters


def test_an_import_line_carries_a_scope(tenant, maya):
    lines = [
        json.dumps(
            {
                "id": "x1",
                "subject": "maya",
                "type": "semantic",
                "text": "Maya files taxes in April",
                "agent_id": "accountant",
                "run_id": "r-2026",
                "metadata": {"year": 2026, "filed": "2026-04-10"},
            }
        ),
        json.dumps({"id": "x2", "subject": "maya", "type": "episodic", "text": "I filed my taxes", "app_id": "mobile"}),
    ]
    report = memories_import(tenant=tenant, lines=lines, create_subjects=False, actor="test")
    assert report.errors == [] and sum(report.written.values()) == 2
    found = memory_list(subject=maya, filters={"metadata.filed": {"lt": "2026-05-01"}, "metadata.year": 2026})
    assert [m["text"] for m in found["memories"]] == ["Maya files taxes in April"]
    assert [m["text"] for m in memory_list(subject=maya, filters={"app_id": "mobile"})["memories"]] == [
        "I filed my taxes"
    ]
    bad = json.dumps({"id": "x3", "subject": "maya", "type": "semantic", "text": "t", "metadata": {"a": [1]}})
    refused = memories_import(tenant=tenant, lines=[bad], create_subjects=False, actor="test")
    assert refused.errors and "metadata.a" in str(refused.errors[0]) and sum(refused.written.values()) == 0
