"""Malformed page cursors and deeply nested JSON bodies over real HTTP: a 400 problem naming the field
(``cursor``, ``body``) on the routes that read it, never a 5xx on any route of the OpenAPI schema."""

from __future__ import annotations

import re
import uuid

import pytest
import requests

from memory.services import catalog, writes
from tenants import services, tokens
from tenants.models import ApiKeyCredential
from tests.bad_inputs import MALFORMED_CURSORS, NESTING_DEPTHS, nested_json
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(atlas_server, atlas_es):
    """A tenant with two subjects and a page's worth of memories each, and a token that may do everything."""
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    tenant = services.tenant_create(slug=f"bad-{uuid.uuid4().hex[:8]}", name="bad input", actor="test")
    alice = services.subject_create(tenant=tenant, external_id="alice", actor="test")
    services.subject_create(tenant=tenant, external_id="bob", actor="test")
    for n in range(3):
        writes.fact_write(subject=alice, text=f"Alice fact {n}", fact_type="world")
        catalog.catalog_entry_write(tenant=tenant, actor="test", title=f"Entry {n}", text=f"Catalog text {n}")
    for n in range(2):  # proposals waiting for review: a listing of their own, never among the memories
        writes.fact_write(subject=alice, text=f"Alice proposal {n}", review=True)
    # A webhook endpoint (issue 36): its routes take ids and a cursor too.
    endpoint, _ = endpoint_create(
        tenant=tenant, url="https://hooks.example.com/in", events=["memory.created"], actor="t"
    )
    secret = tokens.token_create(tenant=tenant, name="all", scopes="read,write,forget,review", actor="test").secret
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {secret}"
    schema = session.get(f"{atlas_server.url}/api/v1/schema/?format=json", timeout=60).json()
    return {"url": atlas_server.url, "session": session, "schema": schema, "alice": alice, "webhook": endpoint.pk}


def _operations(schema: dict, webhook: int) -> list[tuple[str, str, dict]]:
    """Every (method, path with its parameters filled in, operation) of the schema."""
    filled = {"subject": "alice", "memory_id": "0" * 32, "entry_id": "0" * 32, "proposal_id": "0" * 32}
    filled |= {"webhook_id": str(webhook), "delivery_id": "1"}
    out = []
    for template, item in schema["paths"].items():
        path = re.sub(r"\{(\w+)\}", lambda m: filled[m.group(1)], template)
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                out.append((method.upper(), path, operation))
    return out


def _cursor_routes(schema: dict, webhook: int) -> list[tuple[str, str]]:
    return [
        (method, path)
        for method, path, operation in _operations(schema, webhook)
        if any(p["name"] == "cursor" and p["in"] == "query" for p in operation.get("parameters", []))
    ]


def _problem_field(response: requests.Response) -> set[str]:
    assert response.status_code == 400, (response.status_code, response.text[:300])
    assert response.headers["Content-Type"] == "application/problem+json"
    return {e["field"] for e in response.json().get("errors", [])}


def test_every_listing_takes_the_cursor_it_handed_out(api) -> None:
    """The pages walk on: the fix refuses what the API never returns, not its own cursors."""
    routes = _cursor_routes(api["schema"], api["webhook"])
    assert sorted(routes) == [
        ("GET", "/api/v1/catalog"),
        ("GET", "/api/v1/subjects"),
        ("GET", "/api/v1/subjects/alice/memories"),
        ("GET", "/api/v1/subjects/alice/proposals"),
    ]
    # every item once: the catalog's three entries, two subjects, alice's three facts and the catalog, her
    # two proposals
    expected = {
        "/api/v1/catalog": 3,
        "/api/v1/subjects": 2,
        "/api/v1/subjects/alice/memories": 6,
        "/api/v1/subjects/alice/proposals": 2,
    }
    for method, path in routes:
        seen, cursor = [], None
        while True:
            params = {"page_size": 1, **({"cursor": cursor} if cursor else {})}
            page = api["session"].request(method, api["url"] + path, params=params, timeout=60)
            assert page.status_code == 200, page.text
            body = page.json()
            seen += body.get("memories") or body.get("subjects") or body.get("proposals")
            cursor = body["next_cursor"]
            if cursor is None:
                break
        ids = [item.get("id") or item["external_id"] for item in seen]
        assert len(set(ids)) == len(ids) == expected[path], path


@pytest.mark.parametrize(("what", "cursor"), MALFORMED_CURSORS, ids=[w for w, _ in MALFORMED_CURSORS])
def test_a_malformed_cursor_is_a_400_naming_the_cursor_on_every_listing(api, what, cursor) -> None:
    routes = _cursor_routes(api["schema"], api["webhook"])
    assert len(routes) == 4
    for method, path in routes:
        response = api["session"].request(method, api["url"] + path, params={"cursor": cursor}, timeout=60)
        assert _problem_field(response) == {"cursor"}, (what, path)


