"""The adversarial suite's world: a planted fixture, raw HTTP, the invariants and the superuser snapshot.

Shared by the adversarial tests, the concurrency isolation test and ``benchmarks/gateway_fuzz.py``.
Requests go out through ``http.client`` so the path, the query string, the headers and the body are
sent exactly as generated (the elasticsearch client would re-encode and validate them).

The invariants (asserted for every attacker request):

* the gateway never answers 5xx;
* a non-2xx answer is in Elasticsearch's error shape
  ``{"error": {"root_cause": [...], "type": str, "reason": str}, "status": int}`` — except the few
  non-error bodies Elasticsearch itself sends with a 4xx (see ``error_shape_problem``);
* no response contains a hidden document's secret token (checked on the raw bytes);
* nothing changed (``snapshot`` before and after is identical).
"""

from __future__ import annotations

import base64
import http.client
import json
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from .documents import user_dls

# The two tenants and users the DLS role separates, as Atlas Memory lays them out in shared indices.
TENANT, USER = "t1", "u1"
ATTACKER_DLS = user_dls(TENANT, USER)
INDEX_A, ALIAS_A, INDEX_B, PRIVATE = "adv-a", "adv-a-alias", "adv-b", "zz-private"
FIXTURE_INDICES = (INDEX_A, INDEX_B, PRIVATE)
# (id suffix, tenant, user): which of them the attacker's DLS shows is decided by ATTACKER_DLS.
LAYOUT = [
    ("u1-pie", "t1", "u1"),
    ("u1-car", "t1", "u1"),
    ("u2-tart", "t1", "u2"),
    ("t1-cat", "t1", None),
    ("t2-juice", "t2", "u9"),
    ("t2-cat", "t2", None),
]
MAPPING = {
    "properties": {
        "tenant_id": {"type": "keyword"},
        "user_id": {"type": "keyword"},
        "text": {"type": "text"},
        "note": {"type": "keyword"},
        "rank": {"type": "integer"},
        "embedding": {"type": "dense_vector", "dims": 3, "index": True, "similarity": "cosine"},
    }
}
SECRET_PREFIX = "zqsecret"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class RawRequest:
    """One request exactly as it goes on the wire (``path`` includes the query string, unencoded further)."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    family: str = ""

    def describe(self) -> str:
        body = (self.body or b"")[:300]
        return f"{self.method} {self.path} headers={list(self.headers)} body={body!r}"


class RawClient:
    """A keep-alive HTTP/1.1 connection that sends requests byte for byte as given."""

    def __init__(self, url: str, authorization: str, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.authorization = authorization
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    @classmethod
    def api_key(cls, url: str, encoded: str) -> RawClient:
        return cls(url, f"ApiKey {encoded}")

    @classmethod
    def basic(cls, url: str, username: str, password: str) -> RawClient:
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        return cls(url, f"Basic {token}")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def send(self, request: RawRequest) -> Response:
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self._conn.putrequest(request.method, request.path, skip_host=False, skip_accept_encoding=True)
                names = {k.lower() for k, _ in request.headers}
                if "authorization" not in names:
                    self._conn.putheader("Authorization", self.authorization)
                for name, value in request.headers:
                    self._conn.putheader(name, value)
                body = request.body
                if body is not None or request.method in ("POST", "PUT"):
                    self._conn.putheader("Content-Length", str(len(body or b"")))
                self._conn.endheaders(body or None)
                resp = self._conn.getresponse()
                data = resp.read()
                headers = {k.lower(): v for k, v in resp.getheaders()}
                if headers.get("connection", "").lower() == "close":
                    self.close()
                return Response(resp.status, headers, data)
            except (ConnectionError, http.client.HTTPException, OSError):
                # A connection the server closed between two requests: reconnect once.
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def request(
        self, method: str, path: str, body: Any = None, *, ndjson: bool = False, headers: dict[str, str] | None = None
    ) -> Response:
        """A well-formed JSON (or NDJSON lines) request, for the superuser's own calls and allowed paths."""
        data: bytes | None
        if body is None:
            data = None
        elif ndjson:
            data = b"".join(json.dumps(line).encode() + b"\n" for line in body)
        elif isinstance(body, bytes):
            data = body
        else:
            data = json.dumps(body).encode()
        content_type = "application/x-ndjson" if ndjson else "application/json"
        hdrs = {"Content-Type": content_type, **(headers or {})} if data is not None else dict(headers or {})
        return self.send(RawRequest(method, path, tuple(hdrs.items()), data))


