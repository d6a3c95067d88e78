"""Forgetting by filter on REST, MCP and the CLI (confirmed, receipted: what matches goes, nothing else), and
the write refusals of scope fields on REST and MCP (a clear 400 / tool error, nothing stored)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import requests
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.memory.mcp.conftest import call, payload, tool_error
from tests.memory.scoping.conftest import found_keys

pytestmark = pytest.mark.django_db(transaction=True)


def _fields(response) -> list[str]:
    return [e["field"] for e in response.json()["errors"]]


def _listed(world, subject: str) -> list[dict]:
    response = requests.get(f"{world['base']}subjects/{subject}/memories", headers=world["headers"], timeout=60)
    return [m for m in response.json()["memories"] if not m["shared"]]


def test_rest_forgets_what_a_filter_matches_once_confirmed(world):
    url = f"{world['base']}subjects/maya/memories"
    unconfirmed = requests.delete(url, json={"filters": {"agent_id": "planner"}}, headers=world["headers"], timeout=60)
    assert unconfirmed.status_code == 400 and _fields(unconfirmed) == ["confirm"]
    toms = _listed(world, "tom")
    body = {"confirm": "maya", "filters": {"agent_id": "planner"}}
    forgotten = requests.delete(url, json=body, headers=world["headers"], timeout=60)
    assert forgotten.status_code == 200, forgotten.text
    answer = forgotten.json()
    assert answer["forgotten"] == {"episodic": 1, "semantic": 1}
    assert found_keys(world, answer["ids"]) == {"e1", "f1"}
    assert answer["receipt"]["indices"]["semantic"]["ids"] == [world["ids"]["f1"]]
    assert found_keys(world, [m["id"] for m in _listed(world, "maya")]) == {"p1", "f2"}
    assert _listed(world, "tom") == toms


def test_a_bad_filter_forgets_nothing_on_rest(world):
    body = {"confirm": "maya", "filters": {"agent_id": {"prefix": "plan"}}}
    refused = requests.delete(f"{world['base']}subjects/maya/memories", json=body, headers=world["headers"], timeout=60)
    assert refused.status_code == 400 and "unknown operator 'prefix'" in refused.json()["detail"]
    assert len(_listed(world, "maya")) == 4


def test_mcp_forgets_by_filter_with_confirm(world):
    arguments = {"subject": "maya", "filters": {"metadata.priority": {"gte": 9}}}
    refused = tool_error(call(world["url"], world["token"], "forget_memory", arguments))
    assert refused["field"] == "confirm"
    assert len(_listed(world, "maya")) == 4
    answer = payload(call(world["url"], world["token"], "forget_memory", {**arguments, "confirm": "maya"}))
    assert found_keys(world, answer["ids"]) == {"e1", "f1"}
    assert found_keys(world, [m["id"] for m in _listed(world, "maya")]) == {"p1", "f2"}


def test_the_cli_forgets_by_filter(world):
    slug = world["tenant"].slug
    with pytest.raises(CommandError, match="no terminal to confirm on"):
        call_command("atlas_forget", "--tenant", slug, "--subject", "maya", "--filters", '{"app_id": "web"}')
    assert len(_listed(world, "maya")) == 4
    out = StringIO()
    call_command(
        "atlas_forget", "--tenant", slug, "--subject", "maya", "--filters", '{"app_id": "web"}', "--yes", stdout=out
    )
    assert "forgot 2 memories of" in out.getvalue()
    assert found_keys(world, [m["id"] for m in _listed(world, "maya")]) == {"f1", "f2"}


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"metadata": {"Project": "x"}}, "metadata", "must start with a lower-case letter"),
        ({"metadata": {f"k{n}": n for n in range(17)}}, "metadata", "more than 16 keys"),
        ({"metadata": {"note": "x" * 257}}, "metadata.note", "longer than 256 characters"),
        ({"metadata": {"tags": ["a"]}}, "metadata.tags", "a string, a number, a boolean or an ISO 8601 date"),
        ({"metadata": {"gone": None}}, "metadata.gone", "a string, a number, a boolean or an ISO 8601 date"),
        ({"run_id": "r" * 129}, "run_id", "longer than 128 characters"),
    ],
)
def test_a_bad_scope_is_refused_and_nothing_stored(world, fields, field, message):
    body = {"text": "Maya likes tidy checklists", **fields}
    refused = requests.post(f"{world['base']}subjects/maya/facts", json=body, headers=world["headers"], timeout=60)
    assert refused.status_code == 400, refused.text
    assert _fields(refused) == [field] and message in refused.json()["detail"]
    failed = tool_error(call(world["url"], world["token"], "remember", {"subject": "maya", "type": "semantic", **body}))
    assert failed["code"] == "invalid"
    assert len(_listed(world, "maya")) == 4
    assert json.dumps(body)  # the body itself was JSON: the refusal is the scope's
