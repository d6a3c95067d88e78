"""The operator CLI of the memory engine, end to end on the documented formats."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from atlas_site.elastic.client import bootstrap_client
from memory.elastic.indices import alias_name
from tenants.models import MemorySubject, Tenant
from tests.memory.agent_turns import QUESTION, REQUEST, agent_turn_memories, distilled_first, request_served

DOCS = [
    {
        "id": "m-e1",
        "user_id": "maya",
        "memory_type": "episodic",
        "text": "I fly to Tokyo on flight JL44 next week",
        "days_ago": 3,
        "session_id": "s1",
    },
    {
        "id": "m-f1",
        "user_id": "maya",
        "memory_type": "semantic",
        "text": "Maya lives in Berlin",
        "fact_type": "identity",
        "days_ago": 400,
    },
    {
        "id": "m-f2",
        "user_id": "maya",
        "memory_type": "semantic",
        "text": "Maya lives in Lisbon",
        "fact_type": "identity",
        "days_ago": 30,
        "supersedes": ["m-f1"],
    },
    {
        "id": "m-p1",
        "user_id": "maya",
        "memory_type": "procedural",
        "text": "How Maya files expenses",
        "name": "File expenses",
        "trigger_text": "after a trip",
        "steps": [{"order": 1, "instruction": "Scan receipts", "tool": None}],
    },
    {
        "id": "t-e1",
        "user_id": "tom",
        "memory_type": "episodic",
        "text": "My router shows error E1127",
        "timestamp": "2026-10-01T10:00:00Z",
    },
    {
        "id": "c-1",
        "memory_type": "catalog",
        "title": "Travel policy",
        "text": "Economy class for flights under six hours",
        "category": "policy",
        "tags": ["travel"],
    },
]
BAD = [
    "this is not json",
    json.dumps({"id": "x1", "user_id": "maya", "memory_type": "dream", "text": "flying"}),
    json.dumps({"id": "x2", "memory_type": "semantic", "text": "no owner"}),
    json.dumps({"id": "x3", "user_id": "maya", "memory_type": "episodic", "text": ""}),
    json.dumps(
        {
            "id": "x4",
            "user_id": "maya",
            "memory_type": "episodic",
            "text": "both",
            "days_ago": 1,
            "timestamp": "2026-01-01T00:00:00Z",
        }
    ),
    json.dumps(
        {"id": "x5", "user_id": "maya", "memory_type": "catalog", "title": "t", "text": "catalog with an owner"}
    ),
]


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def imported(atlas_es, db, tmp_path: Path, settings) -> tuple[str, Path]:
    from tenants.services import shared_credential_ensure

    settings.ATLAS_USAGE_RECORDING = "off"
    shared_credential_ensure(kind="writer", actor="test")
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join([json.dumps(d) for d in DOCS[:3]] + BAD + [json.dumps(d) for d in DOCS[3:]]) + "\n")
    out, err = run("atlas_import", str(path), "--tenant", "cli-co", "--create", "--quiet", "--allow-partial")
    return out + "\n" + err, path


def test_import_reports_per_line_errors_without_stopping(imported) -> None:
    output, _ = imported
    assert (
        "imported 6 of 12 line(s) into cli-co: 1 catalog, 2 episodic, 1 procedural, 2 semantic; 1 supersession link(s); 6 error(s); created subjects maya, tom"
        in output
    )
    for line_no, message in [
        (4, "line 4: the line is not JSON"),
        (5, "line 5: memory_type must be one of episodic, semantic, procedural, catalog"),
        (6, "line 6: subject is required (only catalog entries have none)"),
        (7, "line 7: text must not be empty"),
        (8, "line 8: give either timestamp or days_ago, not both"),
        (9, "line 9: catalog entries are shared: they have no subject"),
    ]:
        assert message in output, line_no
    assert sorted(MemorySubject.objects.filter(tenant__slug="cli-co").values_list("external_id", flat=True)) == [
        "maya",
        "tom",
    ]


def test_a_partial_import_says_so_once_and_fails_unless_allowed(atlas_es, db, tmp_path: Path, settings) -> None:
    from tenants.services import shared_credential_ensure

    settings.ATLAS_USAGE_RECORDING = "off"
    shared_credential_ensure(kind="writer", actor="test")
    path = tmp_path / "playbooks.jsonl"
    good = {
        "id": "p1",
        "user_id": "maya",
        "memory_type": "procedural",
        "name": "n",
        "trigger_text": "t",
        "steps": ["s"],
    }
    no_trigger = {"id": "p2", "user_id": "maya", "memory_type": "procedural", "name": "n", "steps": ["s"]}
    path.write_bytes(b"\n".join([json.dumps(good).encode(), json.dumps(no_trigger).encode(), b'{"text": "\xff"}']))
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("atlas_import", str(path), "--tenant", "partial-co", "--create", stdout=out, stderr=err)
    assert out.getvalue() == "imported 0 of 3 line(s) into partial-co: nothing; 0 supersession link(s); 2 error(s)\n"
    assert not MemorySubject.objects.filter(tenant__slug="partial-co").exists()  # nothing created
    assert (
        err.getvalue()
        == "line 2: trigger_text is required: a playbook has a name, a trigger_text and steps\nline 3: not UTF-8 text\n"
    )
    assert str(failed.value) == (
        "nothing was imported: fix the lines above and import the file again, or pass --allow-partial "
        "to import the other lines (re-importing leaves what is stored as it is)"
    )
    out, err = run("atlas_import", str(path), "--tenant", "partial-co", "--create", "--allow-partial")
    assert out == (
        "imported 1 of 3 line(s) into partial-co: 1 procedural; 0 supersession link(s); 2 error(s); "
        "created subjects maya\n"
    )
    assert (
        err
        == "line 2: trigger_text is required: a playbook has a name, a trigger_text and steps\nline 3: not UTF-8 text\n"
    )


def test_reimport_overwrites_instead_of_duplicating(imported) -> None:
    _, path = imported
    before = bootstrap_client().count(
        index=alias_name("episodic"), query={"term": {"tenant_id": str(Tenant.objects.get(slug="cli-co").es_id)}}
    )["count"]
    run("atlas_import", str(path), "--tenant", "cli-co", "--quiet", "--allow-partial")
    after = bootstrap_client().count(
        index=alias_name("episodic"), query={"term": {"tenant_id": str(Tenant.objects.get(slug="cli-co").es_id)}}
    )["count"]
    assert before == after == 2


def test_recall_cli_json_and_table(imported) -> None:
    out, _ = run("atlas_recall", "--tenant", "cli-co", "--subject", "maya", "where does she live", "--k", "3", "--json")
    shown = json.loads(out)
    hits = shown["hits"]
    assert shown["legs"] == ["bm25", "dense", "multilingual"]  # English question, English memories
    assert hits[0]["external_id"] == "m-f2"
    assert "m-f1" not in [h["external_id"] for h in hits]  # superseded
    table, _ = run("atlas_recall", "--tenant", "cli-co", "--subject", "maya", "JL44")
    assert table.splitlines()[0].split()[3] == "m-e1"
    assert "hit(s); legs bm25, dense, multilingual; embed " in table.splitlines()[-1]
    with pytest.raises(CommandError) as info:
        run("atlas_recall", "--tenant", "cli-co", "--subject", "nobody", "x")
    assert str(info.value) == "no subject 'nobody' in tenant cli-co"


def test_recall_cli_ranks_for_the_turn_folds_evidence_and_explains(maya) -> None:
    """Issue 26 through the CLI: the turn's ranking, evidence under its fact, --explain and --expect."""
    memories = agent_turn_memories(maya)
    slug = maya.tenant.slug
    out, _ = run("atlas_recall", "--tenant", slug, "--subject", "maya", QUESTION, "--k", "5", "--json")
    distilled_first(json.loads(out)["hits"], memories)
    out, _ = run("atlas_recall", "--tenant", slug, "--subject", "maya", REQUEST, "--k", "5", "--json", "--explain")
    shown = json.loads(out)
    request_served(shown["hits"], memories)
    assert shown["explain"]["turn_kind"] == "request" and shown["hits"][0]["explain"]["turn_prior"] > 1
    said, home = memories["said"], memories["home"]
    table, _ = run(
        "atlas_recall", "--tenant", slug, "--subject", "maya", QUESTION, "--k", "1", "--explain", "--expect", said["id"]
    )
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["1", lines[0].split()[1], "semantic", home["id"]]
    assert lines[1].split()[:3] == ["evidence", said["timestamp"][:10], said["id"]]
    assert lines[2].strip().startswith("why: ") and "1 turn(s) folded under it" in lines[2]
    assert lines[3].startswith(
        f"expected {said['id']}: removed by fold: folded under the fact {home['id']} as its evidence"
    )
    apart, _ = run(
        "atlas_recall", "--tenant", slug, "--subject", "maya", QUESTION, "--json", "--no-fold-evidence",
        "--min-score", "-1000",
    )  # fmt: skip
    assert said["id"] in [hit["id"] for hit in json.loads(apart)["hits"]]  # whatever the floor: the caller's own


