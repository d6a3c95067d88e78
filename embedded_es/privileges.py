"""Role descriptors: which actions a principal may run on which indices, and its DLS.

Mirrors Elasticsearch's model (x-pack/plugin/core/.../authz/privilege/IndexPrivilege.java,
ClusterPrivilegeResolver.java and authz/permission/IndicesPermission.java):

* a privilege name stands for a set of action-name patterns;
* within one role set, index groups whose names match an index are unioned:
  their privileges add up, and their DLS queries are OR-ed — a group that grants
  read without a query lifts the restriction altogether;
* an API key is limited by its owner's privileges (``limited_by``): an action is
  allowed only when both role sets allow it, and both role sets' DLS apply.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from typing import Any

from .errors import EsError, illegal_argument

INDEX_PRIVILEGE_ACTIONS: dict[str, tuple[str, ...]] = {
    "all": ("indices:*", "internal:transport/proxy/indices:*"),
    "read": ("indices:data/read/*", "indices:admin/resolve/index"),
    "read_cross_cluster": ("internal:transport/proxy/indices:data/read/*",),
    "create": ("indices:data/write/index*", "indices:data/write/bulk*"),
    # create_doc may add documents but never overwrite one: only the
    # op_type=create form of the index action.
    "create_doc": (
        "indices:data/write/index",
        "indices:data/write/index[*",
        "indices:data/write/index:op_type/create",
        "indices:data/write/bulk*",
    ),
    "index": ("indices:data/write/index*", "indices:data/write/bulk*", "indices:data/write/update*"),
    "delete": ("indices:data/write/delete*", "indices:data/write/bulk*"),
    "write": ("indices:data/write/*", "indices:admin/mapping/auto_put"),
    "view_index_metadata": (
        "indices:admin/aliases/get",
        "indices:admin/get",
        "indices:admin/mappings/fields/get*",
        "indices:admin/mappings/get",
        "indices:admin/resolve/index",
        "indices:data/read/field_caps*",
        "indices:admin/validate/query*",
        "indices:monitor/settings/get",
        "indices:admin/ilm/explain",
    ),
    "monitor": ("indices:monitor/*",),
    "manage": ("indices:monitor/*", "indices:admin/*", "indices:data/read/field_caps*"),
    "maintenance": (
        "indices:admin/refresh*",
        "indices:admin/flush*",
        "indices:admin/synced_flush",
        "indices:admin/forcemerge*",
    ),
    "create_index": ("indices:admin/create", "indices:admin/auto_create"),
    "delete_index": ("indices:admin/delete",),
    "auto_configure": ("indices:admin/mapping/auto_put", "indices:admin/auto_create"),
    "manage_ilm": ("indices:admin/ilm/*",),
}

CLUSTER_PRIVILEGE_ACTIONS: dict[str, tuple[str, ...]] = {
    "all": ("cluster:*", "indices:admin/template/*", "indices:admin/index_template/*"),
    "none": (),
    "monitor": ("cluster:monitor/*",),
    # ``manage`` is everything on the cluster except security administration.
    "manage": (
        "cluster:monitor/*",
        "cluster:admin/ilm/*",
        "cluster:admin/settings/*",
        "cluster:admin/reroute",
        "indices:admin/template/*",
        "indices:admin/index_template/*",
    ),
    "manage_security": ("cluster:admin/xpack/security/*",),
    "manage_api_key": ("cluster:admin/xpack/security/api_key/*",),
    # Own keys only: the API-key endpoints narrow the scope to the caller's keys.
    "manage_own_api_key": (
        "cluster:admin/xpack/security/api_key/create",
        "cluster:admin/xpack/security/api_key/get",
        "cluster:admin/xpack/security/api_key/invalidate",
    ),
    "read_security": ("cluster:admin/xpack/security/api_key/get",),
    "manage_ilm": ("cluster:admin/ilm/*",),
    "read_ilm": ("cluster:admin/ilm/get", "cluster:admin/ilm/operation_mode/get"),
    "manage_index_templates": ("indices:admin/template/*", "indices:admin/index_template/*"),
}

# An action every authenticated principal may run (Elasticsearch's
# AuthenticateAction is authorised for any user).
ALWAYS_ALLOWED_ACTIONS = {"cluster:admin/xpack/security/user/authenticate"}
# Not a real transport action: held by the privileges that may see and
# invalidate every user's API keys (manage_api_key and above), not by
# manage_own_api_key.
MANAGE_ALL_API_KEYS = "cluster:admin/xpack/security/api_key/manage_all"


def _action_matches(action: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(action, p) for p in patterns)


def _name_matches(index: str, pattern: str) -> bool:
    if len(pattern) > 1 and pattern.startswith("/") and pattern.endswith("/"):
        return re.fullmatch(pattern[1:-1], index) is not None
    return fnmatch.fnmatchcase(index, pattern)


# Least to most privileged, the order Elasticsearch lists granting privileges in
# (Privilege.sortByAccessLevel: fewest implied privileges first).
_INDEX_ORDER = [
    "create_doc",
    "create",
    "index",
    "delete",
    "read",
    "read_cross_cluster",
    "view_index_metadata",
    "monitor",
    "maintenance",
    "auto_configure",
    "create_index",
    "delete_index",
    "manage_ilm",
    "write",
    "manage",
    "all",
]
_CLUSTER_ORDER = [
    "monitor",
    "read_ilm",
    "read_security",
    "manage_own_api_key",
    "manage_api_key",
    "manage_ilm",
    "manage_index_templates",
    "manage_security",
    "manage",
    "all",
]


def privileges_for_action(action: str, *, cluster: bool) -> list[str]:
    """The privilege names that would grant ``action``, least privileged first."""
    table, order = (CLUSTER_PRIVILEGE_ACTIONS, _CLUSTER_ORDER) if cluster else (INDEX_PRIVILEGE_ACTIONS, _INDEX_ORDER)
    return [name for name in order if table.get(name) and _action_matches(action, table[name])]


def denial_reason(who: str, action: str, indices: list[str] | None = None) -> str:
    """Elasticsearch's 403 reason (security/authz/AuthorizationDenialMessages.java)."""
    if indices is None:
        granted = ",".join(privileges_for_action(action, cluster=True))
        return (
            f"action [{action}] is unauthorized for {who}, this action is granted by the cluster privileges [{granted}]"
        )
    granted = ",".join(privileges_for_action(action, cluster=False))
    return (
        f"action [{action}] is unauthorized for {who} on indices [{','.join(indices)}], "
        f"this action is granted by the index privileges [{granted}]"
    )


