"""Issue 24 finding 1 through the services: a memory's identity includes its owner on every write path
that derives an id — imports (external ids, ``supersedes``, ``source_episodes``), the write services'
external ids and consolidation's derived keys — and no subject write can store a catalog entry or a
memory stamped with another owner. The code-level filter is off: DLS and the ids alone keep owners apart.
"""

from __future__ import annotations

import json

import pytest

from memory.elastic.mappings import VECTOR_FIELDS
from memory.portable.lines import memories_import
from memory.services.prepare import PreparedMemory, catalog_prepare, fact_prepare, memory_id_for
from memory.services.writes import fact_write, playbook_write

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def dls_only(settings):
    settings.ATLAS_CODE_FILTER = False
    settings.ATLAS_USAGE_RECORDING = "off"


def _docs(admin, tenant) -> dict[str, dict]:
    """Every document of ``tenant`` in every memory index: {id: source without vectors}."""
    admin.indices.refresh(index="atlas-test-*")
    hits = admin.search(index="atlas-test-*", query={"term": {"tenant_id": str(tenant.es_id)}}, size=1000)
    return {h["_id"]: {k: v for k, v in h["_source"].items() if k not in VECTOR_FIELDS} for h in hits["hits"]["hits"]}


def _lines(user: str, word: str) -> list[str]:
    records = [
        {"id": "e-lunch", "user_id": user, "memory_type": "episodic", "text": f"{word}: lentils for lunch"},
        {"id": "f-old", "user_id": user, "memory_type": "semantic", "text": f"{word} eats meat"},
        {
            "id": "f-diet",
            "user_id": user,
            "memory_type": "semantic",
            "text": f"{word} is vegetarian",
            "supersedes": ["f-old"],
            "source_episodes": ["e-lunch"],
        },
        {
            "id": "p-router",
            "user_id": user,
            "memory_type": "procedural",
            "text": f"{word} router",
            "name": f"{word} router",
            "trigger_text": "internet down",
            "steps": ["unplug it"],
        },
    ]
    return [json.dumps(r) for r in records]


def test_an_import_for_one_subject_never_replaces_anothers_memories(tenant, maya, tom, admin) -> None:
    report = memories_import(tenant=tenant, lines=_lines("maya", "Maya"), create_subjects=False, actor="test")
    assert report.errors == [] and report.supersessions == 1
    mayas = _docs(admin, tenant)
    assert len(mayas) == 4 and {d["user_id"] for d in mayas.values()} == {str(maya.es_id)}

    report = memories_import(tenant=tenant, lines=_lines("tom", "Tom"), create_subjects=False, actor="test")

    assert report.errors == [] and report.supersessions == 1
    everything = _docs(admin, tenant)
    assert {i: everything[i] for i in mayas} == mayas  # maya's four, unchanged and still hers
    toms = {i: d for i, d in everything.items() if i not in mayas}
    assert len(toms) == 4 and {d["user_id"] for d in toms.values()} == {str(tom.es_id)}
    by_external = {d["external_id"]: i for i, d in toms.items()}
    # Tom's chain and provenance link his own memories, never maya's.
    assert toms[by_external["f-diet"]]["supersedes"] == [by_external["f-old"]]
    assert toms[by_external["f-old"]]["superseded_by"] == [by_external["f-diet"]]
    assert toms[by_external["f-diet"]]["source_episodes"] == [by_external["e-lunch"]]


def test_an_import_line_cannot_supersede_or_cite_another_subjects_memory(tenant, maya, tom, admin) -> None:
    memories_import(tenant=tenant, lines=_lines("maya", "Maya"), create_subjects=False, actor="test")
    mayas = _docs(admin, tenant)
    line = {
        "id": "f-grab",
        "user_id": "tom",
        "memory_type": "semantic",
        "text": "Tom replaces maya's fact",
        "supersedes": ["f-diet"],
    }

    report = memories_import(tenant=tenant, lines=[json.dumps(line)], create_subjects=False, actor="test")

    assert report.supersessions == 0
    assert report.errors == [(1, "supersedes f-diet: no fact of tom in the file or stored")]
    after = _docs(admin, tenant)
    assert {i: after[i] for i in mayas} == mayas