def test_recall_cli_filters_types_by_the_name_rest_and_mcp_use(imported) -> None:
    out, _ = run("atlas_recall", "--tenant", "cli-co", "--subject", "maya", "Maya", "--types", "procedural", "--json")
    assert [h["external_id"] for h in json.loads(out)["hits"]] == ["m-p1"]
    out, _ = run(
        "atlas_recall", "--tenant", "cli-co", "--subject", "maya", "Maya", "--types", "semantic,procedural", "--json"
    )
    assert {h["type"] for h in json.loads(out)["hits"]} == {"semantic", "procedural"}
    with pytest.raises(CommandError) as info:
        run("atlas_recall", "--tenant", "cli-co", "--subject", "maya", "Maya", "--types", "facts")
    assert str(info.value) == (
        "Error: argument --types: unknown memory type(s) 'facts': use episodic, semantic, procedural, catalog "
        "(did you mean semantic?)"
    )


def test_the_old_user_option_still_works_for_one_release_and_says_so(imported, capsys) -> None:
    out, _ = run("atlas_recall", "--tenant", "cli-co", "--user", "maya", "JL44", "--json")
    assert json.loads(out)["hits"][0]["external_id"] == "m-e1"
    assert "warning: --user is deprecated; use --subject" in capsys.readouterr().err
    with pytest.raises(CommandError) as info:
        run("atlas_recall", "--tenant", "cli-co", "JL44")
    assert str(info.value) == "--subject is required: the subject's external id"