@dataclass(frozen=True)
class IndexGroup:
    names: tuple[str, ...]
    privileges: tuple[str, ...]
    query: dict[str, Any] | None

    def covers(self, index: str) -> bool:
        return any(_name_matches(index, n) for n in self.names)

    def allows(self, action: str) -> bool:
        return any(_action_matches(action, INDEX_PRIVILEGE_ACTIONS[p]) for p in self.privileges)


@dataclass(frozen=True)
class Role:
    """One role descriptor set (all the roles of a principal, or of an API key)."""

    superuser: bool
    cluster: tuple[str, ...]
    groups: tuple[IndexGroup, ...]

    def allows_cluster(self, action: str) -> bool:
        if self.superuser or action in ALWAYS_ALLOWED_ACTIONS:
            return True
        return any(_action_matches(action, CLUSTER_PRIVILEGE_ACTIONS[c]) for c in self.cluster)

    def allows_index(self, action: str, index: str) -> bool:
        if self.superuser:
            return True
        return any(g.covers(index) and g.allows(action) for g in self.groups)

    def grants_somewhere(self, action: str) -> bool:
        """Some index group grants ``action`` (Role.checkIndicesAction in Elasticsearch)."""
        return self.superuser or any(g.allows(action) for g in self.groups)

    def dls_queries(self, index: str, action: str) -> list[dict[str, Any]] | None:
        """DLS of ``action`` on ``index``: None = unrestricted, else the queries to OR.

        Only groups that grant the action count, as in IndicesPermission: a
        group with a query restricts, a group without one lifts the restriction.
        """
        if self.superuser:
            return None
        queries: list[dict[str, Any]] = []
        for group in self.groups:
            if not group.covers(index) or not group.allows(action):
                continue
            if group.query is None:
                return None
            queries.append(group.query)
        return queries


SUPERUSER = Role(superuser=True, cluster=("all",), groups=())
SUPERUSER_DESCRIPTORS: dict[str, Any] = {
    "superuser": {
        "cluster": ["all"],
        "indices": [{"names": ["*"], "privileges": ["all"], "allow_restricted_indices": True}],
        "applications": [{"application": "*", "privileges": ["*"], "resources": ["*"]}],
        "run_as": ["*"],
        "metadata": {"_reserved": True},
        "transient_metadata": {"enabled": True},
    }
}


