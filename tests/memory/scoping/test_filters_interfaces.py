"""The filter table on every interface: memories written through REST with their scope, then every row of
the table read back through REST (lists, recall, export), MCP (the official client: list_memories,
recall_memory), the CLI (atlas_recall --json, atlas_export), the Python SDK and the TypeScript SDK; each
must find exactly the memories the row expects — never Tom's, never the catalog. A bad filter is a 400
(REST), a tool error (MCP) and a CommandError (CLI) naming the problem.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
import requests
from atlas_memory import Atlas
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.clients.node import PACKAGE, node_run, output_of
from tests.memory.mcp.conftest import call, payload, tool_error
from tests.memory.scoping.conftest import found_keys
from tests.memory.scoping.table import APOLLO, QUERY, SHORT_TABLE, TABLE

pytestmark = pytest.mark.django_db(transaction=True)


def test_rest_writes_answer_the_scope(world):
    memory = requests.get(
        f"{world['base']}subjects/maya/memories/{world['ids']['e1']}", headers=world["headers"], timeout=60
    )
    assert {k: memory.json().get(k) for k in ("session_id", "agent_id", "app_id", "run_id", "metadata")} == {
        "session_id": "s1",
        "agent_id": "planner",
        "app_id": "web",
        "run_id": "r1",
        "metadata": APOLLO,
    }


def test_every_row_on_rest_lists_recall_and_export(world):
    base, headers = world["base"] + "subjects/maya/", world["headers"]
    for filters, expected in TABLE:
        listed = requests.get(base + "memories", params={"filters": json.dumps(filters)}, headers=headers, timeout=60)
        assert listed.status_code == 200, listed.text
        assert found_keys(world, [m["id"] for m in listed.json()["memories"]]) == expected, filters
        body = {"query": QUERY, "k": 20, "min_score": -1e9, "fold_evidence": False, "filters": filters}
        recalled = requests.post(base + "recall", json=body, headers=headers, timeout=60)
        assert recalled.status_code == 200, recalled.text
        assert found_keys(world, [h["id"] for h in recalled.json()["hits"]]) == expected, filters
        exported = requests.get(base + "export", params={"filters": json.dumps(filters)}, headers=headers, timeout=60)
        lines = [json.loads(line) for line in exported.text.splitlines()]
        assert found_keys(world, [line["id"] for line in lines[1:]]) == expected, filters


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"agent_id": {"like": "plan%"}}, "unknown operator 'like'"),
        ({"owner": "x"}, "unknown filter field 'owner'"),
        ({"metadata.priority": {"gte": "high"}}, "compares numbers and ISO 8601 dates"),
    ],
)
def test_a_bad_filter_is_a_400_on_rest_a_tool_error_on_mcp_and_an_error_on_the_cli(world, filters, message):
    base, headers = world["base"] + "subjects/maya/", world["headers"]
    listed = requests.get(base + "memories", params={"filters": json.dumps(filters)}, headers=headers, timeout=60)
    assert listed.status_code == 400 and message in listed.json()["detail"], listed.text
    recalled = requests.post(base + "recall", json={"query": QUERY, "filters": filters}, headers=headers, timeout=60)
    assert recalled.status_code == 400 and message in recalled.json()["detail"], recalled.text
    refused = tool_error(call(world["url"], world["token"], "list_memories", {"subject": "maya", "filters": filters}))
    assert message in refused["message"]
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        call_command(
            "atlas_recall",
            QUERY,
            "--tenant",
            world["tenant"].slug,
            "--subject",
            "maya",
            "--filters",
            json.dumps(filters),
        )


def test_every_row_on_mcp(world):
    for filters, expected in TABLE:
        listed = payload(call(world["url"], world["token"], "list_memories", {"subject": "maya", "filters": filters}))
        assert found_keys(world, [m["id"] for m in listed["memories"]]) == expected, filters
        arguments = {"subject": "maya", "query": QUERY, "k": 20, "min_score": -1e9, "fold_evidence": False}
        recalled = payload(call(world["url"], world["token"], "recall_memory", {**arguments, "filters": filters}))
        assert found_keys(world, [h["id"] for h in recalled["hits"]]) == expected, filters


def test_mcp_remember_stores_the_scope(world):
    arguments = {"subject": "maya", "type": "semantic", "text": "Maya prefers short checklists", "run_id": "r9"}
    stored = payload(call(world["url"], world["token"], "remember", {**arguments, "metadata": {"priority": 3}}))
    assert (stored["run_id"], stored["metadata"]) == ("r9", {"priority": 3})


def test_the_short_table_on_the_cli(world):
    slug = world["tenant"].slug
    for filters, expected in SHORT_TABLE:
        out = StringIO()
        call_command(
            "atlas_recall",
            QUERY,
            "--tenant",
            slug,
            "--subject",
            "maya",
            "--k",
            "20",
            "--min-score=-1e9",
            "--no-fold-evidence",
            "--filters",
            json.dumps(filters),
            "--json",
            stdout=out,
        )
        assert found_keys(world, [h["id"] for h in json.loads(out.getvalue())["hits"]]) == expected, filters
        out = StringIO()
        call_command(
            "atlas_export",
            "--tenant",
            slug,
            "--subject",
            "maya",
            "--quiet",
            "--filters",
            json.dumps(filters),
            stdout=out,
        )
        assert found_keys(world, [json.loads(line)["id"] for line in out.getvalue().splitlines()[1:]]) == expected, (
            filters
        )


def test_the_table_on_the_python_sdk(world):
    with Atlas(world["url"], world["token"], timeout=60) as atlas:
        for filters, expected in TABLE:
            assert (
                found_keys(world, [m.id for m in atlas.memory_list(subject="maya", filters=filters).memories])
                == expected
            )
            hits = atlas.recall(
                subject="maya", query=QUERY, k=20, min_score=-1e9, fold_evidence=False, filters=filters
            ).hits
            assert found_keys(world, [h.id for h in hits]) == expected, filters
        exported = list(atlas.memory_export(subject="maya", filters={"agent_id": "planner"}))
        assert found_keys(world, [line["id"] for line in exported[1:]]) == {"e1", "f1"}
        (episode,) = atlas.memory_list(subject="maya", filters={"session_id": "s1"}).memories
        assert (episode.agent_id, episode.app_id, episode.run_id, episode.metadata) == ("planner", "web", "r1", APOLLO)


def test_the_short_table_on_the_typescript_sdk(world, tmp_path):
    (tmp_path / "node_modules" / "@atlas-memory").mkdir(parents=True)
    (tmp_path / "node_modules" / "@atlas-memory" / "client").symlink_to(PACKAGE, target_is_directory=True)
    script = tmp_path / "table.mjs"
    script.write_text(
        'import { Atlas } from "@atlas-memory/client";\n'
        "const atlas = new Atlas({ baseUrl: process.env.URL, token: process.env.TOKEN });\n"
        "const out = [];\n"
        "for (const filters of JSON.parse(process.env.TABLE)) {\n"
        '  const listed = await atlas.memoryList({ subject: "maya", filters });\n'
        '  const recalled = await atlas.recall({ subject: "maya", query: process.env.QUERY, k: 20, min_score: -1e9,\n'
        "    fold_evidence: false, filters });\n"
        "  out.push([listed.memories.map((m) => m.id), recalled.hits.map((h) => h.id)]);\n"
        "}\n"
        "console.log(JSON.stringify(out));\n"
    )
    env = {
        "URL": world["url"],
        "TOKEN": world["token"],
        "QUERY": QUERY,
        "TABLE": json.dumps([f for f, _ in SHORT_TABLE]),
    }
    result = node_run(str(script), cwd=tmp_path, env=env)
    assert result.returncode == 0, output_of(result)
    for (filters, expected), (listed, recalled) in zip(SHORT_TABLE, json.loads(result.stdout), strict=True):
        assert found_keys(world, listed) == expected, filters
        assert found_keys(world, recalled) == expected, filters
