"""How role sets combine, checked on the pure permission model (no server needed).

Sources: core/.../authz/permission/IndicesPermission.java (union within a role set, a query-less
group lifts DLS), DocumentPermissions.java (limitDocumentPermissions: an API key's own queries
AND its owner's), docs create-api-keys.asciidoc ("an intersection of API keys permissions and
authenticated user's permissions").
"""

from __future__ import annotations

import pytest

from embedded_es.errors import EsError
from embedded_es.privileges import Permissions, denial_reason, privileges_for_action, role_from_descriptors

SEARCH = "indices:data/read/search"


def role(*groups: dict, cluster: list[str] | None = None):
    return role_from_descriptors({"r": {"cluster": cluster or [], "indices": list(groups)}})


def test_privileges_add_up_across_groups() -> None:
    perms = Permissions((role({"names": ["a*"], "privileges": ["read"]}, {"names": ["ab"], "privileges": ["write"]}),))
    assert perms.allows_index(SEARCH, "ax")
    assert perms.allows_index("indices:data/write/index:op_type/index", "ab")
    assert not perms.allows_index("indices:data/write/index:op_type/index", "ax")


def test_api_key_is_limited_by_its_owner() -> None:
    own = role({"names": ["*"], "privileges": ["all"]})
    owner = role({"names": ["logs-*"], "privileges": ["read"]})
    perms = Permissions((own, owner))
    assert perms.allows_index(SEARCH, "logs-1")
    assert not perms.allows_index(SEARCH, "secrets")
    assert not perms.allows_index("indices:data/write/delete", "logs-1")


def test_dls_queries_of_one_role_set_are_ored() -> None:
    perms = Permissions(
        (
            role(
                {"names": ["m"], "privileges": ["read"], "query": {"term": {"u": 1}}},
                {"names": ["m"], "privileges": ["read"], "query": {"term": {"u": 2}}},
            ),
        )
    )
    assert perms.dls_query("m", SEARCH) == {
        "bool": {"should": [{"term": {"u": 1}}, {"term": {"u": 2}}], "minimum_should_match": 1}
    }


def test_dls_of_key_and_owner_are_anded() -> None:
    perms = Permissions(
        (
            role({"names": ["m"], "privileges": ["read"], "query": {"term": {"u": 1}}}),
            role({"names": ["m"], "privileges": ["read"], "query": {"term": {"t": 9}}}),
        )
    )
    assert perms.dls_query("m", SEARCH) == {"bool": {"filter": [{"term": {"u": 1}}, {"term": {"t": 9}}]}}


def test_only_groups_granting_the_action_shape_its_dls() -> None:
    perms = Permissions(
        (
            role(
                {"names": ["m"], "privileges": ["read"], "query": {"term": {"u": 1}}},
                {"names": ["m"], "privileges": ["write"]},
            ),
        )
    )
    assert perms.dls_query("m", SEARCH) == {"term": {"u": 1}}
    assert perms.dls_query("m", "indices:data/write/update") is None


def test_denial_lists_granting_privileges_least_privileged_first() -> None:
    """AuthorizationDenialMessages + Privilege.sortByAccessLevel."""
    assert privileges_for_action("indices:data/write/index:op_type/create", cluster=False) == [
        "create_doc",
        "create",
        "index",
        "write",
        "all",
    ]
    assert privileges_for_action("cluster:monitor/main", cluster=True) == ["monitor", "manage", "all"]
    assert denial_reason("API key id [k] of user [elastic]", SEARCH, ["a", "b"]) == (
        "action [indices:data/read/search] is unauthorized for API key id [k] of user [elastic] on indices [a,b], "
        "this action is granted by the index privileges [read,all]"
    )


@pytest.mark.parametrize(
    "descriptor",
    [
        {"r": {"indices": [{"names": ["x"], "privileges": ["read"], "query": "{not json"}]}},
        {"r": {"indices": [{"names": ["x"], "privileges": ["read"], "query": {"template": {"source": "{}"}}}]}},
        {"r": {"indices": [{"names": ["x"], "privileges": ["read"], "field_security": {"grant": ["a"]}}]}},
        {"r": {"indices": [{"privileges": ["read"]}]}},
        {"r": {"cluster": ["superpowers"]}},
    ],
)
def test_invalid_or_unsupported_descriptors_are_rejected(descriptor: dict) -> None:
    with pytest.raises(EsError) as info:
        role_from_descriptors(descriptor)
    assert info.value.status == 400
