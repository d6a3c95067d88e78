"""Isolation through /mcp/ with the code-level tenant/user filter switched off (ATLAS_CODE_FILTER=False):
two tenants × two subjects (the same external ids in both), a subject token per subject and a tenant
token per tenant. Every MCP tool is tried with every token, every subject argument and the ids of
every memory its subject does not own (generated, not hand-listed): no foreign text in any answer,
no id-taking call that succeeds, and a superuser snapshot of the memory indices unchanged. Revoked
and expired tokens of both kinds are then 401 for every tool."""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
import requests
from django.utils import timezone
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from memory.elastic.indices import MEMORY_TYPES, alias_name
from memory.elastic.mappings import VECTOR_FIELDS
from memory.portable.lines import memories_import
from memory.services.prepare import memory_id_for
from memory.services.writes import episode_write, fact_write, playbook_write
from tenants import tokens
from tenants.models import ApiToken, MemorySubject, Tenant

from .conftest import ALL_SCOPES, mcp_session, run, tenant_with_subjects

pytestmark = pytest.mark.django_db(transaction=True)

EXTERNAL_IDS = ("alice", "bob")
ID_TOOLS = {
    "memory_chain": lambda memory_id: {"memory_id": memory_id},
    "memory_provenance": lambda memory_id: {"memory_id": memory_id},
    "update_fact": lambda memory_id: {"memory_id": memory_id, "text": "probe: overwritten"},
    "forget_memory": lambda memory_id: {"memory_id": memory_id},
    "record_outcome": lambda memory_id: {"playbook_id": memory_id, "success": True},
    "review_proposal": lambda memory_id: {"proposal_id": memory_id, "decision": "accept", "version": '"v"'},
    "remember": lambda memory_id: {"kind": "fact", "text": "probe: stolen", "source_episodes": [memory_id]},
}


@pytest.fixture(autouse=True)
def dls_only(settings):
    settings.ATLAS_CODE_FILTER = False


@dataclass(frozen=True)
class Owner:
    """A subject's memories: ids and texts (each text carries the owner's marker)."""

    tenant: Tenant
    subject: MemorySubject
    ids: tuple[str, ...]
    texts: frozenset[str]


@dataclass(frozen=True)
class Principal:
    name: str
    token: str
    tenant: Tenant
    subject: MemorySubject | None  # None: a tenant service token


def _owner_write(tenant: Tenant, subject: MemorySubject) -> Owner:
    mark = f"{tenant.slug}/{subject.external_id}"
    episode = episode_write(subject=subject, text=f"The secret codeword of {mark} is heliotrope", session_id="s")
    old = fact_write(subject=subject, text=f"{mark} keeps the secret codeword in a red notebook")
    new = fact_write(
        subject=subject, text=f"{mark} keeps the secret codeword in a blue notebook", supersedes=[old["id"]]
    )
    playbook = playbook_write(
        subject=subject,
        name=f"Rotate the secret codeword of {mark}",
        trigger_text="the secret codeword leaked",
        steps=["Pick a new codeword"],
    )
    memories = (episode, old, new, playbook)
    return Owner(tenant, subject, tuple(m["id"] for m in memories), frozenset(m["text"] for m in memories))


def _catalog_write(tenant: Tenant) -> tuple[str, str]:
    """The tenant's one shared catalog entry (its subjects may read it, nobody may change it here)."""
    text = f"Catalog of {tenant.slug}: the secret codeword policy"
    line = json.dumps({"id": "policy", "memory_type": "catalog", "title": "Policy", "text": text})
    report = memories_import(tenant=tenant, lines=[line], create_subjects=False, actor="test")
    assert report.written == {"catalog": 1} and not report.errors, report
    return memory_id_for(tenant_id=str(tenant.es_id), user_id=None, memory_type="catalog", external_id="policy"), text


def _snapshot(admin, tenants: list[Tenant]) -> dict[tuple[str, str], dict]:
    """Every document of ``tenants`` in every memory index, as the superuser sees it."""
    indices = ",".join(alias_name(t) for t in MEMORY_TYPES)
    admin.indices.refresh(index=indices)
    response = admin.search(
        index=indices,
        query={"terms": {"tenant_id": [str(t.es_id) for t in tenants]}},
        size=1000,
        source_excludes=list(VECTOR_FIELDS),
        seq_no_primary_term=True,
    )
    hits = response["hits"]["hits"]
    assert len(hits) < 1000
    return {(h["_index"], h["_id"]): {**h["_source"], "_seq_no": h["_seq_no"]} for h in hits}


def _resolve(principal: Principal, subject_arg: str | None, owners: list[Owner]) -> Owner | None:
    """Whom the call acts for: a subject token only for itself, a tenant token for its own subjects."""
    if principal.subject is not None:
        if subject_arg in (None, principal.subject.external_id):
            return next(o for o in owners if o.subject == principal.subject)
        return None
    return next((o for o in owners if o.tenant == principal.tenant and o.subject.external_id == subject_arg), None)