def test_eval_cli_prints_metrics_per_type_and_leaks(imported, tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "\n".join(
            json.dumps(q)
            for q in [
                {"qid": "q1", "user_id": "maya", "query": "which city is Maya based in", "gold_ids": ["m-f2"]},
                {"qid": "q2", "user_id": "maya", "query": "JL44", "gold_ids": ["m-e1"]},
                {"qid": "q3", "user_id": "tom", "query": "E1127", "gold_ids": ["t-e1"]},
                {"qid": "q4", "user_id": "tom", "query": "rules for booking flights", "gold_ids": ["c-1"]},
            ]
        )
    )
    report_path = tmp_path / "report.json"
    out, _ = run("atlas_eval", "--tenant", "cli-co", "--queries", str(queries), "--json", str(report_path), "--quiet")
    lines = out.splitlines()
    assert lines[0] == "| group | queries | R@1 | R@5 | R@10 | MRR@10 |"
    assert "| all | 4 | " in out
    assert lines[-1] == "leaks: 0"
    report = json.loads(report_path.read_text())
    assert report["summary"]["all"]["recall@10"] == 1.0
    assert {"all", "semantic", "episodic", "catalog"} <= set(report["summary"])
    bm25_only, _ = run(
        "atlas_eval",
        "--tenant",
        "cli-co",
        "--queries",
        str(queries),
        "--no-dense",
        "--no-multilingual",
        "--no-crosslingual",
        "--quiet",
    )
    assert "leaks: 0" in bm25_only
    with pytest.raises(
        CommandError, match=r"recall needs at least one leg \(BM25, dense, multilingual, cross-lingual\)"
    ):
        run(
            "atlas_eval",
            "--tenant",
            "cli-co",
            "--queries",
            str(queries),
            "--no-bm25",
            "--no-dense",
            "--no-multilingual",
            "--no-crosslingual",
        )


