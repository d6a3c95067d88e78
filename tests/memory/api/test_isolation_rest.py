"""Isolation through the REST API with the code-level filter off: only each key's DLS keeps owners apart.

Two tenants × two subjects, each with an episode, a fact and a playbook, and a catalog entry per
tenant. Every token (a service token per tenant, a subject token per subject) tries every route
that takes a subject or a memory id with every *other* owner's subject and ids — the probes are
generated from those sets, not listed. Each answer must be a 4xx that reveals nothing: no foreign
memory's marker appears in any body, and the cluster holds exactly the documents it held before.
"""

from __future__ import annotations

import itertools
import uuid

import pytest
import requests

from tenants import services, tokens
from tenants.models import ApiKeyCredential

pytestmark = pytest.mark.django_db(transaction=True)


def _owned(svc_get, subject: str) -> dict[str, str]:
    return {
        m["id"]: m["text"]
        for m in svc_get(f"subjects/{subject}/memories", params={"include_superseded": "true"}).json()["memories"]
    }


@pytest.fixture
def estate(atlas_server, atlas_es, admin, settings):
    services.shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor="test")
    base = atlas_server.url + "/api/v1/"
    owners = {}
    for t in ("t1", "t2"):
        tenant = services.tenant_create(slug=f"iso-{t}-{uuid.uuid4().hex[:6]}", name=t, actor="test")
        service = tokens.token_create(tenant=tenant, name="svc", scopes="read,write,forget", actor="test").secret
        headers = {"Authorization": f"Bearer {service}"}
        entry = requests.post(
            base + "catalog",
            json={"title": f"{t} catalog", "text": f"zq{t}catalog policy"},
            headers=headers,
            timeout=60,
        ).json()
        for u in ("u1", "u2"):
            subject = services.subject_create(tenant=tenant, external_id=f"{t}-{u}", actor="test")
            own = tokens.token_create(tenant=tenant, subject=subject, name=u, scopes="read,write,forget", actor="test")
            marker = f"zq{t}{u}"
            ids = {}
            for kind, path, body in (
                ("episode", "episodes", {"text": f"{marker}episode about lunch"}),
                ("fact", "facts", {"text": f"{marker}fact likes lunch"}),
                (
                    "playbook",
                    "playbooks",
                    {
                        "name": f"{marker}p",
                        "trigger_text": f"{marker}playbook lunch",
                        "steps": [{"instruction": "eat"}],
                    },
                ),
            ):
                response = requests.post(
                    base + f"subjects/{subject.external_id}/{path}", json=body, headers=headers, timeout=60
                )
                assert response.status_code == 201, response.text
                ids[kind] = response.json()["id"]
            owners[(t, u)] = {
                "subject": subject.external_id,
                "marker": marker,
                "ids": ids,
                "catalog": entry["id"],
                "catalog_marker": f"zq{t}catalog",
                "service": service,
                "own": own.secret,
            }
    settings.ATLAS_CODE_FILTER = False
    return {"base": base, "owners": owners}


def _cluster_state(admin) -> dict[str, str]:
    admin.indices.refresh(index="atlas-test-*")
    hits = admin.search(
        index="atlas-test-*", query={"prefix": {"text": "zq"}}, size=1000, source=["text", "superseded_by", "use_count"]
    )
    return {h["_id"]: repr(h["_source"]) for h in hits["hits"]["hits"]}


def _probes(owners: dict) -> list[tuple[str, str, str, str, dict | None, set[str]]]:
    """(caller, token, method, path, body, markers the caller may see) for every cross-owner attempt."""
    out = []
    for (caller_key, caller), (target_key, target) in itertools.permutations(owners.items(), 2):
        same_tenant = caller_key[0] == target_key[0]
        for token_kind in ("own", "service"):
            if token_kind == "service" and same_tenant:
                continue  # a tenant's service token may act for its own subjects: not a crossing
            token = caller[token_kind]
            allowed = {caller["marker"], caller["catalog_marker"]}
            if token_kind == "service":
                allowed |= {o["marker"] for k, o in owners.items() if k[0] == caller_key[0]}
            subject = target["subject"]
            for kind, memory_id in target["ids"].items():
                for who in {subject, caller["subject"]}:
                    out += [
                        (caller_key, token, "GET", f"subjects/{who}/memories/{memory_id}", None, allowed),
                        (caller_key, token, "GET", f"subjects/{who}/memories/{memory_id}/chain", None, allowed),
                        (caller_key, token, "DELETE", f"subjects/{who}/memories/{memory_id}", None, allowed),
                        (
                            caller_key,
                            token,
                            "PATCH",
                            f"subjects/{who}/facts/{memory_id}",
                            {"text": "hijacked"},
                            allowed,
                        ),
                        (
                            caller_key,
                            token,
                            "POST",
                            f"subjects/{who}/playbooks/{memory_id}/outcome",
                            {"success": True},
                            allowed,
                        ),
                        (
                            caller_key,
                            token,
                            "POST",
                            f"subjects/{who}/facts",
                            {"text": "forged", "supersedes": [memory_id]},
                            allowed,
                        ),
                    ]
                if kind == "episode":
                    body = {"text": "forged", "source_episodes": [memory_id]}
                    out.append((caller_key, token, "POST", f"subjects/{caller['subject']}/facts", body, allowed))
            out += [
                (caller_key, token, "GET", f"subjects/{subject}/memories", None, allowed),
                (caller_key, token, "POST", f"subjects/{subject}/recall", {"query": "lunch"}, allowed),
                (caller_key, token, "POST", f"subjects/{subject}/episodes", {"text": "forged"}, allowed),
                (caller_key, token, "DELETE", f"subjects/{subject}/memories", {"confirm": subject}, allowed),
            ]
            if not same_tenant:
                out += [
                    (caller_key, token, "GET", f"catalog/{target['catalog']}", None, allowed),
                    (caller_key, token, "PATCH", f"catalog/{target['catalog']}", {"text": "hijacked"}, allowed),
                    (caller_key, token, "DELETE", f"catalog/{target['catalog']}", None, allowed),
                ]
    return out


def test_no_token_reads_or_writes_across_the_line(estate, admin) -> None:
    owners = estate["owners"]
    probes = _probes(owners)
    assert len(probes) >= 200
    every_marker = {o["marker"] for o in owners.values()} | {o["catalog_marker"] for o in owners.values()}
    before = _cluster_state(admin)
    session = requests.Session()
    crossed = []
    for caller, token, method, path, body, allowed in probes:
        response = session.request(
            method, estate["base"] + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60
        )
        seen = {m for m in every_marker if m in response.text} - allowed
        # 404 for someone else's subject or memory; 403 where the token kind may not use the route at all.
        if response.status_code not in (403, 404) or seen:
            crossed.append((caller, method, path, response.status_code, sorted(seen), response.text[:200]))
    assert crossed == []
    assert _cluster_state(admin) == before


def test_revoked_and_expired_tokens_are_refused_everywhere(estate) -> None:
    owner = estate["owners"][("t1", "u1")]
    principal = tokens.token_authenticate(presented=owner["own"])
    tokens.token_revoke(token=principal.token, actor="test")
    paths = [
        f"subjects/{owner['subject']}/memories",
        f"subjects/{owner['subject']}/memories/{owner['ids']['fact']}",
        "me",
    ]
    for path in paths:
        response = requests.get(estate["base"] + path, headers={"Authorization": f"Bearer {owner['own']}"}, timeout=60)
        assert response.status_code == 401, (path, response.text)
        assert owner["marker"] not in response.text
