"""The non-English flags of subjects and catalogs: kept by every write path, recomputed by the census
(after forget-all, and for rows from before the flags were kept), never lost to a write racing a census."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memory.elastic import store
from memory.portable.lines import memories_import
from memory.services import non_english_flags
from memory.services.forget import memory_forget, subject_memories_forget, tenant_memories_forget
from memory.services.non_english_flags import non_english_census
from memory.services.writes import episode_write, fact_write, playbook_write
from tenants.models import MemorySubject, Tenant
from tenants.services import subject_create

SPANISH = "Mi hermano trabaja de enfermero en el turno de noche del hospital."
ENGLISH = "My brother works night shifts as a nurse at the hospital."


@pytest.fixture(autouse=True)
def no_usage_recording(settings):
    settings.ATLAS_USAGE_RECORDING = "off"


def flags(subject: MemorySubject) -> tuple[bool | None, bool | None]:
    """(the subject's flag, its tenant catalog's), as stored now."""
    return MemorySubject.objects.values_list("non_english_memories", "tenant__non_english_catalog").get(pk=subject.pk)


def test_new_subjects_and_tenants_start_with_nothing_non_english(maya) -> None:
    assert flags(maya) == (False, False)


@pytest.mark.parametrize(
    "write",
    [
        lambda s, text: episode_write(subject=s, text=text),
        lambda s, text: fact_write(subject=s, text=text),
        lambda s, text: playbook_write(subject=s, name="shifts", trigger_text="shifts", text=text, steps=["call"]),
    ],
    ids=["episode", "fact", "playbook"],
)
def test_each_write_path_flags_its_subject_only_for_a_memory_not_in_english(maya, tom, write) -> None:
    write(maya, ENGLISH)
    assert flags(maya) == (False, False)
    write(maya, SPANISH)
    assert flags(maya) == (True, False)
    assert flags(tom) == (False, False)


def test_import_flags_the_subjects_and_the_catalog_that_hold_other_languages(tenant, maya, tom) -> None:
    lines = [
        {"id": "e1", "user_id": "maya", "memory_type": "episodic", "text": ENGLISH, "days_ago": 2},
        {"id": "e2", "user_id": "tom", "memory_type": "episodic", "text": SPANISH, "days_ago": 2},
        {"id": "c1", "memory_type": "catalog", "title": "Horario", "text": "El hospital abre a las ocho de la mañana."},
    ]
    report = memories_import(
        tenant=tenant, lines=[json.dumps(line) for line in lines], create_subjects=False, actor="test"
    )
    assert report.errors == []
    assert flags(maya) == (False, True)
    assert flags(tom) == (True, True)


def test_a_write_that_fails_to_store_still_leaves_its_flag(maya, monkeypatch) -> None:
    """The flag is set before the store: one too many costs searches, one too few would cost quality."""

    def refuse(*args, **kwargs):
        raise RuntimeError("the cluster went away")

    monkeypatch.setattr(store, "memory_index", refuse)
    with pytest.raises(RuntimeError, match="the cluster went away"):
        episode_write(subject=maya, text=SPANISH)
    assert flags(maya) == (True, False)


def test_forgetting_one_memory_keeps_the_flag_and_forgetting_all_clears_it(maya, tom) -> None:
    spanish = episode_write(subject=maya, text=SPANISH)
    episode_write(subject=maya, text="Mi hermana vive en Valencia desde hace dos años.")
    episode_write(subject=tom, text="Mi perro se llama Bruno y tiene tres años.")
    memory_forget(subject=maya, memory_id=spanish["id"], actor="test")
    assert flags(maya) == (True, False)  # the other Spanish memory is still there; one forget does not recount
    subject_memories_forget(subject=maya, actor="test")
    assert flags(maya) == (False, False)
    assert flags(tom) == (True, False)


def test_forgetting_a_tenant_clears_its_subjects_and_its_catalog(tenant, maya, tom) -> None:
    episode_write(subject=maya, text=SPANISH)
    line = {"id": "c1", "memory_type": "catalog", "title": "Horario", "text": "El hospital abre a las ocho."}
    memories_import(tenant=tenant, lines=[json.dumps(line)], create_subjects=False, actor="test")
    assert flags(maya) == (True, True)
    tenant_memories_forget(tenant=tenant, actor="test")
    assert flags(maya) == (False, False)
    assert flags(tom) == (False, False)


def test_the_census_fills_rows_not_known_from_what_is_stored(
    tenant, maya, tom, other_tenant_subject, monkeypatch
) -> None:
    monkeypatch.setattr(non_english_flags, "CENSUS_BATCH", 1)  # its updates go in batches; two of one subject each
    ana = subject_create(tenant=tenant, external_id="ana", actor="test")
    episode_write(subject=tom, text=SPANISH)
    episode_write(subject=ana, text="Je suis intolérante au lactose, depuis toujours.")
    episode_write(subject=maya, text=ENGLISH)
    line = {"id": "c1", "memory_type": "catalog", "title": "Opening hours", "text": "The clinic opens at eight."}
    memories_import(tenant=tenant, lines=[json.dumps(line)], create_subjects=False, actor="test")
    episode_write(subject=other_tenant_subject, text="Meine Schwester wohnt seit zwei Jahren in Berlin und ist Ärztin.")
    MemorySubject.objects.update(non_english_memories=None)
    Tenant.objects.update(non_english_catalog=None)
    assert non_english_census(tenant=tenant) == {"subjects": 2, "catalogs": 0}
    assert flags(maya) == (False, False)
    assert flags(tom) == flags(ana) == (True, False)
    assert flags(other_tenant_subject) == (None, None)  # another tenant is counted on its own


def test_a_write_flagged_while_the_census_scans_keeps_its_flag(maya, monkeypatch) -> None:
    """The census has read the subject (nothing in Spanish); then a Spanish memory is written. The census
    must not write its stale 'nothing non-English' over the write's flag."""
    episode_write(subject=maya, text=ENGLISH)
    scan = store.memories_scan

    def scan_then_a_write(*args, **kwargs):
        hits = list(scan(*args, **kwargs))
        episode_write(subject=maya, text=SPANISH)
        yield from hits

    monkeypatch.setattr(store, "memories_scan", scan_then_a_write)
    assert non_english_census(tenant=maya.tenant, subjects=[maya]) == {"subjects": 0, "catalogs": 0}
    assert flags(maya) == (True, False)