# ---------------------------------------------------------------------------------------------- fixture
@dataclass
class AdvFixture:
    """What the superuser planted: the documents, which of them the attacker may see, and the keys."""

    url: str
    docs: dict[tuple[str, str], dict[str, Any]]  # (index, id) -> source
    visible: set[tuple[str, str]]  # visible to the main attacker
    hidden_ids: list[str]  # ids of documents the attacker must never see (in adv-a / adv-b)
    secrets: list[bytes]
    keys: dict[str, str] = field(default_factory=dict)  # principal name -> encoded API key

    def attacker(self, name: str = "attacker") -> RawClient:
        return RawClient.api_key(self.url, self.keys[name])


def _doc(index: str, suffix: str, tenant: str, user: str | None, n: int, token: str | None) -> dict[str, Any]:
    words = {
        "u1-pie": "apple pie recipe",
        "u1-car": "drives a blue car",
        "u2-tart": "apple tart with cinnamon",
        "t1-cat": "apple varieties catalog",
        "t2-juice": "apple juice every morning",
        "t2-cat": "apple orchard catalog",
    }[suffix]
    source: dict[str, Any] = {
        "tenant_id": tenant,
        "text": f"{words} {token}" if token else words,
        "note": token or f"open-{index}-{suffix}",
        "rank": n,
        "embedding": [1.0, 0.1 * (n % 7), 0.05 * (n % 3)],
    }
    if user:
        source["user_id"] = user
    return source


def _visible_to_attacker(index: str, tenant: str, user: str | None) -> bool:
    return index in (INDEX_A, INDEX_B) and tenant == TENANT and user in (USER, None)


def role(names: list[str], privileges: list[str], query: dict | None = ATTACKER_DLS) -> dict[str, Any]:
    group: dict[str, Any] = {"names": names, "privileges": privileges}
    if query is not None:
        group["query"] = query
    return {"adv_role": {"cluster": [], "indices": [group]}}


ATTACKER_ROLES = {
    # read on every adv-* index, own memories + tenant catalog only
    "attacker": role(["adv-*"], ["read"]),
    # read on adv-a alone: adv-b and zz-private are someone else's
    "narrow": role([INDEX_A], ["read"]),
    # read + index metadata on adv-*
    "meta": role(["adv-*"], ["read", "view_index_metadata"]),
}


def mint(admin: RawClient, name: str, role_descriptors: dict[str, Any]) -> str:
    resp = admin.request("POST", "/_security/api_key", {"name": name, "role_descriptors": role_descriptors})
    assert resp.status == 200, resp.body
    return resp.json()["encoded"]


def plant(admin: RawClient, url: str) -> AdvFixture:
    """Create adv-a (behind adv-a-alias), adv-b and zz-private, fill them, mint the attackers' keys."""
    for index in FIXTURE_INDICES:
        admin.request("DELETE", f"/{index}")
        resp = admin.request("PUT", f"/{index}", {"mappings": MAPPING})
        assert resp.status == 200, resp.body
    assert (
        admin.request("POST", "/_aliases", {"actions": [{"add": {"index": INDEX_A, "alias": ALIAS_A}}]}).status == 200
    )
    docs: dict[tuple[str, str], dict[str, Any]] = {}
    visible: set[tuple[str, str]] = set()
    tokens: list[bytes] = []
    hidden_ids: list[str] = []
    lines: list[Any] = []
    n = 0
    for index in FIXTURE_INDICES:
        for suffix, tenant, user in LAYOUT:
            n += 1
            doc_id = f"{index}-{suffix}"
            shown = _visible_to_attacker(index, tenant, user)
            token = None if shown else f"{SECRET_PREFIX}{secrets.token_hex(6)}"
            source = _doc(index, suffix, tenant, user, n, token)
            docs[(index, doc_id)] = source
            if shown:
                visible.add((index, doc_id))
            else:
                tokens.append(token.encode())
                if index != PRIVATE:
                    hidden_ids.append(doc_id)
            lines += [{"index": {"_index": index, "_id": doc_id}}, source]
    resp = admin.request("POST", "/_bulk?refresh=true", lines, ndjson=True)
    assert resp.status == 200 and not resp.json()["errors"], resp.body
    fixture = AdvFixture(url=url, docs=docs, visible=visible, hidden_ids=hidden_ids, secrets=tokens)
    for name, descriptors in ATTACKER_ROLES.items():
        fixture.keys[name] = mint(admin, f"adv-{name}", descriptors)
    return fixture


def unplant(admin: RawClient) -> None:
    for index in FIXTURE_INDICES:
        admin.request("DELETE", f"/{index}")