def test_no_mcp_tool_reads_or_writes_across_the_line(atlas_server, atlas_es) -> None:
    owners: list[Owner] = []
    catalogs: dict[int, tuple[str, str]] = {}
    principals: list[Principal] = []
    tenants = []
    for prefix in ("iso-a", "iso-b"):
        tenant, subjects = tenant_with_subjects(prefix, *EXTERNAL_IDS)
        tenants.append(tenant)
        catalogs[tenant.pk] = _catalog_write(tenant)
        for subject in subjects:
            owners.append(_owner_write(tenant, subject))
            issued = tokens.token_create(tenant=tenant, subject=subject, name="own", scopes=ALL_SCOPES, actor="t")
            principals.append(Principal(f"{prefix}/{subject.external_id}", issued.secret, tenant, subject))
        issued = tokens.token_create(tenant=tenant, name="service", scopes=ALL_SCOPES, actor="t")
        principals.append(Principal(f"{prefix} service", issued.secret, tenant, None))
    all_texts = {text for o in owners for text in o.texts} | {text for _, text in catalogs.values()}
    all_ids = [i for o in owners for i in o.ids] + [memory_id for memory_id, _ in catalogs.values()]
    before = _snapshot(atlas_es.admin(), tenants)
    assert len(before) == len(all_ids)

    # (principal, subject argument, the answer it may see) × tools × ids its subject does not own.
    plans = []
    for principal, subject_arg in itertools.product(principals, (None, *EXTERNAL_IDS)):
        acting = _resolve(principal, subject_arg, owners)
        visible = (acting.texts | {catalogs[acting.tenant.pk][1]}) if acting else frozenset()
        not_owned = [i for i in all_ids if acting is None or i not in acting.ids]
        base = {} if subject_arg is None else {"subject": subject_arg}
        calls = [("recall_memory", {**base, "query": "secret codeword", "k": 50})]
        calls += [("recall_memory", {**base, "query": text, "k": 5}) for text in sorted(all_texts - visible)[:3]]
        calls += [("list_memories", {**base, "include_superseded": True, "page_size": 100})]
        calls += [(tool, {**base, **ID_TOOLS[tool](i)}) for tool, i in itertools.product(ID_TOOLS, not_owned)]
        plans.append((principal, subject_arg, acting, visible, calls))
    probes = sum(len(calls) for *_, calls in plans)
    assert probes >= 1000

    async def probe_all():
        outcomes = []
        for principal, subject_arg, acting, visible, calls in plans:
            async with mcp_session(atlas_server.url, principal.token) as session:
                for tool, arguments in calls:
                    result = await session.call_tool(tool, arguments)
                    outcomes.append((principal, subject_arg, acting, visible, tool, arguments, result))
        return outcomes

    outcomes = run(probe_all)
    assert len(outcomes) == probes
    for principal, subject_arg, acting, visible, tool, arguments, result in outcomes:
        where = (principal.name, subject_arg, tool, arguments)
        answer = result.content[0].text + json.dumps(result.structured_content)
        leaked = [text for text in all_texts - visible if text in answer]
        assert not leaked, (where, leaked)
        if tool == "forget_memory" and acting is not None:
            # Idempotent: what is not there (gone, or never this subject's) is "forgotten: false", alike.
            assert not result.is_error and result.structured_content["forgotten"] is False, where
        elif tool in ID_TOOLS or acting is None:
            assert result.is_error, where
            error = result.structured_content["error"]
            expected = ("not_found",) if acting or principal.subject else ("not_found", "invalid")
            assert error["code"] in expected, (where, error)
        else:
            assert not result.is_error, (where, result.content[0].text)
            if tool == "list_memories":
                assert {m["text"] for m in result.structured_content["memories"]} == visible, where
    assert _snapshot(atlas_es.admin(), tenants) == before

    # Revoked and expired: both kinds of token, refused for every tool before any MCP processing.
    for n, principal in enumerate(principals):
        row = tokens.token_get(tenant=principal.tenant, prefix=principal.token)
        if n % 2:
            tokens.token_revoke(token=row, actor="t")
        else:
            ApiToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    for principal, tool in itertools.product(principals, [*ID_TOOLS, "recall_memory", "list_memories"]):
        body = {
            "jsonrpc": "2.0",
            "id": str(uuid.uuid4()),
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": {"query": "secret codeword", **ID_TOOLS.get(tool, lambda _: {})(all_ids[0])},
            },
        }
        headers = {
            "Authorization": f"Bearer {principal.token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION,
        }
        response = requests.post(f"{atlas_server.url}/mcp/", json=body, headers=headers, timeout=30)
        assert response.status_code == 401, (principal.name, tool)
        assert not any(text in response.text for text in all_texts)
    assert _snapshot(atlas_es.admin(), tenants) == before
