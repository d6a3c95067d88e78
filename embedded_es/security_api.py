"""The endpoints the engine lacks, answered by the gateway itself.

``_security/api_key``, ``_security/_authenticate``, ``_license``, ``_xpack`` and
``_ilm/policy``, with Elasticsearch's request and response shapes. ILM policies
are stored so that production bootstrap code runs unchanged, but the embedded
engine never moves an index through phases: nothing rolls over or is deleted.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import EsError, action_request_validation, illegal_argument, resource_not_found, security_forbidden
from .keystore import ApiKeyStore, parse_expiration_ms
from .principal import Principal
from .private_files import DIR_MODE, write_private
from .privileges import MANAGE_ALL_API_KEYS, denial_reason, role_from_descriptors

CREATE_KEY = "cluster:admin/xpack/security/api_key/create"
GET_KEY = "cluster:admin/xpack/security/api_key/get"
INVALIDATE_KEY = "cluster:admin/xpack/security/api_key/invalidate"
LICENSE_GET = "cluster:monitor/xpack/license/get"
XPACK_INFO = "cluster:monitor/xpack/info"
ILM_PUT = "cluster:admin/ilm/put"
ILM_GET = "cluster:admin/ilm/get"
ILM_DELETE = "cluster:admin/ilm/delete"
ILM_STATUS = "cluster:admin/ilm/operation_mode/get"
_DAY_MS = 86_400_000
_TRUTHY = ("", "true")


class JsonFileStore:
    """A small JSON document kept durable with temp-file + fsync + rename, readable by its owner only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self.data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}

    def save(self) -> None:
        write_private(self.path, json.dumps(self.data))


