"""Compose eval/temporal_v1 from the hand-written pieces in content.py (seeded: the same files every run).

Usage: python eval/temporal_v1/generate.py   (writes documents.jsonl and queries.jsonl beside it, after the
self-check; prints a table of subjects and of query kinds)

Each subject's sessions are dated; a session's turns are its hand-written events with one to three
fillers (that subject's dateless small talk) put between them, a few minutes apart. Facts carry their
validity and cite the turns they come from; their timestamp (the recorded time) is that of the newest
turn cited. The self-check (any failure stops the run, nothing written):

- every event turn, resolved with ``memory.temporal.mentions_resolve`` against its own timestamp, names
  exactly the dates content.py says it means; a filler names none;
- every ``when`` question asks when (``question_range(...).asks_when``) and names no time;
- every ``period`` question's range (``question_range(query, now=...)``) is the one written beside it,
  and its gold is exactly the subject's turns with the question's tag of which a date falls in that range
  (a date the turn names, or its own day when it names none, meets the range and is no longer than it: a
  trip "in two weeks" that runs from 30 June into July falls in July, "in the summer" does not fall in
  "early July");
- every ``past_value`` question's range lies within its gold fact's validity, that fact was replaced, and
  no other fact of its chain was valid then; every ``current_value`` gold is the last of its chain and
  its question names no time; a ``before_after`` question names an event, not a date (no range);
- ``now`` is after the subject's last turn.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from content import SUBJECTS  # noqa: E402

from memory.temporal import mentions_resolve, question_range  # noqa: E402

SEED = 20261204
KINDS = ("when", "period", "before_after", "past_value", "current_value")


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _day(text: str) -> date:
    return date.fromisoformat(text[:10])


def _ranges(expect: str) -> list[tuple[date, date]]:
    """``2025-05-01..2025-05-31 + 2025-06-14`` → [(1 May, 31 May), (14 Jun, 14 Jun)]; ``-`` → []."""
    if expect.strip() == "-":
        return []
    out = []
    for part in expect.split("+"):
        start, _, end = part.strip().partition("..")
        out.append((_day(start), _day(end or start)))
    return out


def _show(rng: tuple[date | None, date | None] | None) -> str:
    if rng is None:
        return "-"
    return f"{rng[0] or '…'}..{rng[1] or '…'}"


def _falls_in(dates: tuple[date, date], rng: tuple[date, date]) -> bool:
    """A turn's date falls in a question's range: they meet, and the date is no longer than the range."""
    (s, e), (lo, hi) = dates, rng
    return s <= hi and e >= lo and (e - s) <= (hi - lo)


class Failures(list):
    def check(self, ok: bool, message: str) -> None:
        if not ok:
            self.append(message)


def _sessions(block: str) -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    sessions: list[tuple[str, list[tuple[str, str, str, str]]]] = []
    for raw in block.strip().splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("## "):
            sessions.append((line[3:].strip(), []))
            continue
        key, tags, expect, text = (p.strip() for p in line.split("|", 3))
        sessions[-1][1].append((key, tags, expect, text))
    return sessions


def compose(subject: dict, rnd: random.Random, failures: Failures) -> tuple[list[dict], list[dict]]:
    uid = subject["user_id"]
    docs: list[dict] = []
    turns: dict[str, dict] = {}  # event key -> document (with private _tags/_dates)
    fillers = list(subject["fillers"])
    last_at = None
    for n, (start, events) in enumerate(_sessions(subject["sessions"]), start=1):
        session_id = f"tm-{uid}-s{n:02d}"
        slots: list[tuple[str, str, str, str] | None] = list(events)
        for _ in range(rnd.randint(1, 3)):
            slots.insert(rnd.randint(0, len(slots)), None)
        at = _ts(start)
        for t, slot in enumerate(slots, start=1):
            doc = {
                "id": f"{session_id}-t{t:02d}",
                "user_id": uid,
                "memory_type": "episodic",
                "text": "",
                "timestamp": _iso(at),
                "role": "user",
                "event_type": "message",
                "session_id": session_id,
            }
            if slot is None:
                doc["text"] = rnd.choice(fillers)
                found = mentions_resolve(doc["text"], anchor=at)
                failures.check(not found, f"{uid} filler names a date: {doc['text']!r} → {[m.phrase for m in found]}")
            else:
                key, tags, expect, text = slot
                doc["text"] = text
                found = mentions_resolve(text, anchor=at)
                got = [(m.start, m.end) for m in found]
                want = _ranges(expect)
                failures.check(
                    got == want,
                    f"{uid}/{key} @ {doc['timestamp']} {text!r}: resolved "
                    f"{[(m.phrase, str(m.start), str(m.end)) for m in found]}, meant {expect}",
                )
                failures.check(key not in turns, f"{uid}/{key}: key used twice")
                turns[key] = doc
                doc["_tags"] = set(tags.split())
                doc["_dates"] = got or [(at.date(), at.date())]
            docs.append(doc)
            last_at = at
            at += timedelta(minutes=rnd.randint(2, 7), seconds=rnd.randint(0, 59))

    facts: dict[str, dict] = {}
    for raw in subject["facts"].strip().splitlines():
        if not raw.strip():
            continue
        key, fact_type, valid_from, valid_to, supersedes, contradiction, sources, text = (
            p.strip() for p in raw.split("|", 7)
        )
        source_ids = [turns[s]["id"] for s in sources.split(",") if s.strip() in turns]
        failures.check(len(source_ids) == len(sources.split(",")), f"{uid} fact {key}: unknown source in {sources}")
        doc = {
            "id": f"tm-{uid}-fact-{key}",
            "user_id": uid,
            "memory_type": "semantic",
            "text": text,
            "timestamp": max(turns[s.strip()]["timestamp"] for s in sources.split(",") if s.strip() in turns),
            "fact_type": fact_type,
            "confidence": 0.9,
            "source_episodes": source_ids,
        }
        if valid_from != "-":
            doc["valid_from"] = f"{valid_from}T00:00:00Z"
        if valid_to != "-":
            doc["valid_to"] = f"{valid_to}T00:00:00Z"
        if supersedes != "-":
            failures.check(supersedes in facts, f"{uid} fact {key}: supersedes unknown {supersedes}")
            doc["supersedes"] = [f"tm-{uid}-fact-{supersedes}"]
            doc["contradiction"] = contradiction
            doc["_prev"] = supersedes
        facts[key] = doc
        docs.append(doc)

    now = subject["now"]
    failures.check(_ts(now) > last_at, f"{uid}: now {now} is not after the last turn {last_at}")
    queries: list[dict] = []
    replaced = {f["_prev"] for f in facts.values() if "_prev" in f}

    def chain(key: str) -> list[str]:
        # every fact linked to key through supersedes, either way
        seen = {key}
        grew = True
        while grew:
            grew = False
            for k, f in facts.items():
                p = f.get("_prev")
                if p and (p in seen) != (k in seen):
                    seen |= {p, k}
                    grew = True
        return sorted(seen)

    for n, raw in enumerate(subject["queries"].strip().splitlines(), start=1):
        if not raw.strip():
            continue
        kind, gold, check, query = (p.strip() for p in raw.split("|", 3))
        failures.check(kind in KINDS, f"{uid} q{n}: unknown kind {kind}")
        qid = f"tmq-{uid}-{n:03d}"
        gold_keys = [g.strip() for g in gold.split(",")]
        gold_ids = []
        for g in gold_keys:
            if g in turns:
                gold_ids.append(turns[g]["id"])
            elif g in facts:
                gold_ids.append(facts[g]["id"])
            else:
                failures.append(f"{qid}: unknown gold {g}")
        qr = question_range(query, now=_ts(now))
        rng = (qr.start, qr.end) if qr and (qr.start or qr.end) else None
        if kind == "when":
            failures.check(bool(qr and qr.asks_when) and rng is None, f"{qid} {query!r}: not a bare when ({qr})")
        elif kind in ("period", "past_value"):
            want_range, _, tag = check.partition(" ")
            failures.check(_show(rng) == want_range, f"{qid} {query!r}: range {_show(rng)}, meant {want_range}")
            if kind == "period" and rng and rng[0] and rng[1]:
                met = {
                    k
                    for k, d in turns.items()
                    if (tag == "*" or tag in d["_tags"]) and any(_falls_in((s, e), rng) for s, e in d["_dates"])
                }
                failures.check(
                    met == set(gold_keys), f"{qid} {query!r}: turns in range {sorted(met)}, gold {gold_keys}"
                )
                others = {k for k, d in turns.items() if (tag == "*" or tag in d["_tags"])} - met
                failures.check(bool(others), f"{qid}: no look-alike with tag {tag} outside the range")
            if kind == "past_value" and rng:
                f = facts.get(gold_keys[0], {})
                lo = _day(f.get("valid_from", "0001-01-01"))
                hi = _day(f["valid_to"]) - timedelta(days=1) if "valid_to" in f else date.max
                failures.check(gold_keys[0] in replaced, f"{qid}: gold {gold_keys[0]} was never replaced")
                failures.check(
                    lo <= rng[0] and rng[1] <= hi, f"{qid}: {_show(rng)} not within {gold_keys[0]}'s validity"
                )
                for other in chain(gold_keys[0]):
                    if other == gold_keys[0]:
                        continue
                    o = facts[other]
                    if "valid_from" not in o:
                        continue
                    olo = _day(o["valid_from"])
                    ohi = _day(o["valid_to"]) - timedelta(days=1) if "valid_to" in o else date.max
                    failures.check(olo > rng[1] or ohi < rng[0], f"{qid}: {other} also valid in {_show(rng)}")
        elif kind == "current_value":
            failures.check(rng is None, f"{qid} {query!r}: names a time {_show(rng)}")
            for g in gold_keys:
                failures.check(g in facts and g not in replaced, f"{qid}: gold {g} is not a current fact")
                failures.check(g in facts and "_prev" in facts[g], f"{qid}: gold {g} replaced nothing")
        elif kind == "before_after":
            failures.check(rng is None, f"{qid} {query!r}: names a date {_show(rng)}, not an event")
        queries.append(
            {
                "qid": qid,
                "user_id": uid,
                "query": query,
                "gold_ids": gold_ids,
                "kind": kind,
                "now": now,
                "_range": _show(rng),
            }
        )
    return docs, queries


def main() -> int:
    rnd = random.Random(SEED)
    failures = Failures()
    documents: list[dict] = []
    queries: list[dict] = []
    rows = []
    for subject in SUBJECTS:
        docs, qs = compose(subject, rnd, failures)
        documents += docs
        queries += qs
        epi = [d for d in docs if d["memory_type"] == "episodic"]
        rows.append(
            (
                subject["user_id"],
                len(epi),
                len({d["session_id"] for d in epi}),
                len(docs) - len(epi),
                len(qs),
                f"{epi[0]['timestamp'][:10]} – {epi[-1]['timestamp'][:10]}",
                subject["now"],
            )
        )
    if "-v" in sys.argv:
        for q in queries:
            print(f"{q['qid']:<16} {q['kind']:<13} {q['_range']:<24} {q['query']}")
    if failures:
        print(f"{len(failures)} self-check failure(s), nothing written:")
        for f in failures:
            print(" -", f)
        return 1
    with open(HERE / "documents.jsonl", "w", encoding="utf-8") as out:
        for d in documents:
            out.write(json.dumps({k: v for k, v in d.items() if not k.startswith("_")}, ensure_ascii=False) + "\n")
    with open(HERE / "queries.jsonl", "w", encoding="utf-8") as out:
        for q in queries:
            out.write(json.dumps({k: v for k, v in q.items() if not k.startswith("_")}, ensure_ascii=False) + "\n")
    print("| subject | turns | sessions | facts | queries | turns' dates | now |")
    print("|---|---:|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| `{r[0]}` | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | {r[6]} |")
    kinds = Counter(q["kind"] for q in queries)
    print("\n| kind | queries |\n|---|---:|")
    for k in KINDS:
        print(f"| `{k}` | {kinds[k]} |")
    print(f"| **total** | **{len(queries)}** |")
    dated = sum(
        1
        for d in documents
        if d["memory_type"] == "episodic" and mentions_resolve(d["text"], anchor=_ts(d["timestamp"]))
    )
    print(f"\n{len(documents)} documents, {dated} turns name a date; {len(queries)} queries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