def test_a_census_between_a_writes_flag_and_its_store_does_not_unflag_it(maya, monkeypatch) -> None:
    """The write flags the subject, a whole census runs (its memory is not stored yet, so it counts
    nothing), then the memory is stored: the write flags again after storing."""
    index = store.memory_index

    def census_then_index(*args, **kwargs):
        assert non_english_census(tenant=maya.tenant, subjects=[maya]) == {"subjects": 0, "catalogs": 0}
        assert flags(maya) == (False, False)
        return index(*args, **kwargs)

    monkeypatch.setattr(store, "memory_index", census_then_index)
    episode_write(subject=maya, text=SPANISH)
    assert flags(maya) == (True, False)


def test_the_census_command_counts_every_active_tenant(tenant, maya, tom) -> None:
    episode_write(subject=tom, text=SPANISH)
    MemorySubject.objects.filter(tenant=tenant).update(non_english_memories=None)
    out, err = StringIO(), StringIO()
    call_command("atlas_language_census", "--unknown-only", stdout=out, stderr=err)
    assert "subject(s) and 0 catalog(s) hold a memory that does not read as English" in out.getvalue()
    assert flags(tom) == (True, False) and flags(maya) == (False, False)
    out = StringIO()
    call_command("atlas_language_census", "--tenant", tenant.slug, stdout=out, stderr=StringIO())
    assert out.getvalue().strip() == (
        "1 tenant(s) counted: 1 subject(s) and 0 catalog(s) hold a memory that does not read as English"
    )


def test_rows_from_before_the_flags_are_not_known_and_new_rows_start_at_false(transactional_db) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("tenants", "0001_initial")])
    old_apps = executor.loader.project_state([("tenants", "0001_initial")]).apps
    old_tenant = old_apps.get_model("tenants", "Tenant").objects.create(slug="before", name="Before")
    old_apps.get_model("tenants", "MemorySubject").objects.create(tenant=old_tenant, external_id="u1")
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert Tenant.objects.get(slug="before").non_english_catalog is None
    assert MemorySubject.objects.get(external_id="u1").non_english_memories is None
    new_tenant = Tenant.objects.create(slug="after", name="After")
    assert MemorySubject.objects.create(tenant=new_tenant, external_id="u2").non_english_memories is False
    assert new_tenant.non_english_catalog is False
