"""Minting and invalidating API keys, and the role each kind of key carries.

Reader keys hold ``read`` on the memory indices with a DLS query; the writer key
holds ``index`` and ``delete`` (what the service's writes need: index, bulk,
update scripts, deletes) and no read. DLS does not protect writes in
Elasticsearch ("Document level security doesn't apply to write APIs"), and the
update API's ``_source`` option returns the updated document to whoever may
update it, so clients never get a write-capable key: the service writes after
authorising the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from .client import bootstrap_client, es_errors

MANAGED_BY = "atlas-memory"


def all_indices_pattern() -> str:
    """The pattern roles grant on: every alias and versioned index of this deployment."""
    return f"{settings.ATLAS_ES_INDEX_PREFIX}-*"


def owner_filter(*, tenant_id: str, user_id: str | None) -> dict[str, Any]:
    """The code-level guard: the tenant's documents, and of those the subject's own plus shared ones.

    It mirrors the subject key's DLS query, as a second line behind it.
    """
    if user_id is None:
        return {"term": {"tenant_id": tenant_id}}
    return {
        "bool": {
            "filter": [{"term": {"tenant_id": tenant_id}}],
            "should": [
                {"term": {"user_id": user_id}},
                {"bool": {"must_not": [{"exists": {"field": "user_id"}}]}},
            ],
            "minimum_should_match": 1,
        }
    }


@dataclass(frozen=True)
class MintedKey:
    id: str
    name: str
    encoded: str


def tenant_reader_role(*, tenant_id: str) -> dict[str, Any]:
    """Read every memory of one tenant."""
    return {
        "atlas_tenant_reader": {
            "cluster": [],
            "indices": [
                {"names": [all_indices_pattern()], "privileges": ["read"], "query": {"term": {"tenant_id": tenant_id}}}
            ],
        }
    }


def subject_reader_role(*, tenant_id: str, user_id: str) -> dict[str, Any]:
    """Read one subject's memories plus the tenant's catalog: tenant = T AND (user = U OR no user).

    The DLS query is the very filter the application also applies as its second guard.
    """
    return {
        "atlas_subject_reader": {
            "cluster": [],
            "indices": [
                {
                    "names": [all_indices_pattern()],
                    "privileges": ["read"],
                    "query": owner_filter(tenant_id=tenant_id, user_id=user_id),
                }
            ],
        }
    }


def shared_reader_role() -> dict[str, Any]:
    """Read every memory, no DLS: app-filter mode only, where the application's filter is the only guard."""
    return {
        "atlas_shared_reader": {"cluster": [], "indices": [{"names": [all_indices_pattern()], "privileges": ["read"]}]}
    }


def writer_role() -> dict[str, Any]:
    """Index, update, delete and bulk on the memory indices; no read, and none of ``write``'s by-query or
    reindex actions (the service never runs them with this key)."""
    return {
        "atlas_writer": {
            "cluster": [],
            "indices": [{"names": [all_indices_pattern()], "privileges": ["index", "delete"]}],
        }
    }


def api_key_mint(*, name: str, role_descriptors: dict[str, Any], metadata: dict[str, Any]) -> MintedKey:
    with es_errors("create an API key"):
        created = bootstrap_client().security.create_api_key(
            name=name, role_descriptors=role_descriptors, metadata={**metadata, "managed_by": MANAGED_BY}
        )
    return MintedKey(id=created["id"], name=created["name"], encoded=created["encoded"])


def api_keys_invalidate(*, ids: list[str]) -> list[str]:
    """Invalidate keys by id; already-invalid or unknown ids are not an error."""
    if not ids:
        return []
    with es_errors("invalidate API keys"):
        result = bootstrap_client().security.invalidate_api_key(ids=ids)
    return list(result["invalidated_api_keys"])


def api_keys_managed(*, active_only: bool = True) -> list[dict[str, Any]]:
    """Every key Atlas minted (by metadata), as Elasticsearch reports them (no secrets)."""
    with es_errors("list API keys"):
        keys = bootstrap_client().security.get_api_key(active_only=active_only)["api_keys"]
    return [k for k in keys if (k.get("metadata") or {}).get("managed_by") == MANAGED_BY]


def api_key_is_valid(*, key_id: str, role_descriptors: dict[str, Any] | None = None) -> bool:
    """The key exists, is not invalidated, and (when ``role_descriptors`` is given) grants exactly those
    index privileges — a key minted under an older role definition is then reported as not valid."""
    with es_errors("look up an API key"):
        keys = bootstrap_client().security.get_api_key(id=key_id)["api_keys"]
    if not keys or keys[0]["invalidated"]:
        return False
    return role_descriptors is None or _grants(keys[0].get("role_descriptors") or {}) == _grants(role_descriptors)


def _grants(role_descriptors: dict[str, Any]) -> dict[str, list[tuple]]:
    """The part of role descriptors that decides access, in a comparable form (Elasticsearch adds defaults)."""
    return {
        name: sorted(
            (tuple(sorted(g.get("names", []))), tuple(sorted(g.get("privileges", []))), repr(g.get("query")))
            for g in (desc.get("indices") or [])
        )
        for name, desc in role_descriptors.items()
    }
