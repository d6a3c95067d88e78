"""Scope filters through the services: every row of the table on lists and recall, and the refusals."""

from __future__ import annotations

import pytest

from atlas_site.errors import ValidationFailed
from memory.recall import memory_recall
from memory.selectors import memory_list
from tests.memory.scoping.table import QUERY, TABLE, scoped_memories_write


@pytest.fixture
def scoped(maya, tom, settings):
    settings.ATLAS_USAGE_RECORDING = "off"
    return scoped_memories_write(maya=maya, tom=tom)


def _keys(ids: dict[str, str], found: list[dict]) -> set[str]:
    by_id = {memory_id: key for key, memory_id in ids.items()}
    unknown = [m for m in found if m["id"] not in by_id]
    assert not unknown, unknown  # Tom's memories and the catalog never come back
    return {by_id[m["id"]] for m in found}


def test_every_row_on_lists_and_recall(maya, scoped):
    for filters, expected in TABLE:
        listed = memory_list(subject=maya, filters=filters)["memories"]
        assert _keys(scoped, listed) == expected, filters
        recalled = memory_recall(subject=maya, query=QUERY, k=20, filters=filters, min_score=-1e9, fold_evidence=False)
        assert _keys(scoped, recalled.hits) == expected, filters


def test_a_list_shows_the_scope_as_written(maya, scoped):
    (episode,) = memory_list(subject=maya, filters={"session_id": "s1"})["memories"]
    assert {k: episode[k] for k in ("session_id", "agent_id", "app_id", "run_id", "metadata")} == {
        "session_id": "s1",
        "agent_id": "planner",
        "app_id": "web",
        "run_id": "r1",
        "metadata": {"priority": 9, "project": "apollo", "urgent": True, "due": "2026-03-01"},
    }
    assert "metadata_entries" not in episode


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"agent": "x"}, "unknown filter field 'agent'"),
        ({"agent_id": {"like": "x"}}, "unknown operator 'like'"),
        ({"agent_id": {"gte": "x"}}, "agent_id takes a value, in or exists"),
        ({"metadata.priority": {"gte": "high"}}, "compares numbers and ISO 8601 dates"),
        ({"metadata.priority": {"gte": 1, "lte": 3}}, "takes one operator"),
        ({"metadata.Bad": 1}, "is not a metadata key"),
        ({"agent_id": {"in": []}}, "takes a list of 1 to 50 values"),
        ({"agent_id": {"exists": "yes"}}, "exists takes true or false"),
        ({"not": {"not": {"agent_id": "x"}}}, "must be a non-empty object"),
        ("{not json", "must be a JSON object"),
        ("[" * 40 + "]" * 40, "nested deeper than 32 levels"),
        ('{"agent_id": "\\ud800"}', "agent_id values are ids"),
        ('{"metadata.note": "\\udfff"}', "compares strings, numbers, booleans or dates"),
        ([1], "must be an object"),
    ],
)
def test_a_bad_filter_is_refused_with_its_reason(maya, filters, message):
    with pytest.raises(ValidationFailed) as refused:
        memory_list(subject=maya, filters=filters)
    assert message in str(refused.value)


def test_filters_as_json_text(maya, scoped):
    listed = memory_list(subject=maya, filters='{"metadata.priority": {"gte": 9}}')["memories"]
    assert _keys(scoped, listed) == {"e1", "f1"}


def test_a_correction_keeps_the_scope_of_what_it_corrects(maya, scoped):
    from memory.services.writes import fact_edit

    corrected = fact_edit(subject=maya, memory_id=scoped["f1"], text="Maya co-leads the zeus launch checklist")
    (found,) = memory_list(subject=maya, filters={"run_id": "r2"})["memories"]
    assert found["id"] == corrected["id"]
    assert (found["agent_id"], found["app_id"], found["metadata"]["priority"]) == ("planner", "mobile", 10)


def test_too_many_conditions_are_refused(maya):
    many = {f"metadata.k{n}": n for n in range(21)}
    with pytest.raises(ValidationFailed, match="more than 20 conditions"):
        memory_list(subject=maya, filters=many)


def test_explain_names_the_scope_filters(maya, scoped):
    result = memory_recall(
        subject=maya, query=QUERY, filters={"agent_id": "planner", "not": {"run_id": "r9"}}, explain=True
    )
    assert result.explain["filters"][-1] == (
        "scope filters on agent_id, not.run_id: the subject's own memories only (no catalog)"
    )


def test_a_metadata_string_with_an_unpaired_surrogate_is_refused(maya):
    from memory.services.writes import fact_write

    with pytest.raises(ValidationFailed, match="metadata.note must be a string"):
        fact_write(subject=maya, text="Maya likes tea", metadata={"note": "\ud800"})