class SecurityApi:
    def __init__(self, *, keys: ApiKeyStore, data_dir: Path, license_type: str) -> None:
        self.keys = keys
        self.license_type = license_type
        self.ilm = JsonFileStore(data_dir / "ilm" / "policies.json")
        self.cluster = JsonFileStore(data_dir / "security" / "cluster.json")
        with self.cluster.lock:
            if "license_uid" not in self.cluster.data:
                self.cluster.data.update(license_uid=str(uuid.uuid4()), license_issued=int(time.time() * 1000))
                self.cluster.save()

    def handle(
        self,
        handler: str,
        method: str,
        path: str,
        query: Mapping[str, str],
        body: dict[str, Any] | None,
        principal: Principal,
    ) -> tuple[int, Any]:
        fn = getattr(self, f"_{handler}")
        return fn(method, path, query, body or {}, principal)

    @staticmethod
    def _authorize(principal: Principal, action: str) -> None:
        if not principal.permissions.allows_cluster(action):
            raise security_forbidden(denial_reason(principal.describe(), action))

    @staticmethod
    def _method_not_allowed(method: str, path: str, allowed: str) -> EsError:
        return EsError(
            405,
            "method_not_allowed",
            f"Incorrect HTTP method for uri [{path}] and method [{method}], allowed: [{allowed}]",
        )

    # ---------------------------------------------------------- authenticate
    def _authenticate(self, method, path, query, body, principal: Principal) -> tuple[int, Any]:
        if method != "GET":
            raise self._method_not_allowed(method, path, "GET")
        out: dict[str, Any] = {
            "username": principal.username,
            "roles": ["superuser"] if principal.api_key is None else [],
            "full_name": None,
            "email": None,
            "metadata": {"_reserved": True} if principal.api_key is None else {},
            "enabled": True,
            "authentication_realm": {"name": principal.realm, "type": principal.realm_type},
            "lookup_realm": {"name": principal.realm, "type": principal.realm_type},
            "authentication_type": "realm",
        }
        if principal.api_key is not None:
            out["authentication_realm"] = {"name": "_es_api_key", "type": "_es_api_key"}
            out["lookup_realm"] = {"name": "_es_api_key", "type": "_es_api_key"}
            out["authentication_type"] = "api_key"
            out["api_key"] = {"id": principal.api_key.id, "name": principal.api_key.name}
            # The key's user is its owner with no roles, metadata copied over
            # (ApiKeyService.validateApiKeyTypeAndExpiration).
            out["metadata"] = {"_reserved": True} if principal.username == "elastic" else {}
        return 200, out

    # --------------------------------------------------------------- api keys
    def _api_key(self, method, path, query, body, principal: Principal) -> tuple[int, Any]:
        if path.rstrip("/") != "/_security/api_key":
            raise EsError(400, "illegal_argument_exception", f"[embedded_es] [{method} {path}] is not supported")
        if method in ("POST", "PUT"):
            return self._create_key(body, principal)
        if method == "GET":
            return self._get_keys(query, principal)
        if method == "DELETE":
            return self._invalidate_keys(body, principal)
        raise self._method_not_allowed(method, path, "POST,GET,PUT,DELETE")

    def _create_key(self, body: dict[str, Any], principal: Principal) -> tuple[int, Any]:
        self._authorize(principal, CREATE_KEY)
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise action_request_validation(["api key name is required"])
        if len(name) > 256:
            raise action_request_validation(["api key name may not be more than [256] characters long"])
        if name != name.strip() or name.startswith("_"):
            raise action_request_validation(
                ["api key name may not begin or end with whitespace or begin with an underscore"]
            )
        role_descriptors = body.get("role_descriptors") or {}
        role_from_descriptors(role_descriptors)  # validate before anything is stored
        if principal.api_key is not None and (not role_descriptors or any(role_descriptors.values())):
            # A key created with an API key ("derived key") must ask for an
            # explicitly empty role descriptor, i.e. no privileges at all
            # (security/action/apikey/TransportCreateApiKeyAction.java).
            raise illegal_argument(
                "creating derived api keys requires an explicit role descriptor that is empty (has no privileges)"
            )
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise illegal_argument("metadata must be an object")
        if any(k.startswith("_") for k in metadata):
            raise action_request_validation(["API key metadata keys may not start with [_]"])
        expiration = body.get("expiration")
        expiration_ms = parse_expiration_ms(expiration) if expiration is not None else None
        record, secret = self.keys.create(
            name=name,
            expiration_ms=expiration_ms,
            username=principal.username,
            realm=principal.realm,
            realm_type=principal.realm_type,
            metadata=metadata,
            role_descriptors=role_descriptors,
            limited_by=list(principal.owner_descriptors),
        )
        out = {
            "id": record.id,
            "name": record.name,
            "api_key": secret,
            "encoded": base64.b64encode(f"{record.id}:{secret}".encode()).decode(),
        }
        if record.expiration is not None:
            out["expiration"] = record.expiration
        return 200, out

    def _owned_filter(self, query: Mapping[str, str], principal: Principal) -> dict[str, Any]:
        owner = query.get("owner", "false") in _TRUTHY
        if owner or not principal.permissions.allows_cluster(MANAGE_ALL_API_KEYS):
            # manage_own_api_key (and API keys themselves) only see their own.
            if principal.api_key is not None and not owner:
                return {"ids": [principal.api_key.id]}
            return {"username": principal.username, "realm": principal.realm}
        out = {}
        if "username" in query:
            out["username"] = query["username"]
        if "realm_name" in query:
            out["realm"] = query["realm_name"]
        return out

    def _get_keys(self, query: Mapping[str, str], principal: Principal) -> tuple[int, Any]:
        with_limited = query.get("with_limited_by", "false") in _TRUTHY
        own_key = principal.api_key is not None and query.get("id") == principal.api_key.id and not with_limited
        if not own_key:  # RBACEngine.checkSameUserPermissions: a key may always look itself up
            self._authorize(principal, GET_KEY)
        if with_limited:
            self._authorize(principal, MANAGE_ALL_API_KEYS)
        scope = self._owned_filter(query, principal)
        ids = [query["id"]] if "id" in query else None
        if ids and "ids" in scope and ids[0] not in scope["ids"]:
            ids = ["\0"]
        records = self.keys.find(
            ids=ids or scope.get("ids"),
            name=query.get("name"),
            username=scope.get("username"),
            realm=scope.get("realm"),
            active_only=query.get("active_only", "false") in _TRUTHY,
        )
        # Unknown ids or names are not an error: ApiKeyService answers an empty list.
        return 200, {"api_keys": [r.public(with_limited_by=with_limited) for r in records]}

    def _invalidate_keys(self, body: dict[str, Any], principal: Principal) -> tuple[int, Any]:
        self._authorize(principal, INVALIDATE_KEY)
        ids = body.get("ids")
        if ids is None and "id" in body:
            ids = [body["id"]]
        name = body.get("name")
        if (
            ids is None
            and name is None
            and not body.get("owner")
            and not body.get("username")
            and not body.get("realm_name")
        ):
            raise illegal_argument("One of [api key id, api key name, username, realm name] must be specified")
        scope = self._owned_filter(
            {
                "owner": "true" if body.get("owner") else "false",
                **{k: v for k, v in (("username", body.get("username")), ("realm_name", body.get("realm_name"))) if v},
            },
            principal,
        )
        records = self.keys.find(ids=ids, name=name, username=scope.get("username"), realm=scope.get("realm"))
        if "ids" in scope:
            records = [r for r in records if r.id in scope["ids"]]
        # ApiKeyService searches active keys only, so an unknown or already
        # invalidated id yields empty lists rather than an error.
        newly, before = self.keys.invalidate([r for r in records if not r.invalidated])
        return 200, {
            "invalidated_api_keys": newly,
            "previously_invalidated_api_keys": before,
            "error_count": 0,
        }

    # ---------------------------------------------------------------- licence
    def _license_body(self) -> dict[str, Any]:
        issued = self.cluster.data["license_issued"]
        body: dict[str, Any] = {
            "status": "active",
            "uid": self.cluster.data["license_uid"],
            "type": self.license_type,
            "issue_date": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(issued / 1000)),
            "issue_date_in_millis": issued,
            "max_nodes": 1000,
            "max_resource_units": None,
            "issued_to": "embedded_es",
            "issuer": "elasticsearch",
            "start_date_in_millis": -1,
        }
        if self.license_type == "trial":
            expiry = issued + 30 * _DAY_MS
            body["expiry_date"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(expiry / 1000))
            body["expiry_date_in_millis"] = expiry
        return body

    def _license(self, method, path, query, body, principal: Principal) -> tuple[int, Any]:
        if method != "GET":
            raise EsError(
                400,
                "illegal_argument_exception",
                "[embedded_es] the licence cannot be changed; start the server with --license",
            )
        self._authorize(principal, LICENSE_GET)
        return 200, {"license": self._license_body()}

    def _license_basic_status(self, method, path, query, body, principal):
        self._authorize(principal, LICENSE_GET)
        return 200, {"eligible_to_start_basic": self.license_type != "basic"}

    def _license_trial_status(self, method, path, query, body, principal):
        self._authorize(principal, LICENSE_GET)
        return 200, {"eligible_to_start_trial": False}

    def _license_start_trial(self, method, path, query, body, principal):
        raise EsError(
            400,
            "illegal_argument_exception",
            "[embedded_es] the licence cannot be changed; start the server with --license trial",
        )

    def _xpack(self, method, path, query, body, principal: Principal) -> tuple[int, Any]:
        self._authorize(principal, XPACK_INFO)
        dls = self.license_type != "basic"
        lic = self._license_body()
        return 200, {
            "build": {"hash": "embedded_es", "date": "2024-09-05T00:00:00.000Z"},
            "license": {k: lic[k] for k in ("uid", "type", "status")} | {"mode": self.license_type},
            "features": {
                "security": {"available": True, "enabled": True},
                "document_level_security": {"available": dls, "enabled": True},
                "ilm": {"available": True, "enabled": True},
            },
            "tagline": "You know, for X",
        }

    # -------------------------------------------------------------------- ILM
    def _ilm_status(self, method, path, query, body, principal):
        self._authorize(principal, ILM_STATUS)
        return 200, {"operation_mode": "RUNNING"}

    def _ilm_policy(self, method, path, query, body, principal: Principal) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        name = parts[2] if len(parts) == 3 else None
        if len(parts) > 3:
            raise EsError(400, "illegal_argument_exception", f"[embedded_es] [{method} {path}] is not supported")
        store = self.ilm
        if method == "PUT" and name:
            self._authorize(principal, ILM_PUT)
            policy = body.get("policy")
            if not isinstance(policy, dict):
                raise EsError(400, "x_content_parse_exception", "[1:1] [put_lifecycle_request] policy is required")
            for phase in policy.get("phases", {}):
                if phase not in ("hot", "warm", "cold", "frozen", "delete"):
                    raise illegal_argument(f"Timeseries lifecycle does not support phase [{phase}]")
            with store.lock:
                previous = store.data.get(name)
                store.data[name] = {
                    "version": (previous["version"] + 1) if previous else 1,
                    "modified_date": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                    "policy": policy,
                }
                store.save()
            return 200, {"acknowledged": True}
        if method == "GET":
            self._authorize(principal, ILM_GET)
            wanted = [name] if name else sorted(store.data)
            missing = [n for n in wanted if n not in store.data]
            if missing:
                raise resource_not_found(f"Lifecycle policy not found: {missing[0]}")
            return 200, {
                n: {**store.data[n], "in_use_by": {"indices": [], "data_streams": [], "composable_templates": []}}
                for n in wanted
            }
        if method == "DELETE" and name:
            self._authorize(principal, ILM_DELETE)
            with store.lock:
                if name not in store.data:
                    raise resource_not_found(f"Lifecycle policy not found: {name}")
                del store.data[name]
                store.save()
            return 200, {"acknowledged": True}
        raise self._method_not_allowed(method, path, "GET,PUT,DELETE")
