"""Forgetting by filter: what matches goes (receipted, audited without the filter's values), nothing else —
not the subject's other memories, not another subject's with the same scope."""

from __future__ import annotations

import pytest

from atlas_site.errors import ValidationFailed
from memory.selectors import memory_list
from memory.services.forget import scoped_memories_forget
from tenants.models import AuditRecord
from tests.memory.scoping.table import scoped_memories_write


@pytest.fixture
def scoped(maya, tom):
    return scoped_memories_write(maya=maya, tom=tom)


def _texts(subject) -> set[str]:
    return {m["text"] for m in memory_list(subject=subject, include_superseded=True)["memories"] if not m["shared"]}


def test_everything_one_agent_wrote_is_forgotten_and_nothing_else(maya, tom, scoped):
    toms_before = _texts(tom)
    result = scoped_memories_forget(subject=maya, filters={"agent_id": "planner"}, actor="test")
    assert result["counts"] == {"episodic": 1, "semantic": 1}
    assert sorted(result["ids"]) == sorted([scoped["e1"], scoped["f1"]])
    assert result["receipt"]["indices"]["episodic"]["ids"] == [scoped["e1"]]
    assert result["receipt"]["indices"]["semantic"]["ids"] == [scoped["f1"]]
    assert {m["id"] for m in memory_list(subject=maya)["memories"] if not m["shared"]} == {scoped["p1"], scoped["f2"]}
    assert _texts(tom) == toms_before
    record = AuditRecord.objects.filter(action="memory.forget_scoped").latest("pk")
    assert record.detail["filter_fields"] == ["agent_id"]
    assert "planner" not in str(record.detail)


def test_a_metadata_range_forgets_by_number_not_by_string(maya, scoped):
    result = scoped_memories_forget(subject=maya, filters={"metadata.priority": {"gte": 9}}, actor="test")
    assert sorted(result["ids"]) == sorted([scoped["e1"], scoped["f1"]])


@pytest.mark.parametrize("filters", [None, {}, ""])
def test_forgetting_by_filter_needs_a_filter(maya, scoped, filters):
    with pytest.raises(ValidationFailed, match="filters are required"):
        scoped_memories_forget(subject=maya, filters=filters, actor="test")
    assert len(memory_list(subject=maya)["memories"]) == 5  # four of Maya's and the catalog entry


def test_a_bad_filter_forgets_nothing(maya, scoped):
    with pytest.raises(ValidationFailed, match="unknown operator"):
        scoped_memories_forget(subject=maya, filters={"agent_id": {"regexp": ".*"}}, actor="test")
    assert len(memory_list(subject=maya)["memories"]) == 5
