"""atlas_recall --tenant SLUG --subject ID "query" [--types T,…] [--k N] [--json] — recall as one subject."""

from __future__ import annotations

import argparse
import json

from memory.recall import RECALL_TYPES, memory_recall
from memory.recall.explain import expected_line, explain_line
from memory.tasks import recall_usage_schedule
from memory.validation import memory_types_refusal
from tenants.management.base import AtlasCommand, subject_option, subject_required
from tenants.selectors import subject_get, tenant_get


def _types(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one memory type")
    refusal = memory_types_refusal(names, allowed=RECALL_TYPES)
    if refusal is not None:
        raise argparse.ArgumentTypeError(refusal)
    return list(dict.fromkeys(names))


class Command(AtlasCommand):
    help = "Recall memories as one subject (with that subject's own key), for operators and debugging."

    def add_arguments(self, parser) -> None:
        parser.add_argument("query")
        parser.add_argument("--tenant", required=True)
        subject_option(parser, help="the subject's external id (required)")
        parser.add_argument(
            "--types",
            type=_types,
            help=f"only these kinds of memory, comma-separated: {', '.join(RECALL_TYPES)} (the REST and MCP `types`)",
        )
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument("--include-superseded", action="store_true")
        parser.add_argument("--as-of", help="ISO 8601 date-time: what held then (valid time), as known now")
        parser.add_argument("--known-at", help="ISO 8601 date-time: what had been recorded by then (recorded time)")
        parser.add_argument(
            "--no-fold-evidence",
            dest="fold_evidence",
            action="store_false",
            help="list the turns a fact was learnt from as hits of their own, not under the fact",
        )
        parser.add_argument(
            "--explain", action="store_true", help="say why each hit ranked there: legs, fusion, multipliers, folds"
        )
        parser.add_argument(
            "--expect",
            action="append",
            default=[],
            metavar="ID",
            help="a memory you expected (repeatable): where it stood and what kept it out",
        )
        parser.add_argument(
            "--min-score",
            type=float,
            help="only hits scoring at least this, instead of the relevance floor (which may return fewer than k)",
        )
        parser.add_argument(
            "--filters",
            help='scope filters as JSON, e.g. \'{"agent_id": "planner", "metadata.priority": {"gte": 2}}\' (docs/scoping.md)',
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, query: str, tenant: str, subject: str | None, k: int, **options) -> None:
        subject = subject_get(tenant=tenant_get(slug=tenant), external_id=subject_required(subject))
        result = memory_recall(
            subject=subject,
            query=query,
            k=k,
            memory_types=options["types"],
            include_superseded=options["include_superseded"],
            as_of=options["as_of"],
            known_at=options["known_at"],
            fold_evidence=options["fold_evidence"],
            explain=options["explain"],
            expect=options["expect"] or None,
            min_score=options["min_score"],
            filters=options["filters"],
        )
        # The ledger counts it; an operator's look is not the agent using these memories (no use counts).
        recall_usage_schedule(subject=subject, targets=result.targets, agent_use=False)
        if options["json"]:
            shown = {"hits": result.hits, "legs": result.legs, "timings_ms": result.timings_ms}
            if result.explain is not None:
                shown["explain"] = result.explain
            self.stdout.write(json.dumps(shown, indent=2, default=str))
            return
        for hit in result.hits:
            label = hit.get("external_id") or hit["id"]
            text = (hit.get("text") or "").replace("\n", " ")
            self.stdout.write(f"{hit['rank']:>3}  {hit['score']:.4f}  {hit['type']:<10} {label:<24} {text[:100]}")
            for evidence in hit.get("evidence", []):
                said = evidence["text"].replace("\n", " ")
                self.stdout.write(f"{'':>13}evidence {evidence['timestamp'][:10]} {evidence['id']:<24} {said[:80]}")
            if "explain" in hit:
                self.stdout.write(f"{'':>13}why: {explain_line(hit['explain'])}")
        for entry in (result.explain or {}).get("expected", []):
            self.stdout.write(f"expected {entry['id']}: {expected_line(entry)}")
        timings = ", ".join(f"{name} {ms:.1f} ms" for name, ms in result.timings_ms.items())
        self.stdout.write(f"({len(result.hits)} hit(s); legs {', '.join(result.legs)}; {timings})")