def test_forget_cli(imported) -> None:
    out, _ = run("atlas_forget", "--tenant", "cli-co", "--subject", "tom", "--yes")
    said, summary, receipt = out.split("\n", 2)
    assert said == "forgot every memory of cli-co/tom: {'episodic': 1}"
    assert summary.startswith("receipt: documents deleted: episodic 1; run records: 0; idempotency records: 0;")
    assert json.loads(receipt)["indices"]["episodic"]["count"] == 1
    with pytest.raises(CommandError) as info:
        run("atlas_forget", "--tenant", "cli-co")
    assert "add --yes" in str(info.value)


class Terminal(StringIO):
    """Standard input as a person at a terminal: it is a tty, and holds what they type."""

    def isatty(self) -> bool:
        return True


def _stored(tenant: str, user: str) -> dict[str, int]:
    from memory.selectors import memory_counts
    from tenants.selectors import subject_get, tenant_get

    return memory_counts(subject=subject_get(tenant=tenant_get(slug=tenant), external_id=user))


def test_forgetting_a_subject_or_a_tenant_asks_first_and_names_what_goes(imported, monkeypatch) -> None:
    """Issue 27: `atlas_forget --tenant acme --user maya` deleted everything of maya's without asking."""
    before = _stored("cli-co", "maya")
    assert sum(before.values()) == 4
    # No terminal to ask on (a pipe, cron) and no --yes: refused, nothing deleted.
    monkeypatch.setattr("sys.stdin", StringIO("maya\n"))
    with pytest.raises(CommandError) as info:
        run("atlas_forget", "--tenant", "cli-co", "--subject", "maya")
    assert str(info.value) == (
        "this deletes every memory of cli-co/maya: 4 memories (1 fact, 1 older fact version, 1 conversation turn, 1 playbook); "
        "there is no terminal to confirm on: add --yes"
    )
    with pytest.raises(CommandError) as info:
        run("atlas_forget", "--tenant", "cli-co")
    assert "every memory of tenant cli-co (2 subjects), its catalog included: 6 memories (" in str(info.value)
    assert "add --yes" in str(info.value)
    # At a terminal, anything but the name typed back deletes nothing.
    monkeypatch.setattr("sys.stdin", Terminal("yes\n"))
    out = StringIO()
    with pytest.raises(CommandError) as info:
        call_command("atlas_forget", "--tenant", "cli-co", "--subject", "maya", stdout=out)
    assert str(info.value) == "not confirmed: nothing was deleted"
    assert out.getvalue() == (
        "This deletes every memory of cli-co/maya: 4 memories (1 fact, 1 older fact version, 1 conversation turn, 1 playbook), "
        "and every other copy of their text. It cannot be undone.\nType maya to confirm: "
    )
    assert _stored("cli-co", "maya") == before
    # The name typed back: it goes.
    monkeypatch.setattr("sys.stdin", Terminal("maya\n"))
    out, _ = run("atlas_forget", "--tenant", "cli-co", "--subject", "maya")
    assert "forgot every memory of cli-co/maya: {" in out
    assert sum(_stored("cli-co", "maya").values()) == 0
    assert sum(_stored("cli-co", "tom").values()) == 1


