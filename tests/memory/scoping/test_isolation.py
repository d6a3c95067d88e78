"""No filter reaches another subject's or tenant's memories, with the code-level subject filter switched off:
document level security on the subject's own Elasticsearch key is the only guard left, as in production's
worst case. Filters are ANDed with the key's role query, never in place of it
(https://www.elastic.co/guide/en/elasticsearch/reference/8.15/document-level-security.html: "the role query
filters every read"); so ``not``, ``exists: false`` and ``in`` naming another subject's scope values — the
filters that match most — find only the caller's own memories, and forgetting by them deletes none of anyone
else's.
"""

from __future__ import annotations

import pytest

from memory.portable.export import memories_export
from memory.recall import memory_recall
from memory.selectors import memory_list
from memory.services.forget import scoped_memories_forget
from memory.services.writes import episode_write, fact_write
from tests.memory.scoping.table import QUERY, scoped_memories_write

#: The widest filters there are: each matches every memory of the right shape, whoever's it is.
WIDE = [
    {"not": {"agent_id": "nobody"}},
    {"not": {"metadata.project": "nothing"}},
    {"agent_id": {"exists": False}},
    {"metadata.priority": {"exists": False}},
    {"run_id": {"in": ["r1", "r2", "other-r"]}},
    {"agent_id": {"in": ["planner", "coder", "other-agent"]}},
    {"metadata.priority": {"gte": -1e9}},
    {"metadata.project": {"in": ["apollo", "zeus", "other-project"]}},
    {"not": {"run_id": {"exists": True}, "agent_id": {"exists": True}}},
]


@pytest.fixture
def estate(maya, tom, other_tenant_subject, settings):
    settings.ATLAS_CODE_FILTER = False
    settings.ATLAS_USAGE_RECORDING = "off"
    own = scoped_memories_write(maya=maya, tom=tom)
    outsider = other_tenant_subject
    foreign = {
        fact_write(
            subject=outsider,
            text="Outsider's launch checklist",
            agent_id="other-agent",
            run_id="other-r",
            metadata={"project": "other-project", "priority": 50},
        )["id"],
        episode_write(subject=outsider, text="Outsider asked about a launch checklist")["id"],
    }
    return set(own.values()), foreign


def _not_maya(ids, own) -> list[str]:
    return [i for i in ids if i not in own]


def test_no_filter_reads_past_the_subjects_key(maya, tom, estate):
    own, _foreign = estate
    for filters in WIDE:
        listed = [m["id"] for m in memory_list(subject=maya, filters=filters, include_superseded=True)["memories"]]
        recalled = [
            h["id"]
            for h in memory_recall(
                subject=maya, query=QUERY, k=50, filters=filters, min_score=-1e9, fold_evidence=False
            ).hits
        ]
        exported = [r["id"] for r in list(memories_export(tenant=maya.tenant, subject=maya, filters=filters))[1:]]
        assert _not_maya(listed + recalled + exported, own) == [], filters
        assert listed, filters  # each finds some of Maya's own: the filter was applied, not refused


def test_no_filter_forgets_past_the_subjects_key(maya, tom, other_tenant_subject, estate):
    own, foreign = estate
    toms = {m["id"] for m in memory_list(subject=tom)["memories"] if not m["shared"]}
    for filters in WIDE:
        forgotten = scoped_memories_forget(subject=maya, filters=filters, actor="test")["ids"]
        assert _not_maya(forgotten, own) == [], filters
    assert {m["id"] for m in memory_list(subject=tom)["memories"] if not m["shared"]} == toms
    assert {m["id"] for m in memory_list(subject=other_tenant_subject)["memories"]} == foreign
    assert [m for m in memory_list(subject=maya)["memories"] if not m["shared"]] == []  # Maya's own all went
