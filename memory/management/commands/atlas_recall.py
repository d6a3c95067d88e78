"""atlas_recall --tenant SLUG --user ID "query" [--k N] [--json] — recall as one subject."""

from __future__ import annotations

import json

from memory.recall import memory_recall
from memory.recall.explain import expected_line, explain_line
from tenants.management.base import AtlasCommand
from tenants.selectors import subject_get, tenant_get


class Command(AtlasCommand):
    help = "Recall memories as one subject (with that subject's own key), for operators and debugging."

    def add_arguments(self, parser) -> None:
        parser.add_argument("query")
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--user", required=True, help="the subject's external id")
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument("--include-superseded", action="store_true")
        parser.add_argument("--as-of", help="ISO 8601 date-time: the facts that were valid then")
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
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, query: str, tenant: str, user: str, k: int, **options) -> None:
        subject = subject_get(tenant=tenant_get(slug=tenant), external_id=user)
        # An operator's look does not count as the agent using these memories.
        result = memory_recall(
            subject=subject,
            query=query,
            k=k,
            include_superseded=options["include_superseded"],
            as_of=options["as_of"],
            fold_evidence=options["fold_evidence"],
            explain=options["explain"],
            expect=options["expect"] or None,
        )
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
