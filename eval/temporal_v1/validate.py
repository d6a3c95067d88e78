"""Check eval/temporal_v1's two files without a server: python eval/temporal_v1/validate.py

memory/portable/lines.py (the import) needs Django and Elasticsearch, so its field sets are read from its
source (COMMON_FIELDS, TYPE_FIELDS) rather than imported. Checked: every line is a JSON object with known
fields for its type; ids are unique; an episode is a user message in a session; a fact's sources are
earlier turns of its subject; a fact replaces an earlier fact of its subject, at most one successor each;
validity is consistent (valid_from < valid_to; a natural replacement starts when the replaced fact ends;
a harsh correction was never true, so the replaced fact has no end and the correction starts with it);
every query's gold ids are memories of its subject, and its ``now`` is after the subject's last turn.
"""

from __future__ import annotations

import ast
import json
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINES = HERE.parent.parent / "memory" / "portable" / "lines.py"
QUERY_FIELDS = {"qid", "user_id", "query", "gold_ids", "kind", "now"}
KINDS = {"when", "period", "before_after", "past_value", "current_value"}


def _constants() -> tuple[set[str], dict[str, set[str]]]:
    tree = ast.parse(LINES.read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("COMMON_FIELDS", "TYPE_FIELDS"):
                found[node.targets[0].id] = ast.literal_eval(node.value)
    return found["COMMON_FIELDS"], found["TYPE_FIELDS"]


def _at(text: str) -> datetime:
    if not isinstance(text, str) or not text.endswith("Z"):
        raise ValueError(f"not an ISO 8601 UTC time: {text!r}")
    return datetime.fromisoformat(text[:-1] + "+00:00")


def main() -> int:
    common, type_fields = _constants()
    errors: list[str] = []
    docs: dict[str, dict] = {}
    successors: Counter[str] = Counter()
    last_turn: dict[str, datetime] = {}
    for n, line in enumerate((HERE / "documents.jsonl").read_text(encoding="utf-8").splitlines(), start=1):
        d = json.loads(line)
        where = f"documents line {n} ({d.get('id')})"
        kind = d.get("memory_type")
        if kind not in type_fields:
            errors.append(f"{where}: memory_type {kind!r}")
            continue
        unknown = set(d) - common - type_fields[kind]
        if unknown:
            errors.append(f"{where}: unknown fields {sorted(unknown)}")
        for f in ("id", "user_id", "text", "timestamp"):
            if not d.get(f):
                errors.append(f"{where}: no {f}")
        if d["id"] in docs or not d["id"].startswith("tm-"):
            errors.append(f"{where}: id repeated or not tm-")
        at = _at(d["timestamp"])
        if kind == "episodic":
            if (d.get("role"), d.get("event_type")) != ("user", "message") or not d.get("session_id"):
                errors.append(f"{where}: not a user message in a session")
            last_turn[d["user_id"]] = max(at, last_turn.get(d["user_id"], at))
        elif kind == "semantic":
            for s in d.get("source_episodes", []):
                src = docs.get(s)
                if (
                    not src
                    or src["memory_type"] != "episodic"
                    or src["user_id"] != d["user_id"]
                    or _at(src["timestamp"]) > at
                ):
                    errors.append(f"{where}: source {s} is not an earlier turn of {d['user_id']}")
            if not d.get("source_episodes"):
                errors.append(f"{where}: no source_episodes")
            vf = _at(d["valid_from"]) if "valid_from" in d else None
            vt = _at(d["valid_to"]) if "valid_to" in d else None
            if vf and vt and vt <= vf:
                errors.append(f"{where}: valid_to before valid_from")
            if "supersedes" in d:
                if not isinstance(d["supersedes"], list) or len(d["supersedes"]) != 1:
                    errors.append(f"{where}: supersedes must be a list of one id")
                    continue
                (target,) = d["supersedes"]
                old = docs.get(target)
                successors[target] += 1
                how = d.get("contradiction")
                if not old or old["memory_type"] != "semantic" or old["user_id"] != d["user_id"]:
                    errors.append(f"{where}: supersedes {target}, not an earlier fact of the subject")
                elif how == "natural" and old.get("valid_to") != d.get("valid_from"):
                    errors.append(
                        f"{where}: natural replacement starts {d.get('valid_from')}, old ends {old.get('valid_to')}"
                    )
                elif how == "harsh" and ("valid_to" in old or old.get("valid_from") != d.get("valid_from")):
                    errors.append(f"{where}: harsh correction's validity differs from the corrected fact's")
                elif how not in ("natural", "harsh"):
                    errors.append(f"{where}: contradiction {how!r}")
            elif "contradiction" in d:
                errors.append(f"{where}: contradiction without supersedes")
        docs[d["id"]] = d
    for old, count in successors.items():
        if count > 1:
            errors.append(f"{old} is superseded {count} times")
    replaced = set(successors)
    for d in docs.values():
        if d["memory_type"] == "semantic" and d["id"] not in replaced and "valid_to" in d:
            errors.append(f"{d['id']}: ends (valid_to) but nothing replaces it")
        if d["id"] in replaced and "valid_to" not in d:
            nxt = [x for x in docs.values() if x.get("supersedes") == [d["id"]]][0]
            if nxt.get("contradiction") != "harsh":
                errors.append(f"{d['id']}: replaced naturally but has no valid_to")

    qids = set()
    kinds: Counter[str] = Counter()
    for n, line in enumerate((HERE / "queries.jsonl").read_text(encoding="utf-8").splitlines(), start=1):
        q = json.loads(line)
        where = f"queries line {n} ({q.get('qid')})"
        if set(q) != QUERY_FIELDS:
            errors.append(f"{where}: fields {sorted(q)}")
            continue
        if q["qid"] in qids:
            errors.append(f"{where}: qid repeated")
        qids.add(q["qid"])
        kinds[q["kind"]] += 1
        if q["kind"] not in KINDS or not q["gold_ids"]:
            errors.append(f"{where}: kind {q['kind']!r} or no gold")
        for g in q["gold_ids"]:
            if g not in docs or docs[g]["user_id"] != q["user_id"]:
                errors.append(f"{where}: gold {g} is not a memory of {q['user_id']}")
        if _at(q["now"]) <= last_turn.get(q["user_id"], _at(q["now"])):
            errors.append(f"{where}: now {q['now']} is not after {q['user_id']}'s last turn")
    types = Counter(d["memory_type"] for d in docs.values())
    print(f"{len(docs)} documents ({dict(types)}), {len(qids)} queries ({dict(kinds)})")
    for e in errors:
        print(" -", e)
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
