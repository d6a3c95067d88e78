"""Building blocks of generated attack requests, drawn through a ``Chooser``.

The same generator feeds the Hypothesis tests (``HypothesisChooser`` draws from ``st.data()``, so
failures shrink) and the seeded fuzz run in ``benchmarks/gateway_fuzz.py`` (``RandomChooser``).
Nothing here knows a hidden document's secret token: it only knows ids, index names and field names.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

from .adversarial import ALIAS_A, INDEX_A, INDEX_B, PRIVATE, RawRequest

T = TypeVar("T")


class Chooser(Protocol):
    def choice(self, options: Sequence[T]) -> T: ...
    def integer(self, low: int, high: int) -> int: ...
    def text(self, alphabet: str, max_size: int) -> str: ...


class RandomChooser:
    def __init__(self, rng: random.Random, expressions: Sequence[str] | None = None) -> None:
        self.rng = rng
        self.expressions = expressions
        self.plain = False

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def text(self, alphabet: str, max_size: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(0, max_size)))


def maybe(c: Chooser) -> bool:
    return c.choice((False, True))


# ------------------------------------------------------------------------------------------ index names
INDEX_EXPRESSIONS = [
    INDEX_A,
    INDEX_B,
    ALIAS_A,
    PRIVATE,
    "adv-*",
    "*",
    "_all",
    "adv-?",
    "adv-a*",
    "adv-a,adv-b",
    "adv-*,-adv-b",
    "adv-*,-adv-a",
    "*,-adv-b",
    "adv-a,zz-private",
    "zz-*",
    "zz-private,adv-a-alias",
    "atlas-*",
    "other-tenant",
    "adv-missing",
    "ADV-A",
    "adv-a,",
    ",adv-a",
    "adv-a,,adv-b",
    "..",
    ".",
    "adv-a%2Fzz-private",
    "adv-a%3Fq=*:*",
    "adv-a%23x",
    "adv-a%2C%20zz-private",
    "%2A",
    "_all,-adv-b",
    "-adv-b",
    "adv-*,zz-*",
    ".security",
    ".*",
    "*:adv-a",
    "adv-a/_search",
    "adv-a%2F_search%3Fq%3D%2A%3A%2A%26",
]


def index_expression(c: Chooser) -> str:
    """An index expression; a chooser with ``expressions`` (another deployment's names) mixes those in."""
    own = getattr(c, "expressions", None)
    return c.choice([*INDEX_EXPRESSIONS, *own] if own else INDEX_EXPRESSIONS)


def doc_id(c: Chooser, hidden_ids: Sequence[str]) -> str:
    return c.choice(
        [
            *hidden_ids,
            "adv-a-u1-pie",
            "adv-a-t1-cat",
            "zz-private-u1-pie",
            "never-existed",
            "%2E%2E",
            "a%2Fb",
            "x%3Fq=*",
            "_search",
            "",
        ]
    )


# ------------------------------------------------------------------------------------------ parameters
KNOWN_PARAMS = {
    "q": ["*:*", "*", "text:apple", "tenant_id:t2", "note:zq*", "user_id:u2 OR user_id:u9", "_id:*"],
    "df": ["text", "note", "tenant_id", "user_id"],
    "default_operator": ["AND", "OR", "xor"],
    "_source": ["true", "false", "text,note", "*"],
    "_source_includes": ["note", "*"],
    "_source_excludes": ["embedding", ""],
    "scroll": ["1m", "10s", "bogus"],
    "size": ["0", "1", "1000", "-1", "99999999999999999999", "x"],
    "from": ["0", "5", "-3"],
    "routing": ["t2", "x"],
    "preference": ["_local", "_shards:0", "x"],
    "search_type": ["query_then_fetch", "dfs_query_then_fetch", "scan", "x"],
    "refresh": ["true", "wait_for", "false"],
    "ignore_unavailable": ["true", "false"],
    "allow_no_indices": ["true", "false"],
    "expand_wildcards": ["all", "open", "hidden", "closed", "none", "open,hidden"],
    "filter_path": ["hits.hits._source", "-hits", "**"],
    "pretty": ["true", ""],
    "error_trace": ["true"],
    "explain": ["true"],
    "stored_fields": ["*", "note"],
    "docvalue_fields": ["note"],
    "track_total_hits": ["true"],
    "version": ["true"],
    "lenient": ["true"],
    "analyze_wildcard": ["true"],
    "typed_keys": ["true"],
    "conflicts": ["proceed"],
    "scroll_id": ["abc"],
    "op_type": ["create", "index"],
    "timeout": ["1s"],
    "wait_for_active_shards": ["all"],
    "rest_total_hits_as_int": ["true"],
    "request_cache": ["false"],
    "max_concurrent_searches": ["1"],
    "level": ["indices", "shards"],
    "include_defaults": ["true"],
    "flat_settings": ["true"],
    "fields": ["note", "*"],
    "id": ["x"],
    "owner": ["true"],
}
UNKNOWN_PARAMS = ["foo", "index", "_index", "query", "body", "source", "source_content_type", "X", "q%20", "%71"]


def query_string(c: Chooser) -> str:
    parts = []
    for _ in range(c.integer(0, 4)):
        kind = c.integer(0, 9)
        if kind <= 6:
            name = c.choice(sorted(KNOWN_PARAMS))
            value = c.choice(KNOWN_PARAMS[name])
        elif kind == 7:
            name, value = c.choice(UNKNOWN_PARAMS), c.choice(["1", "true", "*:*"])
        elif kind == 8:
            # values carrying separators, raw or encoded
            name = c.choice(["q", "df", "_source", "preference", "routing"])
            value = c.choice(["a&q=*:*", "a=b", "*:*%26df=note", "x%00", "%", "%zz", "%C3%A9"])
        else:
            name, value = "source", quote(json.dumps({"query": {"match_all": {}}}))
        encode = c.choice(("raw", "raw", "quoted"))
        value = quote(value, safe="") if encode == "quoted" else value.replace(" ", "+")
        parts.append(f"{name}={value}" if c.integer(0, 9) else name)
        if c.integer(0, 9) == 0 and parts:
            parts.append(parts[-1])  # duplicate
    return ("?" + "&".join(parts)) if parts else ""


# ------------------------------------------------------------------------------------------ query DSL
def _wrapper() -> dict[str, Any]:
    return {"wrapper": {"query": base64.b64encode(b'{"match_all": {}}').decode()}}


def query(c: Chooser, hidden_ids: Sequence[str], depth: int = 0) -> Any:
    hidden = c.choice(list(hidden_ids) or ["x"])
    leaf = c.choice(
        [
            {"match_all": {}},
            {"match": {"text": "apple"}},
            {"term": {"tenant_id": "t2"}},
            {"terms": {"user_id": ["u2", "u9"]}},
            {"ids": {"values": [hidden]}},
            {"prefix": {"note": "zq"}},
            {"wildcard": {"note": "zqsecret*"}},
            {"regexp": {"note": "zq.*"}},
            {"exists": {"field": "note"}},
            {"query_string": {"query": "*:*"}},
            {"query_string": {"query": "note:zq*", "default_field": "*"}},
            {"simple_query_string": {"query": "apple | zqsecret*", "fields": ["*"]}},
            {"terms": {"note": {"index": c.choice([INDEX_A, INDEX_B, PRIVATE]), "id": hidden, "path": "note"}}},
            {"terms": {"_id": {"index": INDEX_A, "id": hidden, "path": "_id"}}},
            {"more_like_this": {"fields": ["text"], "like": [{"_index": INDEX_A, "_id": hidden}], "min_term_freq": 1}},
            {
                "more_like_this": {
                    "fields": ["text", "note"],
                    "like": [{"_index": c.choice([INDEX_B, PRIVATE]), "_id": hidden}],
                    "unlike": [{"_index": INDEX_A, "_id": hidden}],
                    "min_term_freq": 1,
                    "min_doc_freq": 1,
                }
            },
            _wrapper(),
            {"percolate": {"field": "query", "index": INDEX_A, "id": hidden}},
            {"has_child": {"type": "x", "query": {"match_all": {}}}},
            {"script": {"script": {"source": "doc['note'].value.startsWith('zq')"}}},
            {"script_score": {"query": {"match_all": {}}, "script": {"source": "doc['rank'].value"}}},
            {"knn": {"field": "embedding", "query_vector": [1.0, 0.0, 0.0], "k": 10, "num_candidates": 50}},
            {"function_score": {"query": {"match_all": {}}, "boost_mode": "replace"}},
            {"pinned": {"ids": [hidden], "organic": {"match_all": {}}}},
            {"geo_shape": {"x": {"indexed_shape": {"index": INDEX_B, "id": hidden, "path": "note"}}}},
            {"unknown_query": {}},
            {"match_none": {}},
            {"match_all": {"boost": float("nan")}},
            {"range": {"rank": {"gte": 10**30}}},
        ]
    )
    if depth < 2 and c.integer(0, 3) == 0:
        return {"bool": {c.choice(["must", "should", "filter", "must_not"]): [leaf, query(c, hidden_ids, depth + 1)]}}
    return leaf


AGGS = [
    {"g": {"global": {}, "aggs": {"n": {"terms": {"field": "note"}}}}},
    {"s": {"significant_terms": {"field": "note"}}},
    {"t": {"terms": {"field": "note", "size": 100}}},
    {"h": {"top_hits": {"size": 100}}},
    {"sm": {"sampler": {"shard_size": 100}, "aggs": {"n": {"terms": {"field": "note"}}}}},
    {"c": {"cardinality": {"field": "note"}}},
    {"f": {"filter": {"match_all": {}}, "aggs": {"h": {"top_hits": {}}}}},
    {"x": {"bogus": {}}},
]


def search_body(c: Chooser, hidden_ids: Sequence[str]) -> Any:
    body: dict[str, Any] = {}
    for _ in range(c.integer(0, 4)):
        key = c.choice(
            [
                "query",
                "query",
                "knn",
                "retriever",
                "aggs",
                "suggest",
                "profile",
                "rescore",
                "collapse",
                "post_filter",
                "indices_boost",
                "pit",
                "runtime_mappings",
                "size",
                "_source",
                "docvalue_fields",
                "stored_fields",
                "script_fields",
                "highlight",
                "explain",
                "unknown",
                "sort",
            ]
        )
        value: Any
        if key == "query":
            value = query(c, hidden_ids)
        elif key == "knn":
            value = {"field": "embedding", "query_vector": [1.0, 0.1, 0.0], "k": 20, "num_candidates": 100}
            if maybe(c):
                value = [value, {**value, "filter": {"term": {"tenant_id": "t2"}}}]
        elif key == "retriever":
            knn = {"knn": {"field": "embedding", "query_vector": [1, 0, 0], "k": 10, "num_candidates": 10}}
            standard = {"standard": {"query": query(c, hidden_ids)}}
            value = c.choice([standard, knn, {"rrf": {"retrievers": [standard, knn]}}, {"unknown": {}}])
        elif key == "aggs":
            value = c.choice(AGGS)
        elif key == "suggest":
            value = {"s": {"text": "zqsecret", "term": {"field": "note"}}}
        elif key == "profile":
            value = True
        elif key == "rescore":
            value = {"window_size": 50, "query": {"rescore_query": query(c, hidden_ids)}}
        elif key == "collapse":
            value = {"field": "note", "inner_hits": {"name": "i", "size": 10}}
        elif key == "post_filter":
            value = query(c, hidden_ids)
        elif key == "indices_boost":
            value = [{PRIVATE: 2.0}, {INDEX_B: 1.0}]
        elif key == "pit":
            value = {"id": c.choice(["abc", "", base64.b64encode(b"zz-private").decode()]), "keep_alive": "1m"}
        elif key == "runtime_mappings":
            value = {"leak": {"type": "keyword", "script": {"source": "emit(params._source.note)"}}}
        elif key == "size":
            value = c.choice([0, 10, 1000, -1, 10**20, "ten"])
        elif key == "_source":
            value = c.choice([True, False, ["note"], {"includes": ["*"]}])
        elif key in ("docvalue_fields", "stored_fields"):
            value = ["note", "_id"]
        elif key == "script_fields":
            value = {"n": {"script": {"source": "doc['note'].value"}}}
        elif key == "highlight":
            value = {"fields": {"note": {}, "text": {}}}
        elif key == "explain":
            value = True
        elif key == "sort":
            value = [{"note": "asc"}]
        else:
            value = {"x": 1}
        body[key] = value
    return body


# ------------------------------------------------------------------------------------------ bodies
def deep(n: int) -> bytes:
    return b'{"query":' + b'{"bool":{"must":[' * n + b"{}" + b"]}}" * n + b"}"


def encode_body(c: Chooser, value: Any) -> bytes:
    """JSON for ``value``, or one of the ways to make it hostile."""
    text = json.dumps(value)
    kind = c.integer(0, 11)
    if kind <= 6:
        return text.encode()
    if kind == 7:  # duplicate keys as raw text: the second one wins in some parsers, the first in others
        return ('{"query":{"match_all":{}},' + text[1:]).encode() if text.startswith("{") and text != "{}" else b"{}"
    if kind == 8:
        return c.choice([b"[]", b'"x"', b"1", b"null", b"NaN", b'{"size": Infinity}', b'{"size": 1e999}'])
    if kind == 9:
        return deep(c.choice([50, 1000, 20000]))
    if kind == 10:
        return text.encode()[: max(1, len(text) // 2)]  # truncated
    return c.choice([b"\xff\xfe", b"{\x00}", b"  ", b"", text.encode() + b"garbage"])


def ndjson(lines: list[Any]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def msearch_body(c: Chooser, hidden_ids: Sequence[str]) -> bytes:
    lines: list[bytes] = []
    for _ in range(c.integer(1, 3)):
        header: Any = {}
        for _ in range(c.integer(0, 3)):
            key = c.choice(["index", "index", "q", "search_type", "preference", "routing", "unknown", "indices"])
            header[key] = {
                "index": c.choice(
                    [INDEX_A, [INDEX_A, INDEX_B], "adv-*", PRIVATE, [PRIVATE], "*", "_all", "adv-*,-adv-b", ""]
                ),
                "indices": [PRIVATE],
                "q": "*:*",
                "search_type": c.choice(["dfs_query_then_fetch", "query_then_fetch", "x"]),
                "preference": "_local",
                "routing": "t2",
                "unknown": 1,
            }[key]
        if c.integer(0, 9) == 0:
            header = c.choice([[], "adv-a", None, 1])
        lines.append(json.dumps(header).encode())
        lines.append(encode_body(c, search_body(c, hidden_ids)).replace(b"\n", b" "))
    raw = b"\n".join(lines) + (b"\n" if c.integer(0, 5) else b"")
    return raw


def bulk_body(c: Chooser, hidden_ids: Sequence[str]) -> bytes:
    lines: list[bytes] = []
    for _ in range(c.integer(1, 4)):
        op = c.choice(["index", "create", "update", "delete", "unknown"])
        meta: Any = {}
        if maybe(c):
            meta["_index"] = c.choice([INDEX_A, INDEX_B, PRIVATE, "adv-*", "new-index", ""])
        if maybe(c):
            meta["_id"] = c.choice([*hidden_ids, "new-doc"])
        action: Any = {op: meta}
        if c.integer(0, 7) == 0:
            action = c.choice([{}, {"index": {}, "delete": {}}, [], "index", {"index": "x"}, {"index": None}])
        lines.append(json.dumps(action).encode())
        if op in ("index", "create") and c.integer(0, 7):
            lines.append(json.dumps({"tenant_id": "t1", "user_id": "u1", "text": "forged"}).encode())
        elif op == "update" and c.integer(0, 7):
            lines.append(json.dumps({"doc": {"text": "forged"}}).encode())
    return b"\n".join(lines) + b"\n"


# ------------------------------------------------------------------------------------------ families
Family = Callable[[Chooser, Sequence[str]], tuple[str, str, Any]]


def _json_or_none(c: Chooser, value: Any) -> bytes | None:
    return encode_body(c, value) if c.integer(0, 4) else None


def _search(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    method = c.choice(["GET", "POST", "POST", "PUT", "DELETE"])
    where = c.choice(["/{i}/_search", "/_search", "/{i}/_search", "/{i}/_search/template"])
    return method, where.format(i=index_expression(c)), _json_or_none(c, search_body(c, ids))


def _count(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    where = c.choice(["/{i}/_count", "/_count"])
    return c.choice(["GET", "POST"]), where.format(i=index_expression(c)), _json_or_none(c, {"query": query(c, ids)})


def _msearch(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    where = c.choice(["/_msearch", "/{i}/_msearch"]).format(i=index_expression(c))
    return c.choice(["GET", "POST"]), where, msearch_body(c, ids)


def _mget(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    where = c.choice(["/_mget", "/{i}/_mget"]).format(i=index_expression(c))
    docs = [
        c.choice(
            [
                {"_index": c.choice([INDEX_A, INDEX_B, PRIVATE, ALIAS_A, "adv-*"]), "_id": doc_id(c, ids)},
                {"_id": doc_id(c, ids)},
                {"_index": INDEX_A},
                {"_index": INDEX_A, "_id": doc_id(c, ids), "_source": ["note"]},
                "x",
                None,
                {"_index": INDEX_A, "_id": ["x"]},
            ]
        )
        for _ in range(c.integer(0, 3))
    ]
    body = c.choice([{"docs": docs}, {"ids": [doc_id(c, ids)]}, {"docs": "x"}, {"ids": "x"}, {}])
    return c.choice(["GET", "POST"]), where, _json_or_none(c, body)


def _doc_read(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    sub = c.choice(["_doc", "_source", "_explain", "_termvectors", "_doc"])
    method = c.choice(["GET", "HEAD", "POST"]) if sub != "_explain" else c.choice(["GET", "POST"])
    body = _json_or_none(c, {"query": query(c, ids)}) if sub in ("_explain", "_termvectors") else None
    return method, f"/{index_expression(c)}/{sub}/{doc_id(c, ids)}", body


def _metadata(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    sub = c.choice(
        [
            "_field_caps?fields=*",
            "_terms_enum",
            "_validate/query?explain=true",
            "_validate/query?rewrite=true",
            "_stats",
            "_mapping",
            "_settings",
            "_alias",
            "_aliases",
            "_refresh",
            "_flush",
            "_forcemerge",
            "_segments",
            "_recovery",
            "_analyze",
            "",
        ]
    )
    method = c.choice(["GET", "POST", "HEAD"])
    body: Any = None
    if sub.startswith("_terms_enum"):
        body = {"field": c.choice(["note", "text", "_id", "tenant_id"]), "string": c.choice(["", "zq", "t"])}
    elif sub.startswith("_validate"):
        body = {"query": query(c, ids)}
    elif sub == "_analyze":
        body = {"field": "note", "text": "x"}
    where = c.choice(["/{i}/" + sub, "/" + sub]).format(i=index_expression(c))
    return method, where.rstrip("/") or "/", _json_or_none(c, body) if body is not None else None


def _writes(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    i, d = index_expression(c), doc_id(c, ids)
    kind = c.choice(["doc", "create", "update", "delete", "post_doc", "by_query", "reindex", "bulk"])
    forged = {"tenant_id": "t1", "user_id": "u1", "text": "forged"}
    if kind == "doc":
        return c.choice(["PUT", "POST"]), f"/{i}/_doc/{d}", encode_body(c, forged)
    if kind == "create":
        return "PUT", f"/{i}/_create/{d}", encode_body(c, forged)
    if kind == "update":
        body = c.choice(
            [
                {"doc": {"text": "forged"}},
                {"script": {"source": "ctx._source.text = 'forged'"}},
                {"script": "ctx.op = 'delete'"},
                {"doc": {"text": "x"}, "doc_as_upsert": True},
                {"upsert": forged, "script": {"source": "ctx._source.note = params._source"}},
            ]
        )
        return "POST", f"/{i}/_update/{d}", encode_body(c, body)
    if kind == "delete":
        return "DELETE", f"/{i}/_doc/{d}", None
    if kind == "post_doc":
        return "POST", f"/{i}/_doc", encode_body(c, forged)
    if kind == "by_query":
        sub = c.choice(["_delete_by_query", "_update_by_query"])
        body = {"query": query(c, ids)}
        if sub == "_update_by_query" and maybe(c):
            body["script"] = {"source": "ctx._source.text = 'forged'"}
        return "POST", f"/{i}/{sub}", encode_body(c, body)
    if kind == "reindex":
        dest = c.choice(["new-index", INDEX_A, INDEX_B, PRIVATE, "adv-new"])
        body = {"source": {"index": i, "query": query(c, ids)}, "dest": {"index": dest}}
        if maybe(c):
            body["script"] = {"source": "ctx._source.text = 'forged'"}
        return "POST", "/_reindex", encode_body(c, body)
    return c.choice(["POST", "PUT"]), c.choice(["/_bulk", f"/{i}/_bulk"]), bulk_body(c, ids)


def _index_admin(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    i = index_expression(c)
    kind = c.choice(["create", "delete", "get", "mapping", "settings", "aliases", "alias_path", "close", "open"])
    if kind == "create":
        return "PUT", f"/{c.choice([i, 'adv-new', 'new-index'])}", _json_or_none(c, {"mappings": {"properties": {}}})
    if kind == "delete":
        return "DELETE", f"/{i}", None
    if kind == "get":
        return c.choice(["GET", "HEAD"]), f"/{i}", None
    if kind == "mapping":
        return "PUT", f"/{i}/_mapping", encode_body(c, {"properties": {"leak": {"type": "keyword"}}})
    if kind == "settings":
        return "PUT", f"/{i}/_settings", encode_body(c, {"index": {"number_of_replicas": 1}})
    if kind == "aliases":
        action = c.choice(
            [
                {"remove_index": {"index": i}},
                {"add": {"index": i, "alias": "adv-stolen"}},
                {"add": {"index": PRIVATE, "alias": "adv-stolen"}},
                {"add": {"index": INDEX_A, "alias": "adv-x", "filter": {"match_all": {}}}},
                {"remove": {"index": INDEX_A, "alias": ALIAS_A}},
                {"remove": {"index": "*", "alias": "*"}},
                {"unknown": {}},
            ]
        )
        return "POST", "/_aliases", encode_body(c, {"actions": [action]})
    if kind == "alias_path":
        return c.choice(["PUT", "DELETE", "POST"]), f"/{i}/_alias/adv-stolen", None
    return "POST", f"/{i}/_{kind}", None


def _contexts(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    sid = c.choice(["abc", "", "FGluY2x1ZGVfY29udGV4dF91dWlk", "_all", "%2F"])
    kind = c.choice(["scroll", "clear", "clear_all", "pit_open", "pit_close"])
    if kind == "scroll":
        return (
            c.choice(["GET", "POST"]),
            c.choice([f"/_search/scroll/{sid}", f"/_search/scroll?scroll_id={sid}", "/_search/scroll"]),
            _json_or_none(c, {"scroll": "1m", "scroll_id": sid}),
        )
    if kind == "clear":
        return "DELETE", "/_search/scroll", encode_body(c, {"scroll_id": [sid]})
    if kind == "clear_all":
        return "DELETE", c.choice(["/_search/scroll/_all", f"/_search/scroll/{sid}"]), None
    if kind == "pit_open":
        return "POST", f"/{index_expression(c)}/_pit?keep_alive=1m", None
    return "DELETE", "/_pit", encode_body(c, {"id": sid})


def _cluster(c: Chooser, ids: Sequence[str]) -> tuple[str, str, Any]:
    where = c.choice(
        [
            "/",
            "/_cluster/health",
            "/_cluster/health/adv-*",
            "/_cluster/state",
            "/_cluster/settings",
            "/_nodes",
            "/_cat/indices",
            "/_cat/aliases",
            "/_tasks",
            "/_resolve/index/*",
            "/_resolve/index/adv-*",
            "/_security/_authenticate",
            "/_security/api_key",
            "/_security/api_key?owner=false",
            "/_security/user",
            "/_security/role/x",
            "/_security/privilege",
            "/_security/user/_has_privileges",
            "/_license",
            "/_xpack",
            "/_ilm/policy",
            "/_index_template/x",
            "/_snapshot",
            "/_scripts/x",
            "/_ingest/pipeline/x",
            "/_nope",
            "/_nope/x/y/z",
            "//",
            "/%2e%2e/_search",
            "/_sql",
            "/_async_search",
            "/_eql/search",
            "/adv-a/_knn_search",
            "/adv-a/_rank_eval",
            "/adv-a/_search_shards",
        ]
    )
    method = c.choice(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS"])
    body: Any = None
    if method in ("POST", "PUT"):
        body = c.choice(
            [
                {"name": "stolen", "role_descriptors": {"r": {"indices": [{"names": ["*"], "privileges": ["all"]}]}}},
                {"ids": ["x"]},
                {"query": 'SELECT * FROM "zz-private"'},
                {"index_patterns": ["adv-*"], "template": {"settings": {}}},
                {"cluster": ["all"], "index": [{"names": ["*"], "privileges": ["read"]}]},
            ]
        )
    return method, where, encode_body(c, body) if body is not None else None


FAMILIES: dict[str, Family] = {
    "search": _search,
    "count": _count,
    "msearch": _msearch,
    "mget": _mget,
    "doc_read": _doc_read,
    "metadata": _metadata,
    "writes": _writes,
    "index_admin": _index_admin,
    "contexts": _contexts,
    "cluster": _cluster,
}
READ_FAMILIES = ("search", "count", "msearch", "mget", "doc_read", "metadata", "contexts", "cluster")
WRITE_FAMILIES = ("writes", "index_admin")

CONTENT_TYPES = [
    "application/json",
    "application/x-ndjson",
    "application/vnd.elasticsearch+json; compatible-with=8",
    "application/vnd.elasticsearch+x-ndjson; compatible-with=8",
    "application/vnd.elasticsearch+json; compatible-with=7",
    "text/plain",
    "application/yaml",
    "application/cbor",
    "application/smile",
    "application/json; charset=utf-16",
    "multipart/form-data; boundary=x",
    "",
]


def gzip_bomb(size: int = 64 * 1024 * 1024) -> bytes:
    """A small gzip stream that decompresses to ``size`` bytes of a JSON string's content."""
    head, tail = b'{"query":{"match":{"text":"', b'"}}}'
    zeros = b"a" * (1024 * 1024)
    out = gzip.compress(head, compresslevel=9)
    body = gzip.compress(b"".join([zeros] * (size // len(zeros))), compresslevel=9)
    return out + body + gzip.compress(tail)


_BOMB: bytes | None = None


def headers_and_body(c: Chooser, method: str, body: bytes | None) -> tuple[tuple[tuple[str, str], ...], bytes | None]:
    global _BOMB
    headers: list[tuple[str, str]] = []
    if body is not None or c.integer(0, 5) == 0:
        content_type = c.choice(CONTENT_TYPES)
        if content_type:
            headers.append(("Content-Type", content_type))
    if body is not None and c.integer(0, 7) == 0:
        headers.append(("Content-Encoding", c.choice(["gzip", "gzip", "deflate", "br", "gzip, gzip", "identity"])))
        shape = c.choice(["valid", "valid", "invalid", "double", "bomb"])
        if shape == "valid":
            body = gzip.compress(body)
        elif shape == "invalid":
            body = b"\x1f\x8b\x08\x00garbage" + body[:20]
        elif shape == "double":
            body = gzip.compress(gzip.compress(body))
        else:
            if _BOMB is None:
                _BOMB = gzip_bomb(8 * 1024 * 1024)
            body = _BOMB
    if c.integer(0, 7) == 0:
        headers.append(("X-HTTP-Method-Override", c.choice(["DELETE", "PUT", "POST", "GET"])))
    if c.integer(0, 7) == 0:
        headers.append(("X-Opaque-Id", c.choice(["adv", "a\tb", "x" * 300])))
    if c.integer(0, 15) == 0:
        headers.append(("Accept", c.choice(["application/yaml", "application/cbor", "text/plain", "*/*"])))
    return tuple(headers), body


def attack_request(c: Chooser, hidden_ids: Sequence[str], families: Sequence[str] | None = None) -> RawRequest:
    family = c.choice(list(families or FAMILIES))
    method, path, body = FAMILIES[family](c, hidden_ids)
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    if getattr(c, "plain", False):  # no extra parameters or headers: reach the handlers behind the parsers
        return RawRequest(method, path, (("Content-Type", "application/json"),) if body else (), body, family)
    qs = query_string(c)
    if qs:
        path += ("&" + qs[1:]) if "?" in path else qs
    headers, body = headers_and_body(c, method, body)
    return RawRequest(method, path, headers, body, family)