# ---------------------------------------------------------------------------------------------- snapshot
def snapshot(
    admin: RawClient, doc_indices: str = "*", size: int = 1000, sources: tuple[str, ...] = FIXTURE_INDICES
) -> dict[str, Any]:
    """What the superuser sees: indices and aliases, mappings, settings, every document, the API keys.

    Documents come from match_all searches (``size`` hits, after a refresh): every document of
    ``doc_indices`` by version, and the documents of ``sources`` (the planted fixture) with their
    sources too.
    """
    admin.request("POST", "/_refresh")
    out: dict[str, Any] = {}
    for name, path in (("aliases", "/_alias"), ("mappings", "/_mapping"), ("settings", "/_settings")):
        resp = admin.request("GET", path)
        out[name] = (resp.status, resp.json() if resp.status == 200 else None)
    # Every document's version (any write bumps its _seq_no), and the planted documents' sources too.
    # Sources of the rest stay out: the session cluster also holds other suites' memories, each with
    # three vectors, and reading them for every example made this suite minutes slower in the full run.
    docs: list[tuple] = []
    out["total"] = 0
    searches = [(doc_indices, False)] + ([(",".join(sources), True)] if sources else [])
    for indices, with_source in searches:
        body = {"query": {"match_all": {}}, "size": size, "track_total_hits": True, "seq_no_primary_term": True}
        if not with_source:
            body["_source"] = False
        resp = admin.request("POST", f"/{indices}/_search?expand_wildcards=all", body)
        if resp.status != 200:  # an attack removed an index the search names: that is a change too
            docs.append(("<search failed>", indices, str(resp.status), resp.body.decode(errors="replace")))
            continue
        hits = resp.json()["hits"]
        out["total"] += hits["total"]["value"]
        docs += [
            (
                h["_index"],
                h["_id"],
                json.dumps(h.get("_source"), sort_keys=True) if with_source else "",
                h.get("_seq_no"),
            )
            for h in hits["hits"]
        ]
    out["docs"] = sorted(docs)
    keys = admin.request("GET", "/_security/api_key")
    out["api_keys"] = sorted(
        (k["id"], k.get("name"), bool(k.get("invalidated"))) for k in (keys.json() or {}).get("api_keys", [])
    )
    return out


def snapshot_diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    problems = []
    for key in before:
        if before[key] != after[key]:
            if key == "docs":
                b, a = set(before[key]), set(after[key])
                problems.append(f"docs changed: gone {sorted(b - a)[:5]}, new/changed {sorted(a - b)[:5]}")
            else:
                problems.append(f"{key} changed: {str(before[key])[:300]} -> {str(after[key])[:300]}")
    return problems


# ---------------------------------------------------------------------------------------------- invariants
def error_shape_problem(request: RawRequest, response: Response) -> str | None:
    """Why a non-2xx answer is not in Elasticsearch's error shape, or None.

    Elasticsearch's error envelope is built by ElasticsearchException.generateFailureXContent /
    RestResponse (server/src/main/java/org/elasticsearch/rest/RestResponse.java). A few 4xx answers are
    not errors and keep their own body, as Elasticsearch sends them:

    * HEAD: no body (RestResponse for HEAD requests);
    * GET document, not found: ``{"_index", "_id", "found": false}`` with 404
      (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/docs-get.html, RestGetAction);
    * explain of a missing document: ``{"_index", "_id", "matched": false}`` with 404 (RestExplainAction);
    * clear scroll / close PIT that freed nothing: ``{"succeeded": true, "num_freed": 0}`` with 404
      (ClearScrollResponse.status(), ClosePointInTimeResponse);
    * the REST layer's own refusals (no handler for the path, wrong HTTP method, an unsupported
      Content-Type, GET alias of a missing alias) carry a string ``error`` next to ``status``:
      RestController.handleBadRequest / handleUnsupportedHttpMethod / dispatchRequest (406) and
      RestGetAliasesAction.
    """
    if response.status < 300 or request.method == "HEAD":
        return None
    try:
        body = json.loads(response.body)
    except (ValueError, UnicodeDecodeError):
        return f"non-JSON error body {response.body[:200]!r}"
    if not isinstance(body, dict):
        return f"error body is not an object: {response.body[:200]!r}"
    if response.status == 404 and set(body) == {"_index", "_id", "found"} and body["found"] is False:
        return None
    if response.status == 404 and set(body) == {"_index", "_id", "matched"} and body["matched"] is False:
        return None
    if response.status == 404 and set(body) == {"succeeded", "num_freed"}:
        return None
    error = body.get("error")
    if isinstance(error, str) and body.get("status") == response.status and response.status in (400, 404, 405, 406):
        return None
    if not isinstance(error, dict) or body.get("status") != response.status:
        return f"not an error envelope: {response.body[:300]!r}"
    if not isinstance(error.get("type"), str) or not isinstance(error.get("reason"), str):
        return f"error without type/reason: {response.body[:300]!r}"
    if not isinstance(error.get("root_cause"), list):
        return f"error without root_cause: {response.body[:300]!r}"
    return None