def test_forget_cli_takes_the_id_the_import_gave(imported) -> None:
    """The import named the memory "m-f2": that is the id its owner knows, so it works wherever an id does."""
    out, _ = run("atlas_forget", "--tenant", "cli-co", "--subject", "maya", "--memory", "m-f2")
    said, summary, receipt = out.split("\n", 2)
    assert said == "forgot memory m-f2 of cli-co/maya"
    assert summary.startswith("receipt: documents deleted: semantic 1;")
    assert json.loads(receipt)["indices"]["semantic"]["count"] == 1
    with pytest.raises(CommandError) as info:
        run("atlas_forget", "--tenant", "cli-co", "--subject", "maya", "--memory", "m-f2")
    assert "no memory m-f2 for this user" in str(info.value)


def test_reindex_moves_documents_to_a_new_version(imported) -> None:
    es = bootstrap_client()
    alias = alias_name("catalog")
    (before,) = es.indices.get_alias(name=alias)
    total = es.count(index=alias)["count"]
    out, _ = run("atlas_reindex", "catalog", "--reembed")
    (after,) = es.indices.get_alias(name=alias)
    version = int(before.rsplit("-v", 1)[1])
    assert after == f"{alias}-v{version + 1}"
    assert es.count(index=alias)["count"] == total
    assert (
        f"{before} → {after}, {total} document(s), re-embedded: {total} in embedding, {total} in embedding_multilingual"
        f", {total} in embedding_crosslingual\n" in out
    )
    assert not es.indices.exists(index=before)  # nothing reads it, and it would keep what forgetting deletes


def test_reindex_gives_older_turns_the_dates_they_name(imported) -> None:
    """A turn stored before dates were kept (no mention_ranges) gets them when its index is copied."""
    es = bootstrap_client()
    alias = alias_name("episodic")
    hit = next(h for h in es.search(index=alias, size=50)["hits"]["hits"])
    source = {k: v for k, v in hit["_source"].items() if k not in ("mentions", "mention_ranges")}
    source |= {"text": "We flew back from Crete yesterday", "timestamp": "2026-06-02T09:00:00+00:00"}
    es.index(index=hit["_index"], id=hit["_id"], document=source, refresh=True)
    run("atlas_reindex", "episodic")
    after = es.get(index=alias, id=hit["_id"])["_source"]
    assert after["mentions"] == [
        {"phrase": "yesterday", "start": "2026-06-01", "end": "2026-06-01", "granularity": "day"}
    ]
    assert after["mention_ranges"] == [{"gte": "2026-06-01", "lte": "2026-06-01"}]


def test_demo_seed_reads_its_password_from_the_environment_or_a_file(atlas_es, db, tmp_path: Path, monkeypatch) -> None:
    """Never from argv: a command line is visible to every local user in ps."""
    from tenants.models import Person
    from tenants.services import shared_credential_ensure

    shared_credential_ensure(kind="writer", actor="test")
    monkeypatch.delenv("ATLAS_DEMO_PASSWORD", raising=False)
    with pytest.raises(
        CommandError, match="the demo login needs a password: set ATLAS_DEMO_PASSWORD or pass --password-file"
    ):
        run("atlas_demo_seed")
    assert not Person.objects.exists()
    secret = tmp_path / "demo.pw"
    secret.write_text("from-a-file\n")
    run("atlas_demo_seed", "--password-file", str(secret))
    assert Person.objects.get(email="demo@atlas.local").check_password("from-a-file")
    monkeypatch.setenv("ATLAS_DEMO_PASSWORD", "from-the-env")
    run("atlas_demo_seed", "--email", "env@atlas.local")
    assert Person.objects.get(email="env@atlas.local").check_password("from-the-env")
