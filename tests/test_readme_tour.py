"""The README's REST tour, run as printed against `make run`'s demo data through a live server.

The curl lines are read from README.md itself (method, path under ``$A``, JSON body), so the tour a
newcomer copies cannot drift from what the API answers.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import requests
from django.core.management import call_command

from tenants import services
from tenants.models import ApiKeyCredential

pytestmark = pytest.mark.django_db(transaction=True)

README = Path(__file__).resolve().parent.parent / "README.md"
DEMO_TOKEN = "atlas_0123456789ab_" + "t" * 43  # the shape make run generates


def tour_requests(heading: str = "**An agent over REST.**") -> list[tuple[str, str, dict | None]]:
    """(method, path after $A, JSON body) of every curl line in the first sh block after ``heading``."""
    text = README.read_text()
    section = text[text.index(heading) :]
    block = section[section.index("```sh\n") + 6 : section.index("```", section.index("```sh\n") + 6)]
    commands = re.sub(r"\\\n\s*", " ", block).splitlines()
    calls = []
    for command in commands:
        if not command.startswith("curl "):
            continue
        words = shlex.split(command, comments=True)
        method = words[words.index("-X") + 1] if "-X" in words else "GET"
        path = next(w for w in words if w.startswith("$A"))[2:]
        body = json.loads(words[words.index("-d") + 1]) if "-d" in words else None
        assert "Bearer $T" in command, command  # every call carries the demo token
        calls.append((method, path, body))
    return calls


def test_the_readme_tour_has_the_calls_it_describes():
    assert [(method, path) for method, path, _ in tour_requests()] == [
        ("POST", "/episodes"),
        ("POST", "/facts"),
        ("GET", "/memories/f-home-3/chain"),
        ("POST", "/recall"),
    ]


def test_the_readme_tour_runs_against_the_demo(atlas_server, atlas_es, monkeypatch):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    monkeypatch.setenv("ATLAS_DEMO_PASSWORD", "demo-password-1")
    monkeypatch.setenv("ATLAS_DEMO_TOKEN", DEMO_TOKEN)
    call_command("atlas_demo_seed", verbosity=0)
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {DEMO_TOKEN}"
    base = f"{atlas_server.url}/api/v1/subjects/alice"
    answers = []
    for method, path, body in tour_requests():
        response = http.request(method, base + path, json=body, timeout=60)
        assert response.status_code in (200, 201), (method, path, response.text)
        answers.append(response.json())
    episode, fact, chain, recall = answers
    assert (episode["type"], episode["session_id"]) == ("episodic", "s1")
    assert fact["text"] == "Alice lives in Lisbon" and len(fact["supersedes"]) == 1
    # What the README's comment promises: the demo's chain, now ending with the new fact.
    assert [m["text"] for m in chain["chain"]] == [
        "Alice lives in Berlin",
        "Alice lives in Lisbon, in the Alfama district",
        "Alice lives in Porto",
        "Alice lives in Lisbon",
    ]
    assert recall["hits"][0]["id"] == fact["id"]
    assert "Alice lives in Porto" not in [hit["text"] for hit in recall["hits"]]  # replaced: not recalled


def test_the_readme_scoping_example_runs_against_the_demo(atlas_server, atlas_es, monkeypatch):
    """docs/scoping.md's paragraph in the tour: a scoped fact, a recall filtered to it, forgetting by filter."""
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    monkeypatch.setenv("ATLAS_DEMO_PASSWORD", "demo-password-1")
    monkeypatch.setenv("ATLAS_DEMO_TOKEN", DEMO_TOKEN)
    call_command("atlas_demo_seed", verbosity=0)
    calls = tour_requests("**Scoping.**")
    assert [(method, path) for method, path, _ in calls] == [
        ("POST", "/facts"),
        ("POST", "/recall"),
        ("DELETE", "/memories"),
    ]
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {DEMO_TOKEN}"
    base = f"{atlas_server.url}/api/v1/subjects/alice"
    answers = []
    for method, path, body in calls:
        response = http.request(method, base + path, json=body, timeout=60)
        assert response.status_code in (200, 201), (method, path, response.text)
        answers.append(response.json())
    fact, recall, forgotten = answers
    assert (fact["agent_id"], fact["metadata"]) == ("planner", {"project": "apollo", "priority": 2})
    assert [hit["id"] for hit in recall["hits"]] == [fact["id"]]  # the demo's own memories have no scope
    assert forgotten["ids"] == [fact["id"]] and forgotten["forgotten"] == {"semantic": 1}