def leaked(fixture: AdvFixture, response: Response) -> list[bytes]:
    return [token for token in fixture.secrets if token in response.body]


def invariant_problems(fixture: AdvFixture, request: RawRequest, response: Response) -> list[str]:
    problems = []
    if response.status >= 500:
        problems.append(f"5xx answer {response.status}: {response.body[:300]!r}")
    shape = error_shape_problem(request, response)
    if shape:
        problems.append(shape)
    tokens = leaked(fixture, response)
    if tokens:
        problems.append(f"leaked hidden tokens {tokens[:3]} in {response.body[:300]!r}")
    return problems


def assert_invariants(fixture: AdvFixture, request: RawRequest, response: Response) -> None:
    for token in fixture.secrets:
        assert token not in (request.path.encode() + (request.body or b"")), "the generator must not know secrets"
    problems = invariant_problems(fixture, request, response)
    assert not problems, f"{request.describe()}\n -> {response.status}: " + "; ".join(problems)


def hit_ids(response: Response) -> set[str]:
    body = response.json() or {}
    return {h["_id"] for h in body.get("hits", {}).get("hits", [])}


# ---------------------------------------------------------------------------------------------- world
class AdvWorld:
    """The planted fixture plus the superuser's view of it, and a way back when an attack changed it."""

    def __init__(self, url: str, admin: RawClient) -> None:
        self.url = url
        self.admin = admin
        self.fixture = plant(admin, url)
        self.baseline = snapshot(admin)
        self._clients: dict[str, RawClient] = {}

    @classmethod
    def start(cls, url: str, username: str, password: str) -> AdvWorld:
        return cls(url, RawClient.basic(url, username, password))

    def stop(self) -> None:
        for client in self._clients.values():
            client.close()
        unplant(self.admin)
        self.admin.close()

    def client(self, principal: str = "attacker") -> RawClient:
        if principal not in self._clients:
            self._clients[principal] = self.fixture.attacker(principal)
        return self._clients[principal]

    def baseline_refresh(self) -> None:
        """What the attacks are compared with: the cluster as it is now."""
        self.baseline = snapshot(self.admin)

    def changes(self) -> list[str]:
        return snapshot_diff(self.baseline, snapshot(self.admin))

    def attack(self, request: RawRequest, principal: str = "attacker", *, check_unchanged: bool = True) -> Response:
        """Send ``request`` as ``principal`` and assert every invariant, the snapshot included."""
        response = self.client(principal).send(request)
        if check_unchanged:
            changes = self.changes()
            if changes:
                self.restore()
            assert not changes, f"{request.describe()}\n -> {response.status}; changed: " + "; ".join(changes)
        assert_invariants(self.fixture, request, response)
        return response

    def restore_if_changed(self) -> None:
        if self.changes():
            self.restore()

    def restore(self) -> None:
        before = {index for index in self.baseline["aliases"][1] or {}}
        now = self.admin.request("GET", "/_alias").json() or {}
        for index in now:
            if index not in before:
                self.admin.request("DELETE", "/" + quote(index, safe=""))
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        self.fixture = plant(self.admin, self.url)
        self.baseline = snapshot(self.admin)


# ---------------------------------------------------------------------------------------------- request helpers
JSON = (("Content-Type", "application/json"),)
NDJSON = (("Content-Type", "application/x-ndjson"),)


def post(path: str, body, headers=JSON) -> RawRequest:
    return RawRequest("POST", path, headers, body if isinstance(body, bytes) else json.dumps(body).encode())


def get(path: str) -> RawRequest:
    return RawRequest("GET", path)


def visible_ids(adv: AdvWorld, *indices: str) -> set[str]:
    """Ids the main attacker may see (in ``indices``, or anywhere)."""
    return {doc_id for index, doc_id in adv.fixture.visible if not indices or index in indices}


def msearch_hit_ids(response: Response) -> set[str]:
    out: set[str] = set()
    for item in (response.json() or {}).get("responses", []):
        out |= {h["_id"] for h in item.get("hits", {}).get("hits", [])}
    return out


def error_type(response: Response) -> str | None:
    error = (response.json() or {}).get("error")
    return error.get("type") if isinstance(error, dict) else None
