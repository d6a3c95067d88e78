"""Licence reporting, DLS on a licence without it, and stored ILM policies."""

from __future__ import annotations

import uuid

import pytest
from elasticsearch import AuthorizationException, Elasticsearch, NotFoundError

from embedded_es import EmbeddedElasticsearch

from .conftest import Cluster, mint_key, needs_embedded
from .documents import read_role


def test_license_reports_one_with_dls(admin: Elasticsearch) -> None:
    """DLS needs a platinum, enterprise or trial licence (subscriptions page; docs get-license.asciidoc shape)."""
    licence = admin.license.get()["license"]
    assert licence["status"] == "active"
    assert licence["type"] in ("trial", "platinum", "enterprise")
    assert {"uid", "issue_date_in_millis", "max_nodes", "issuer"} <= set(licence)


@needs_embedded
def test_basic_licence_refuses_requests_restricted_by_dls() -> None:
    """On a licence without DLS, Elasticsearch refuses the requests of a principal whose role uses it
    rather than silently returning unfiltered documents (XPackLicenseState, DOCUMENT_LEVEL_SECURITY_FEATURE)."""
    with EmbeddedElasticsearch(license_type="basic") as server:
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        assert admin.license.get()["license"]["type"] == "basic"
        admin.index(index="docs", id="1", document={"user_id": "a"}, refresh=True)
        restricted = Elasticsearch(
            server.url, api_key=mint_key(admin, "dls", read_role(["docs"], {"term": {"user_id": "a"}}))
        )
        with pytest.raises(AuthorizationException) as info:
            restricted.search(index="docs")
        assert (
            info.value.body["error"]["reason"]
            == "current license is non-compliant for [field and document level security]"
        )
        plain = Elasticsearch(server.url, api_key=mint_key(admin, "plain", read_role(["docs"])))
        assert plain.count(index="docs")["count"] == 1


def test_ilm_policy_round_trip(admin: Elasticsearch) -> None:
    """PUT/GET/DELETE _ilm/policy shapes (docs ilm-put-lifecycle / ilm-get-lifecycle / ilm-delete-lifecycle;
    core/.../ilm/LifecyclePolicyMetadata.java: version starts at 1 and increments on each PUT)."""
    name = f"policy-{uuid.uuid4().hex[:8]}"
    policy = {"phases": {"hot": {"actions": {}}, "delete": {"min_age": "30d", "actions": {"delete": {}}}}}
    assert admin.ilm.put_lifecycle(name=name, policy=policy)["acknowledged"] is True
    got = admin.ilm.get_lifecycle(name=name)[name]
    assert got["version"] == 1
    assert got["policy"] == policy
    assert got["in_use_by"] == {"indices": [], "data_streams": [], "composable_templates": []}
    admin.ilm.put_lifecycle(name=name, policy=policy)
    assert admin.ilm.get_lifecycle(name=name)[name]["version"] == 2
    assert admin.ilm.delete_lifecycle(name=name)["acknowledged"] is True
    with pytest.raises(NotFoundError) as info:
        admin.ilm.get_lifecycle(name=name)
    assert info.value.body["error"] == {
        "root_cause": [{"type": "resource_not_found_exception", "reason": f"Lifecycle policy not found: {name}"}],
        "type": "resource_not_found_exception",
        "reason": f"Lifecycle policy not found: {name}",
    }


def test_ilm_needs_manage_ilm(admin: Elasticsearch, cluster: Cluster) -> None:
    """cluster:admin/ilm/put is granted by manage_ilm, manage and all (ClusterPrivilegeResolver)."""
    client = cluster.with_key(mint_key(admin, "no-ilm", read_role(["x"])))
    with pytest.raises(AuthorizationException) as info:
        client.ilm.put_lifecycle(name="nope", policy={"phases": {}})
    assert "cluster privileges [manage_ilm,manage,all]" in info.value.body["error"]["reason"]
    with pytest.raises(NotFoundError):
        admin.ilm.get_lifecycle(name="nope")