def _parse_query(raw: Any, where: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise illegal_argument(f"failed to parse the DLS query of {where}: {exc.msg}") from exc
    if not isinstance(raw, dict) or len(raw) != 1:
        raise illegal_argument(f"the DLS query of {where} must be a JSON object with one query clause")
    if "template" in raw:
        raise EsError(
            400,
            "illegal_argument_exception",
            f"[embedded_es] templated DLS queries ({where}) are not supported; use a literal query",
        )
    return raw


def role_from_descriptors(descriptors: dict[str, Any]) -> Role:
    """Build the effective Role of a ``role_descriptors`` object, validating it as ES does."""
    if not isinstance(descriptors, dict):
        raise illegal_argument("role_descriptors must be an object")
    cluster: list[str] = []
    groups: list[IndexGroup] = []
    superuser = False
    for role_name, desc in descriptors.items():
        if not isinstance(desc, dict):
            raise illegal_argument(f"failed to parse role [{role_name}]: expected an object")
        if desc.get("metadata", {}).get("_reserved") and role_name == "superuser":
            superuser = True
        for c in desc.get("cluster", []) or []:
            if c not in CLUSTER_PRIVILEGE_ACTIONS:
                raise illegal_argument(
                    f"unknown cluster privilege [{c}]. a privilege must be either one of the predefined cluster privilege names [{','.join(sorted(CLUSTER_PRIVILEGE_ACTIONS))}] or a pattern over one of the available cluster actions"
                )
            cluster.append(c)
        for i, grp in enumerate(desc.get("indices", []) or []):
            if not isinstance(grp, dict):
                raise illegal_argument(f"failed to parse indices privileges for role [{role_name}]")
            names = grp.get("names")
            if isinstance(names, str):
                names = [names]
            privileges = grp.get("privileges")
            if not names or not privileges:
                raise illegal_argument(
                    f"failed to parse indices privileges for role [{role_name}]. missing required [names] and [privileges] fields"
                )
            for p in privileges:
                if p not in INDEX_PRIVILEGE_ACTIONS:
                    raise illegal_argument(
                        f"unknown index privilege [{p}]. a privilege must be either one of the predefined fixed indices privileges [{','.join(sorted(INDEX_PRIVILEGE_ACTIONS))}] or a pattern over one of the available index actions"
                    )
            if grp.get("field_security"):
                raise illegal_argument("[embedded_es] field level security (field_security) is not supported")
            query = _parse_query(grp.get("query"), f"role [{role_name}] index group [{i}]")
            groups.append(IndexGroup(tuple(names), tuple(privileges), query))
    return Role(superuser=superuser, cluster=tuple(cluster), groups=tuple(groups))


@dataclass(frozen=True)
class Permissions:
    """Effective permissions: every role set must allow (API key ∩ owner)."""

    roles: tuple[Role, ...]

    @property
    def superuser(self) -> bool:
        return all(r.superuser for r in self.roles)

    def allows_cluster(self, action: str) -> bool:
        return all(r.allows_cluster(action) for r in self.roles)

    def allows_index(self, action: str, index: str) -> bool:
        return all(r.allows_index(action, index) for r in self.roles)

    def grants_somewhere(self, action: str) -> bool:
        return all(r.grants_somewhere(action) for r in self.roles)

    def dls_query(self, index: str, action: str) -> dict[str, Any] | None:
        """The single query restricting ``action`` on ``index``, or None when unrestricted."""
        clauses: list[dict[str, Any]] = []
        for role in self.roles:
            queries = role.dls_queries(index, action)
            if queries is None:
                continue
            if not queries:
                # No group grants the action; authorization refuses it before
                # DLS matters. Match nothing, to fail closed regardless.
                clauses.append({"bool": {"must_not": [{"match_all": {}}]}})
            elif len(queries) == 1:
                clauses.append(queries[0])
            else:
                clauses.append({"bool": {"should": queries, "minimum_should_match": 1}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"bool": {"filter": clauses}}

    def is_empty(self) -> bool:
        return not self.superuser and not any(r.cluster or r.groups for r in self.roles)

    def has_dls(self) -> bool:
        return any(g.query is not None for r in self.roles for g in r.groups)
