"""The export format (docs/export-format.md) round trip: export tenant A with atlas_export, import the file
into a fresh tenant B with atlas_import, and B recalls the same memories in the same order, with the same
chains, timestamps and counts; every line is valid against the committed schema."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from jsonschema import Draft202012Validator

from memory.portable import SCHEMA_PATH, export_schema
from memory.recall import memory_recall
from memory.selectors import memory_chain_get, memory_hit
from memory.services.archive import superseded_facts_archive
from memory.services.catalog import catalog_entry_write
from memory.services.writes import episode_write, fact_write, playbook_outcome_record, playbook_write
from tenants.models import Tenant
from tenants.selectors import subject_get

QUERIES = ["where does Maya live", "what does Maya eat", "booking a restaurant table", "Porto guide"]


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def lines_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def memories(tenant, maya, tom, settings) -> dict[str, dict]:
    settings.ATLAS_USAGE_RECORDING = "off"
    e1 = episode_write(subject=maya, text="I moved to Lisbon last spring", session_id="s1", at="2026-03-01T10:00:00Z")
    e2 = episode_write(subject=maya, text="We just moved again, to Porto", session_id="s1", at="2026-03-01T10:05:00Z")
    e3 = episode_write(subject=maya, text="I stopped eating any animal products", at="2026-04-02T09:00:00Z")
    lisbon = fact_write(
        subject=maya,
        text="Maya lives in Lisbon",
        fact_type="identity",
        source_episodes=[e1["id"]],
        at="2026-03-01T11:00:00Z",
    )
    porto = fact_write(
        subject=maya,
        text="Maya lives in Porto",
        fact_type="identity",
        supersedes=[lisbon["id"]],
        source_episodes=[e2["id"]],
        at="2026-03-01T11:05:00Z",
    )
    veg = fact_write(
        subject=maya, text="Maya is vegetarian", fact_type="preference", external_id="diet", at="2026-01-05T08:00:00Z"
    )
    vegan = fact_write(
        subject=maya,
        text="Maya is vegan",
        fact_type="preference",
        supersedes=["diet"],
        contradiction="harsh",
        source_episodes=[e3["id"]],
        valid_from="2026-04-02T00:00:00Z",
        at="2026-04-02T09:30:00Z",
    )
    book = playbook_write(
        subject=maya,
        name="Book a restaurant table",
        trigger_text="booking a table at a restaurant",
        steps=["Ask the party size", {"instruction": "Call the restaurant", "tool": "phone"}],
        description="How Maya likes tables booked",
        at="2026-02-01T12:00:00Z",
    )
    playbook_outcome_record(subject=maya, playbook_id=book["id"], success=True)
    fact_write(subject=tom, text="Tom lives in Lisbon", fact_type="identity", at="2026-02-01T12:00:00Z")
    catalog_entry_write(
        tenant=tenant, actor="test", title="Porto guide", text="Where to eat in Porto: vegan tascas", tags=["porto"]
    )
    assert superseded_facts_archive(tenant=tenant) == 2  # replaced facts leave through the archive too
    return {"lisbon": lisbon, "porto": porto, "veg": veg, "vegan": vegan, "book": book, "e1": e1}


def _portable_id(record: dict) -> str:
    """The id a memory keeps across deployments: its external id there, else its id where it was written."""
    return record.get("external_id") or record["id"]


def _normalised(records: list[dict]) -> list[dict]:
    """Export records with every id (own and linked) replaced by its portable id, and the provenance of
    the import itself (authority, written_by) left out: what must be equal after a round trip."""
    portable = {r["id"]: _portable_id(r) for r in records}
    out = []
    for r in records:
        item = {k: v for k, v in r.items() if k not in ("authority", "written_by", "external_id")}
        item["id"] = _portable_id(r)
        for link in ("superseded_by", "previous_turn"):
            if link in item:
                item[link] = portable.get(item[link], item[link])
        for links in ("supersedes", "source_episodes", "proposal_for"):
            if links in item:
                item[links] = [portable.get(i, i) for i in item[links]]
        out.append(item)
    return sorted(out, key=lambda r: (r.get("subject") or "", r["created_at"], r["id"]))


def test_round_trip_keeps_recall_chains_and_every_field(memories, tenant, maya, tmp_path: Path) -> None:
    exported = tmp_path / "a.jsonl"
    _, err = run("atlas_export", "--tenant", tenant.slug, "--out", str(exported))
    assert err.strip() == f"exported 10 memories of {tenant.slug} to {exported}"
    records = lines_of(exported.read_text())
    validator = Draft202012Validator(export_schema())
    assert [list(validator.iter_errors(r)) for r in records] == [[]] * len(records)
    header = records[0]
    assert header["format"] == "atlas-memory-export" and header["version"] == 1 and header["tenant"] == tenant.slug
    assert not any("embedding" in json.dumps(r) for r in records)  # no vectors leave
    by_text = {r["text"]: r for r in records[1:]}
    assert by_text["Maya lives in Lisbon"]["superseded_by"] == memories["porto"]["id"]
    assert by_text["Maya is vegetarian"]["retracted"] is True
    assert by_text["Maya is vegan"]["supersedes"] == [memories["veg"]["id"]]
    assert by_text["Maya is vegan"]["confidence"] == pytest.approx(0.7)
    assert by_text["How Maya likes tables booked"]["success_count"] == 1

    out, _ = run("atlas_import", str(exported), "--tenant", "round-trip-b", "--create")
    assert out.strip() == (
        "imported 10 of 10 line(s) into round-trip-b: 1 catalog, 3 episodic, 1 procedural, 5 semantic; "
        "2 supersession link(s); 0 error(s); created subjects maya, tom"
    )
    b = Tenant.objects.get(slug="round-trip-b")
    maya_b = subject_get(tenant=b, external_id="maya")

    for query in QUERIES:
        in_a = [(h["type"], h["text"]) for h in memory_recall(subject=maya, query=query, k=8).hits]
        in_b = [(h["type"], h["text"]) for h in memory_recall(subject=maya_b, query=query, k=8).hits]
        assert in_b == in_a, query
        ids_a = [h.get("external_id") or h["id"] for h in memory_recall(subject=maya, query=query, k=8).hits]
        ids_b = [h["external_id"] for h in memory_recall(subject=maya_b, query=query, k=8).hits]
        assert ids_b == ids_a, query

    head_b = memory_recall(subject=maya_b, query="where does Maya live", k=1).hits[0]
    chain_a = memory_chain_get(subject=maya, memory_id=memories["porto"]["id"])
    chain_b = memory_chain_get(subject=maya_b, memory_id=head_b["id"])
    assert [(m["text"], m.get("retracted"), m.get("superseded_at"), m["created_at"]) for m in chain_b] == [
        (m["text"], m.get("retracted"), m.get("superseded_at"), m["created_at"]) for m in chain_a
    ]
    assert [m["external_id"] for m in chain_b] == [m["id"] for m in chain_a]

    again, _ = run("atlas_export", "--tenant", "round-trip-b")
    records_b = lines_of(again)
    assert _normalised(records_b[1:]) == _normalised(records[1:])
    # Authority travels with the memory (the services stamped A's facts and playbooks `agent`; its turns
    # carry none and become `import`); the writer of B's copies is the import.
    authority_a = {_portable_id(r): r.get("authority", "import") for r in records[1:] if r["type"] != "catalog"}
    assert {_portable_id(r): r["authority"] for r in records_b[1:] if r["type"] != "catalog"} == authority_a
    assert set(authority_a.values()) == {"agent", "import"}
    assert {r["written_by"] for r in records_b[1:] if r["type"] != "catalog"} == {"import:cli:atlas_import"}

    # Importing the same file again overwrites: nothing doubles, the chain stays as it was.
    run("atlas_import", str(exported), "--tenant", "round-trip-b")
    assert _normalised(lines_of(run("atlas_export", "--tenant", "round-trip-b")[0])[1:]) == _normalised(records[1:])


def test_subject_export_and_import_under_another_id(memories, tenant, maya) -> None:
    out, _ = run("atlas_export", "--tenant", tenant.slug, "--subject", "maya", "--quiet")
    records = lines_of(out)
    assert records[0]["subject"] == "maya"
    assert {r.get("subject") for r in records[1:]} == {"maya"}  # neither tom's memories nor the catalog
    assert len(records) == 9
    from memory.portable.lines import memories_import
    from tenants.services import tenant_create

    b = tenant_create(slug="moved-to", name="moved-to", actor="test")

    report = memories_import(
        tenant=b, lines=out.splitlines(), create_subjects=True, actor="test", subject_name="maya.b@example.org"
    )
    assert report.errors == [] and sum(report.written.values()) == 8
    moved = subject_get(tenant=b, external_id="maya.b@example.org")
    hits = memory_recall(subject=moved, query="where does Maya live", k=1).hits
    assert [h["text"] for h in hits] == ["Maya lives in Porto"]


def test_authority_review_state_and_timestamps_come_from_the_file(tenant, maya) -> None:
    from memory.portable.lines import memories_import

    lines = [
        json.dumps({"format": "atlas-memory-export", "version": 1, "exported_at": "2026-05-01T00:00:00Z"}),
        json.dumps(
            {
                "id": "f-old",
                "type": "semantic",
                "subject": "maya",
                "text": "Maya's sister is called Ana",
                "created_at": "2025-01-01T00:00:00Z",
                "authority": "person",
                "written_by": "person:42",
            }
        ),
        json.dumps(
            {
                "id": "f-new",
                "type": "semantic",
                "subject": "maya",
                "text": "Maya's sister is called Anna",
                "created_at": "2025-06-01T00:00:00Z",
                "authority": "consolidation",
                "written_by": "run:17",
                "review_state": "pending",
                "proposal_for": ["f-old"],
                "use_count": 3,
                "last_used_at": "2025-07-01T00:00:00Z",
            }
        ),
        json.dumps(
            {"id": "e", "type": "episodic", "subject": "maya", "text": "hi", "created_at": "2025-01-01T00:00:00Z"}
        ),
    ]
    report = memories_import(tenant=tenant, lines=lines, create_subjects=False, actor="cli:test")
    assert report.errors == [] and dict(report.written) == {"semantic": 2, "episodic": 1}
    from memory.services.prepare import memory_id_for

    def stored(kind: str, external: str) -> dict:
        memory_id = memory_id_for(
            tenant_id=str(tenant.es_id), user_id=str(maya.es_id), memory_type=kind, external_id=external
        )
        return memory_hit(subject=maya, memory_id=memory_id)["_source"]

    old, new, episode = stored("semantic", "f-old"), stored("semantic", "f-new"), stored("episodic", "e")
    assert (old["authority"], old["written_by"], old["created_at"]) == (
        "person",
        "person:42",
        "2025-01-01T00:00:00+00:00",
    )
    assert (new["authority"], new["written_by"], new["review_state"]) == ("consolidation", "run:17", "pending")
    assert new["proposal_for"] == [memory_hit(subject=maya, memory_id=_id(tenant, maya, "f-old"))["_id"]]
    assert (new["use_count"], new["last_used_at"]) == (3, "2025-07-01T00:00:00+00:00")
    assert (episode["authority"], episode["written_by"]) == ("import", "import:cli:test")
    assert episode["timestamp"] == "2025-01-01T00:00:00+00:00"


def _id(tenant, subject, external: str) -> str:
    from memory.services.prepare import memory_id_for

    return memory_id_for(
        tenant_id=str(tenant.es_id), user_id=str(subject.es_id), memory_type="semantic", external_id=external
    )


HEADER = json.dumps({"format": "atlas-memory-export", "version": 1, "exported_at": "2026-05-01T00:00:00Z"})


@pytest.mark.parametrize(
    ("lines", "errors"),
    [
        (
            [
                HEADER,
                '{"id": "a", "type": "semantic", "subject": "maya", "text": "x", "created_at": "2026-01-01T00:00:00Z", "fact_type": "opinion"}',
            ],
            ["line 2: fact_type: 'opinion' is not one of ['preference', 'identity', 'constraint', 'world']"],
        ),
        (
            [
                HEADER,
                '{"id": "p", "type": "procedural", "subject": "maya", "text": "x", "created_at": "2026-01-01T00:00:00Z", "name": "n", "trigger_text": "t", "steps": [{"tool": "x"}]}',
            ],
            ["line 2: steps/0: 'instruction' is a required property"],
        ),
        (
            [
                HEADER,
                '{"id": "a", "type": "fact", "subject": "maya", "text": "x", "created_at": "2026-01-01T00:00:00Z"}',
                "{not json",
            ],
            [
                "line 2: type must be one of episodic, semantic, procedural, catalog, not 'fact'",
                "line 3: the line is not JSON (Expecting property name enclosed in double quotes at line 1 column 2)",
            ],
        ),
        (
            [HEADER.replace('"version": 1', '"version": 2'), '{"id": "a"}'],
            ["line 1: this is version 2 of atlas-memory-export; this deployment reads version 1"],
        ),
        (
            [
                HEADER,
                '{"id": "a", "type": "semantic", "subject": "maya", "text": "old", "created_at": "2026-01-01T00:00:00Z", "superseded_by": "b"}',
                '{"id": "b", "type": "semantic", "subject": "maya", "text": "new", "created_at": "2026-01-02T00:00:00Z"}',
            ],
            ["line 2: superseded_by names b, which does not list a in supersedes"],
        ),
        (
            [
                HEADER,
                '{"id": "a", "type": "semantic", "subject": "nobody", "text": "x", "created_at": "2026-01-01T00:00:00Z"}',
            ],
            ["line 2: no subject 'nobody' in tenant {slug} (use --create)"],
        ),
        (
            [
                HEADER,
                '{"id": "a", "type": "semantic", "subject": "maya", "text": "x", "created_at": "2026-01-01T00:00:00Z", "valid_from": "2026-02-01T00:00:00Z", "valid_to": "2026-01-01T00:00:00Z"}',
            ],
            ["line 2: valid_to must be after valid_from"],
        ),
        # Issue 32, finding 10b: a fact superseding itself, or a chain that comes back to where it started,
        # is refused as the REST API refuses it (the file stored them as they were).
        (
            [
                HEADER,
                '{"id": "a", "type": "semantic", "subject": "maya", "text": "a", "created_at": "2026-01-01T00:00:00Z", "supersedes": ["a"]}',
                '{"id": "b", "type": "semantic", "subject": "maya", "text": "b", "created_at": "2026-01-01T00:00:00Z", "supersedes": ["c"]}',
                '{"id": "c", "type": "semantic", "subject": "maya", "text": "c", "created_at": "2026-01-01T00:00:00Z", "supersedes": ["b"]}',
            ],
            [
                "line 2: a fact cannot supersede itself",
                "line 3: supersedes a fact that (indirectly) supersedes it: a cycle",
                "line 4: supersedes a fact that (indirectly) supersedes it: a cycle",
            ],
        ),
        # Issue 32, finding 10a: a value is quoted by its first 80 characters and its length, never whole.
        (
            [
                HEADER,
                '{"id": "a", "type": "semantic", "subject": "maya", "text": "' + "x" * 5_000_000 + '", '
                '"created_at": "2026-01-01T00:00:00Z"}',
                '{"id": "b", "type": "' + "y" * 5_000_000 + '", "subject": "maya", "text": "x"}',
            ],
            [
                f"line 2: text: {'x' * 80!r}… (5000000 characters) is too long",
                "line 3: type must be one of episodic, semantic, procedural, catalog, not "
                f"{'y' * 80!r}… (5000000 characters)",
            ],
        ),
        (
            [HEADER.replace('"version": 1', '"version": "' + "v" * 5_000_000 + '"'), '{"id": "a"}'],
            [
                f"line 1: this is version {'v' * 80!r}… (5000000 characters) of atlas-memory-export; this deployment reads version 1"
            ],
        ),
    ],
)
def test_bad_export_lines_name_line_and_field_and_write_nothing(tenant, maya, tmp_path: Path, lines, errors) -> None:
    good = '{"id": "ok", "type": "semantic", "subject": "maya", "text": "a good line", "created_at": "2026-01-01T00:00:00Z"}'
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([*lines, good]) + "\n")
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("atlas_import", str(path), "--tenant", tenant.slug, stdout=out, stderr=err)
    assert err.getvalue().splitlines() == [e.format(slug=tenant.slug) for e in errors]
    exported = lines_of(run("atlas_export", "--tenant", tenant.slug, "--quiet")[0])
    assert exported[1:] == []


def test_the_schema_file_is_the_one_the_docs_name() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "export-format.md").read_text()
    assert str(SCHEMA_PATH.relative_to(Path(__file__).resolve().parents[3])) in doc


def test_a_big_export_reports_progress_on_stderr_and_stdout_holds_only_lines(memories, tenant, monkeypatch) -> None:
    from memory.management.commands import atlas_export

    monkeypatch.setattr(atlas_export, "PROGRESS_EVERY", 4)
    out, err = run("atlas_export", "--tenant", tenant.slug)
    assert err.splitlines() == [
        "exported 4 memories…",
        "exported 8 memories…",
        f"exported 10 memories of {tenant.slug}",
    ]
    assert [json.loads(line)["format"] for line in out.splitlines()[:1]] == ["atlas-memory-export"]
    assert len(out.splitlines()) == 11


def test_links_to_forgotten_memories_travel_as_the_mark_and_a_file_from_before_says_the_same(
    tenant, maya, tmp_path: Path
) -> None:
    """Exported with ``"(forgotten)"`` where a forgotten memory's id was (a forgotten id is free again: it
    must not be a link the import makes) and imported so. A file exported before the forgets, imported
    again, says what is stored: its links to what was forgotten match the mark (no line is an error)."""
    from memory.selectors import memory_get, memory_list
    from memory.services.forget import memory_forget

    kept = fact_write(subject=maya, text="Maya's car is green")
    newer = fact_write(subject=maya, text="Maya's car is black", supersedes=[kept["id"]])
    said = episode_write(subject=maya, text="I sold the bike")
    bike = fact_write(subject=maya, text="Maya has a bike")
    sold = fact_write(subject=maya, text="Maya sold her bike", supersedes=[bike["id"]], source_episodes=[said["id"]])
    before = tmp_path / "before.jsonl"
    run("atlas_export", "--tenant", tenant.slug, "--out", str(before))
    for memory_id in (newer["id"], bike["id"], said["id"]):
        memory_forget(subject=maya, memory_id=memory_id, actor="test")
    after = tmp_path / "after.jsonl"
    run("atlas_export", "--tenant", tenant.slug, "--out", str(after))
    records = {r.get("text"): r for r in lines_of(after.read_text())[1:]}
    assert records["Maya's car is green"]["superseded_by"] == "(forgotten)"
    assert (records["Maya sold her bike"]["supersedes"], records["Maya sold her bike"]["source_episodes"]) == (
        ["(forgotten)"],
        ["(forgotten)"],
    )
    run("atlas_import", str(after), "--tenant", "forgotten-b", "--create")
    b = subject_get(tenant=Tenant.objects.get(slug="forgotten-b"), external_id="maya")
    copies = {m["text"]: m for m in memory_list(subject=b, include_superseded=True)["memories"]}
    green, sold_b = copies["Maya's car is green"], copies["Maya sold her bike"]
    assert (green["status"], green["superseded_by"]) == ("superseded", ["(forgotten)"])
    assert [m["id"] for m in memory_chain_get(subject=b, memory_id=green["id"])] == [green["id"]]
    assert (sold_b["status"], sold_b["supersedes"], sold_b["source_episodes"]) == (
        "current",
        ["(forgotten)"],
        ["(forgotten)"],
    )
    # Imported, then forgotten there, then the same file again: every line says what is stored.
    run("atlas_import", str(before), "--tenant", "forgotten-c", "--create")
    c = subject_get(tenant=Tenant.objects.get(slug="forgotten-c"), external_id="maya")
    by_text = {m["text"]: m["id"] for m in memory_list(subject=c, include_superseded=True)["memories"]}
    for text in ("Maya has a bike", "I sold the bike"):
        memory_forget(subject=c, memory_id=by_text[text], actor="test")
    out, _ = run("atlas_import", str(before), "--tenant", "forgotten-c")
    assert "0 error(s)" in out, out
    stored = memory_get(subject=c, memory_id=by_text["Maya sold her bike"])
    assert (stored["supersedes"], stored["source_episodes"]) == (["(forgotten)"], ["(forgotten)"])  # as stored
    assert sold["id"] != by_text["Maya sold her bike"]  # ids derive from the file's: another tenant, another id