@pytest.mark.parametrize("depth", NESTING_DEPTHS)
def test_a_deeply_nested_body_is_a_400_naming_the_body_on_every_route_that_reads_one(api, depth) -> None:
    routes = [(m, p) for m, p, op in _operations(api["schema"], api["webhook"]) if "requestBody" in op]
    assert len(routes) >= 10
    body = nested_json(depth)
    for method, path in routes:
        response = api["session"].request(
            method,
            api["url"] + path,
            data=body,
            headers={"Content-Type": "application/json", "If-Match": '"1-1"'},
            timeout=60,
        )
        assert _problem_field(response) == {"body"}, (method, path)
        assert "nested" in response.json()["detail"], response.json()
    # and nothing was written
    listed = api["session"].get(api["url"] + "/api/v1/subjects/alice/memories", timeout=60).json()["memories"]
    assert sorted(m["text"] for m in listed) == [
        *(f"Alice fact {n}" for n in range(3)),
        *(f"Catalog text {n}" for n in range(3)),
    ]


def test_nesting_a_request_needs_is_accepted(api) -> None:
    """The limit sits above every real request: a turn with a recall and its filters (the deepest body)."""
    response = api["session"].post(
        api["url"] + "/api/v1/subjects/alice/turn",
        json={"text": "Alice likes tea", "recall": {"memory_types": ["semantic"], "k": 3}},
        timeout=60,
    )
    assert response.status_code in (200, 201), response.text


def test_no_route_answers_5xx_to_a_malformed_cursor_or_a_nested_body(api) -> None:
    """Every operation of the schema, with each malformed cursor in its query and a deep body."""
    answers: dict[tuple[str, str], set[int]] = {}
    bodies = [nested_json(d) for d in NESTING_DEPTHS]
    for method, path, _operation in _operations(api["schema"], api["webhook"]):
        statuses = answers.setdefault((method, path), set())
        for _what, cursor in MALFORMED_CURSORS:
            response = api["session"].request(method, api["url"] + path, params={"cursor": cursor}, timeout=60)
            statuses.add(response.status_code)
        for body in bodies:
            response = api["session"].request(
                method, api["url"] + path, data=body, headers={"Content-Type": "application/json"}, timeout=60
            )
            statuses.add(response.status_code)
    assert len(answers) >= 20
    server_errors = {route: sorted(s) for route, s in answers.items() if any(code >= 500 for code in s)}
    assert server_errors == {}


def _problem_400(detail: str, errors: list[dict[str, str]]) -> dict:
    return {
        "type": "urn:atlas-memory:problem:invalid",
        "title": "Bad request",
        "status": 400,
        "detail": detail,
        "errors": errors,
    }


def test_a_400_lists_twenty_unknown_fields_and_counts_the_others(api) -> None:
    """Issue 32, finding 10c: 60,000 unknown keys in a body made a 4 MB 400 (each key twice, in ``detail``
    and ``errors``). The first twenty are named (sorted), the rest counted."""
    body = {"text": "a fact", **{f"k{n:05}": 0 for n in range(60_000)}}
    refused = api["session"].post(f"{api['url']}/api/v1/subjects/alice/facts", json=body, timeout=60)
    named = [{"field": f"k{n:05}", "message": "unknown field"} for n in range(20)]
    counted = {"field": "", "message": "… and 59980 more unknown fields"}
    detail = "; ".join(f"k{n:05}: unknown field" for n in range(20)) + "; … and 59980 more unknown fields"
    assert (refused.status_code, refused.json()) == (400, _problem_400(detail, [*named, counted]))
    assert len(refused.content) < 2_000


def test_a_400_echoes_80_characters_of_a_long_value(api) -> None:
    """Issue 32, finding 10a: an error quoting the caller's value quotes its first 80 characters and says
    how long it was — an id the service names as missing, and a name too long to be a field's."""
    missing = "m" * 500_000
    refused = api["session"].post(
        f"{api['url']}/api/v1/subjects/alice/facts", json={"text": "a fact", "supersedes": [missing]}, timeout=60
    )
    message = f"no fact {'m' * 80}… (500000 characters) for this user"
    assert (refused.status_code, refused.json()) == (
        404,
        {
            "type": "urn:atlas-memory:problem:not_found",
            "title": "Not found",
            "status": 404,
            "detail": message,
            "errors": [{"field": "supersedes", "message": message}],
        },
    )
    long_name = "n" * 300_000
    refused = api["session"].post(
        f"{api['url']}/api/v1/subjects/alice/facts", json={"text": "a fact", long_name: 1}, timeout=60
    )
    shown = f"{'n' * 80}… (300000 characters)"
    assert (refused.status_code, refused.json()) == (
        400,
        _problem_400(f"{shown}: unknown field", [{"field": shown, "message": "unknown field"}]),
    )