def test_reimporting_a_file_leaves_the_same_subjects_memories_and_refuses_a_changed_line(tenant, maya, admin) -> None:
    """Ids derive from the owner and the external id: a file imported again stores nothing twice, and a
    line that changed is refused, not written over the stored memory (issue 32: a write never replaces)."""
    lines = _lines("maya", "Maya")
    memories_import(tenant=tenant, lines=lines, create_subjects=False, actor="test")
    first = _docs(admin, tenant)

    again = memories_import(tenant=tenant, lines=lines, create_subjects=False, actor="test")
    assert again.errors == [] and sum(again.written.values()) == 0 and sum(again.unchanged.values()) == 4
    changed = [line.replace("lentils for lunch", "beans for lunch") for line in lines]
    report = memories_import(tenant=tenant, lines=changed, create_subjects=False, actor="test", partial=True)

    assert [n for n, _ in report.errors] == [1] and "already stored" in report.errors[0][1]
    second = _docs(admin, tenant)
    assert set(second) == set(first)  # the same four ids: nothing duplicated
    [episode] = [d for d in second.values() if d["memory_type"] == "episodic"]
    assert episode["text"] == "Maya: lentils for lunch"
    by_external = {d["external_id"]: i for i, d in second.items()}
    assert second[by_external["f-old"]]["superseded_by"] == [by_external["f-diet"]]


def test_derived_ids_are_the_owners_own(tenant, maya, tom, admin) -> None:
    """The same derived key (a consolidation item) for two subjects writes two memories; before, the
    second write was 'already stored' and answered with the first subject's memory."""
    mayas = fact_write(subject=maya, text="Maya likes tea", derived_key="window:fact:1")
    toms = fact_write(subject=tom, text="Tom likes coffee", derived_key="window:fact:1")
    playbooks = [
        playbook_write(subject=s, name="n", trigger_text="t", steps=["s"], derived_key="window:playbook:1")
        for s in (maya, tom)
    ]
    docs = _docs(admin, tenant)
    assert mayas["id"] != toms["id"] and playbooks[0]["id"] != playbooks[1]["id"]
    assert (docs[mayas["id"]]["user_id"], docs[mayas["id"]]["text"]) == (str(maya.es_id), "Maya likes tea")
    assert (docs[toms["id"]]["user_id"], docs[toms["id"]]["text"]) == (str(tom.es_id), "Tom likes coffee")
    assert [docs[p["id"]]["user_id"] for p in playbooks] == [str(maya.es_id), str(tom.es_id)]


def test_a_subject_write_stores_only_the_subjects_own_memory_types(tenant, maya, tom) -> None:
    from memory.services.prepare import memory_owner_check

    tenant_id, user_id = str(tenant.es_id), str(maya.es_id)
    entry = catalog_prepare(tenant_id=tenant_id, title="t", text="shared")
    toms = fact_prepare(tenant_id=tenant_id, user_id=str(tom.es_id), text="Tom's")
    relabelled = fact_prepare(tenant_id=tenant_id, user_id=user_id, text="Maya's")
    relabelled = PreparedMemory("catalog", relabelled.memory_id, relabelled.source)
    mayas = fact_prepare(tenant_id=tenant_id, user_id=user_id, text="Maya's", external_id="f-1")
    elsewhere = PreparedMemory(
        "semantic",
        memory_id_for(tenant_id=tenant_id, user_id=str(tom.es_id), memory_type="semantic", external_id="f-1"),
        mayas.source,
    )
    for prepared in (entry, toms, relabelled, elsewhere):
        with pytest.raises(RuntimeError, match="not the writing subject's"):
            memory_owner_check(tenant_id=tenant_id, user_id=user_id, prepared=prepared)
    for prepared in (mayas, fact_prepare(tenant_id=tenant_id, user_id=user_id, text="ok")):
        memory_owner_check(tenant_id=tenant_id, user_id=user_id, prepared=prepared)
    with pytest.raises(ValueError):
        memory_id_for(tenant_id=tenant_id, user_id=user_id, memory_type="catalog", external_id="c-1")
    with pytest.raises(ValueError):
        memory_id_for(tenant_id=tenant_id, user_id=None, memory_type="semantic", external_id="f-1")
    assert memory_id_for(tenant_id=tenant_id, user_id=user_id, memory_type="semantic", external_id="x") != (
        memory_id_for(tenant_id=tenant_id, user_id=str(tom.es_id), memory_type="semantic", external_id="x")
    )
