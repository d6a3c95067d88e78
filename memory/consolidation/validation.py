"""Validation of the LLM's answer: every item checked (ids this run showed the model, episodes of this run
cited, confidence floor, the guards — secrets, instruction-like text, exfiltration — harsh needs high
confidence), duplicates become confirmations, what the person rejected or already reviews is left out,
and the mass-change guard that sends a plan to review."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from atlas_site.errors import ValidationFailed
from memory.elastic import queries, store
from memory.scope import SubjectScope
from memory.scoping import scopes_shared
from memory.selectors import proposal_hits
from memory.services.guards import exfiltration_like, injection_like, instruction_like, secret_kinds, secrets_redacted
from memory.services.prepare import steps_validate
from memory.services.proposal_keys import digest, normalised, proposal_key
from memory.services.review import rejected_keys
from memory.validation import FACT_TYPES
from tenants.models import MemorySubject

from .schema import ConsolidationInput

MAX_ITEMS_PER_KIND = 100
EXFILTRATION = "sends conversations or data to an outside address"


class PlanValidator:
    def __init__(self, data: ConsolidationInput, *, subject: MemorySubject, window_key: str) -> None:
        self.input = data
        self.subject = subject
        self.window_key = window_key
        self.episode_ids = {e["id"] for e in data.episodes}
        self.rejected: list[dict[str, Any]] = []
        self.superseded: set[str] = set()
        self.merge_scopes = subject.tenant.consolidation_merge_scopes

    def reject(self, kind: str, reason: str, text: str = "") -> None:
        self.rejected.append({"kind": kind, "reason": reason, "text": secrets_redacted(text)[:300]})

    def episodes_ok(self, kind: str, ids: list[str], text: str) -> list[str] | None:
        ids = list(dict.fromkeys(ids))
        if not ids:
            self.reject(kind, "cites no episode of this run", text)
            return None
        unknown = [i for i in ids if i not in self.episode_ids]
        if unknown:
            self.reject(kind, f"cites episode(s) not in this run: {', '.join(unknown[:5])}", text)
            return None
        return ids

    def scope_ok(self, kind: str, episodes: list[str], text: str) -> dict[str, Any] | None:
        """The scope what ``episodes`` say is distilled into: theirs when they share one; with several, what
        they have in common if the tenant merges scopes, else None (refused: one fact, one scope)."""
        scopes = [self.input.episode_scopes.get(e, {}) for e in episodes]
        if all(s == scopes[0] for s in scopes):
            return scopes[0]
        if self.merge_scopes:
            return scopes_shared(scopes)
        self.reject(kind, "cites episodes of different scopes (agent, app, run or metadata): not merged", text)
        return None

    def fact_ok(self, kind: str, fact: dict[str, Any]) -> dict[str, Any] | None:
        text = fact["text"].strip()
        if not text:
            self.reject(kind, "empty text")
            return None
        if fact["fact_type"] not in FACT_TYPES:
            self.reject(kind, f"unknown fact_type {fact['fact_type']!r}", text)
            return None
        confidence = fact["confidence"]
        if not 0 <= confidence <= 1:
            self.reject(kind, f"confidence {confidence} is not between 0 and 1", text)
            return None
        if confidence < settings.ATLAS_CONSOLIDATION_CONFIDENCE_FLOOR:
            self.reject(
                kind, f"confidence {confidence} below the floor {settings.ATLAS_CONSOLIDATION_CONFIDENCE_FLOOR}", text
            )
            return None
        secrets = secret_kinds(text)
        if secrets:
            self.reject(kind, f"contains a secret ({', '.join(secrets)})", text)
            return None
        if injection_like(text):
            self.reject(kind, "instruction-like text", text)
            return None
        if exfiltration_like(text):
            self.reject(kind, EXFILTRATION, text)
            return None
        episodes = self.episodes_ok(kind, fact["source_episodes"], text)
        scope = self.scope_ok(kind, episodes, text) if episodes is not None else None
        if scope is None:
            return None
        return {
            "text": text[:2000],
            "fact_type": fact["fact_type"],
            "confidence": round(float(confidence), 6),
            "source_episodes": episodes,
            **({"scope": scope} if scope else {}),
        }

    def same_scope(self, fact: dict[str, Any], fact_id: str) -> bool:
        """Whether a new fact may confirm a stored one: both of one scope (else it stays a fact of its own)."""
        return self.merge_scopes or fact.get("scope", {}) == self.input.facts[fact_id].get("scope", {})

    def steps_ok(
        self, kind: str, steps: list[dict[str, Any]], label: str, episodes: list[str]
    ) -> list[dict[str, Any]] | None:
        try:
            checked = steps_validate([{"instruction": s["instruction"], "tool": s.get("tool")} for s in steps])
        except ValidationFailed as err:
            self.reject(kind, f"invalid steps: {err.message}", label)
            return None
        everything = ".\n".join([label, *(s["instruction"] for s in checked)])  # one sentence a step
        secrets = secret_kinds(everything)
        if secrets:
            self.reject(kind, f"contains a secret ({', '.join(secrets)})", label)
            return None
        if instruction_like(everything):
            self.reject(kind, "instruction-like text in the playbook", label)
            return None
        if exfiltration_like(everything):
            self.reject(kind, EXFILTRATION, label)
            return None
        steering = [e for e in episodes if instruction_like(self.input.episode_texts.get(e, ""))]
        if steering:
            self.reject(kind, f"comes from instruction-like user turn(s): {', '.join(steering[:5])}", label)
            return None
        return checked

    def plan(self, answer: dict[str, Any], *, planned_at: str) -> dict[str, Any]:
        wk = self.window_key
        plan: dict[str, Any] = {"window_key": wk, "planned_at": planned_at}
        plan["supersessions"] = self._supersessions(answer["supersessions"][:MAX_ITEMS_PER_KIND])
        facts, confirmations = self._facts(answer["facts"][:MAX_ITEMS_PER_KIND])
        plan["facts"] = facts
        plan["confirmations"] = self._confirmations(answer["confirmations"][:MAX_ITEMS_PER_KIND], confirmations)
        plan["playbooks"] = self._playbooks(answer["playbooks"][:MAX_ITEMS_PER_KIND])
        plan["refinements"] = self._refinements(answer["refinements"][:MAX_ITEMS_PER_KIND])
        plan["outcomes"] = self._outcomes(answer["outcomes"][:MAX_ITEMS_PER_KIND])
        return self._not_refused(plan)

    def _not_refused(self, plan: dict[str, Any]) -> dict[str, Any]:
        """Drop what the person rejected before, and what already waits for their review (a proposal
        of an earlier run): proposing it again would only ask the same question twice."""
        refused = rejected_keys(subject=self.subject)
        waiting = {proposal_key(h["_source"]["memory_type"], h["_source"]) for h in proposal_hits(subject=self.subject)}
        for kind, memory_type, label in (
            ("facts", "semantic", "fact"),
            ("supersessions", "semantic", "supersession"),
            ("playbooks", "procedural", "playbook"),
        ):
            kept = []
            for item in plan[kind]:
                key = proposal_key(memory_type, item)
                text = item.get("text") or item.get("name") or ""
                if key in refused:
                    self.reject(label, "the person rejected this proposal before", text)
                elif key in waiting:
                    self.reject(label, "the same proposal already waits for the person's review", text)
                else:
                    kept.append(item)
            plan[kind] = kept
        return plan

    def _supersessions(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for item in items:
            text = item["fact"]["text"]
            targets = list(dict.fromkeys(item["target_fact_ids"]))
            unknown = [t for t in targets if t not in self.input.facts]
            if not targets or unknown:
                self.reject(
                    "supersession", f"names fact(s) this run was not shown: {', '.join(unknown[:5]) or 'none'}", text
                )
                continue
            twice = [t for t in targets if t in self.superseded]
            if twice:
                self.reject("supersession", f"supersedes {', '.join(twice)} a second time in this run", text)
                continue
            fact = self.fact_ok("supersession", item["fact"])
            if fact is None:
                continue
            harsh = item["contradiction"] == "harsh"
            if harsh and fact["confidence"] < settings.ATLAS_CONSOLIDATION_HARSH_MIN_CONFIDENCE:
                self.reject(
                    "supersession",
                    f"harsh supersession with confidence {fact['confidence']} below "
                    f"{settings.ATLAS_CONSOLIDATION_HARSH_MIN_CONFIDENCE}",
                    text,
                )
                continue
            self.superseded.update(targets)
            out.append(
                {
                    "key": f"{self.window_key}:supersede:{digest(fact['text'])}",
                    "targets": targets,
                    "target_texts": [self.input.facts[t]["text"] for t in targets],
                    "contradiction": item["contradiction"],
                    **fact,
                }
            )
        return out

    def _facts(self, items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """New facts, and the ones that say what an existing fact says (→ confirmations)."""
        accepted: dict[str, dict[str, Any]] = {}
        confirmations: list[dict[str, Any]] = []
        existing = {normalised(f["text"]): fid for fid, f in self.input.facts.items() if fid not in self.superseded}
        for item in items:
            fact = self.fact_ok("fact", item)
            if fact is None:
                continue
            norm = normalised(fact["text"])
            if norm in existing and self.same_scope(fact, existing[norm]):
                confirmations.append(
                    {"fact_id": existing[norm], "source_episodes": fact["source_episodes"], "why": "same text"}
                )
                continue
            norm += scope_mark(fact.get("scope", {}))  # the same words from two scopes are two facts (unless merged)
            if norm in accepted:  # the model said it twice: one fact, both sources
                merged = accepted[norm]
                merged["source_episodes"] = list(dict.fromkeys(merged["source_episodes"] + fact["source_episodes"]))
                merged["confidence"] = max(merged["confidence"], fact["confidence"])
                continue
            accepted[norm] = {
                "key": f"{self.window_key}:fact:{digest(fact['text'] + scope_mark(fact.get('scope', {})))}",
                **fact,
            }
        facts = list(accepted.values())
        near = _near_duplicates(
            subject=self.subject,
            new=[f["text"] for f in facts],
            existing=[fid for fid in self.input.facts if fid not in self.superseded],
        )
        kept = []
        for fact, match in zip(facts, near, strict=True):
            if match is None or not self.same_scope(fact, match[0]):
                kept.append(fact)
            else:
                fid, similarity = match
                confirmations.append(
                    {"fact_id": fid, "source_episodes": fact["source_episodes"], "why": f"similarity {similarity:.3f}"}
                )
        return kept, confirmations

    def _confirmations(self, items: list[dict[str, Any]], derived: list[dict[str, Any]]) -> list[dict[str, Any]]:
        by_fact: dict[str, dict[str, Any]] = {}
        for item in [*items, *derived]:
            fid = item["fact_id"]
            if fid not in self.input.facts:
                self.reject("confirmation", f"names a fact this run was not shown: {fid}")
                continue
            if fid in self.superseded:
                self.reject("confirmation", f"confirms {fid}, which this run supersedes", self.input.facts[fid]["text"])
                continue
            episodes = self.episodes_ok("confirmation", item["source_episodes"], self.input.facts[fid]["text"])
            if episodes is None:
                continue
            if fid in by_fact:
                by_fact[fid]["source_episodes"] = list(dict.fromkeys(by_fact[fid]["source_episodes"] + episodes))
                continue
            fact = self.input.facts[fid]
            by_fact[fid] = {
                "fact_id": fid,
                "text": fact["text"],
                "from_confidence": fact.get("confidence"),
                "source_episodes": episodes,
                **({"why": item["why"]} if "why" in item else {}),
            }
        return list(by_fact.values())

    def _playbooks(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for item in items:
            label = f"{item['name']}: {item['trigger_text']}"
            if item["confidence"] < settings.ATLAS_CONSOLIDATION_CONFIDENCE_FLOOR:
                self.reject("playbook", f"confidence {item['confidence']} below the floor", label)
                continue
            episodes = self.episodes_ok("playbook", item["source_episodes"], label)
            scope = self.scope_ok("playbook", episodes, label) if episodes is not None else None
            if scope is None:
                continue
            if not item["name"].strip() or not item["trigger_text"].strip():
                self.reject("playbook", "a playbook needs a name and a trigger", label)
                continue
            steps = self.steps_ok("playbook", item["steps"], f"{label} {item['description']}", episodes)
            if steps is None:
                continue
            key = f"{self.window_key}:playbook:{digest(item['name'] + ' ' + item['trigger_text'] + scope_mark(scope))}"
            out.setdefault(
                key,
                {
                    "key": key,
                    "name": item["name"].strip()[:300],
                    "trigger_text": item["trigger_text"].strip()[:2000],
                    "description": item["description"].strip()[:2000],
                    "steps": steps,
                    "source_episodes": episodes,
                    **({"scope": scope} if scope else {}),
                },
            )
        return list(out.values())

    def _refinements(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for item in items:
            pid = item["playbook_id"]
            playbook = self.input.playbooks.get(pid)
            if playbook is None:
                self.reject("refinement", f"names a playbook this run was not shown: {pid}")
                continue
            if pid in out:
                self.reject("refinement", f"refines {pid} a second time in this run", playbook["name"] or "")
                continue
            episodes = self.episodes_ok("refinement", item["source_episodes"], playbook["name"] or "")
            if episodes is None:
                continue
            steps = self.steps_ok("refinement", item["steps"], playbook["name"] or "", episodes)
            if steps is None:
                continue
            out[pid] = {
                "playbook_id": pid,
                "name": playbook["name"],
                "version": playbook.get("version"),
                "old_steps": playbook["steps"],
                "steps": steps,
                "source_episodes": episodes,
            }
        return list(out.values())

    def _outcomes(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for item in items:
            pid = item["playbook_id"]
            playbook = self.input.playbooks.get(pid)
            if playbook is None:
                self.reject("outcome", f"names a playbook this run was not shown: {pid}")
                continue
            episodes = self.episodes_ok("outcome", item["source_episodes"], playbook["name"] or "")
            if episodes is None:
                continue
            out.append(
                {"playbook_id": pid, "name": playbook["name"], "success": item["success"], "source_episodes": episodes}
            )
        return out


def scope_mark(scope: dict[str, Any]) -> str:
    """A scope's mark in an item's key (nothing for no scope: an unscoped item's key is what it always was)."""
    return "\n" + json.dumps(scope, sort_keys=True) if scope else ""


def _unit_bytes(hex_vector: str) -> list[float]:
    values = [b - 256 if b > 127 else b for b in bytes.fromhex(hex_vector)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


def _near_duplicates(*, subject: MemorySubject, new: list[str], existing: list[str]) -> list[tuple[str, float] | None]:
    """For each new text, the existing fact it nearly repeats (cosine of the main embedding at or above
    ATLAS_CONSOLIDATION_DUPLICATE_SIMILARITY), as stored vectors compare (byte-quantised, as recall's)."""
    if not new or not existing:
        return [None] * len(new)
    from memory.elastic.mappings import stored_vector
    from memory.inference.embeddings import embedding_provider

    scope = SubjectScope.of(subject)
    stored = store.memories_vectors(scope.reader(), ids=existing, memory_types=("semantic",))
    if not stored:
        return [None] * len(new)
    others = {fid: _unit_bytes(vector) for fid, vector in stored.items()}
    threshold = settings.ATLAS_CONSOLIDATION_DUPLICATE_SIMILARITY
    out: list[tuple[str, float] | None] = []
    for vector in embedding_provider().embed_documents(new):
        mine = _unit_bytes(stored_vector(vector))
        best = max(
            ((fid, sum(a * b for a, b in zip(mine, other, strict=True))) for fid, other in others.items()),
            key=lambda x: x[1],
        )
        out.append(best if best[1] >= threshold else None)
    return out


def mass_change_reason(plan: dict[str, Any], *, subject: MemorySubject) -> str | None:
    """Why the plan needs review, when it supersedes more than the allowed share of current facts."""
    targets = {t for s in plan["supersessions"] for t in s["targets"]}
    if len(targets) <= settings.ATLAS_CONSOLIDATION_MAX_CHANGE_FREE:
        return None
    scope = SubjectScope.of(subject)
    current = store.memories_count(
        scope.reader(),
        memory_types=("semantic",),
        query=queries.current_facts_query(filters=scope.read_filters(), user_id=scope.user_id),
    )
    share = settings.ATLAS_CONSOLIDATION_MAX_CHANGE_SHARE
    if len(targets) > share * current:
        return (
            f"the run would supersede {len(targets)} of the subject's {current} current facts, more than "
            f"{share:.0%} (ATLAS_CONSOLIDATION_MAX_CHANGE_SHARE): nothing was replaced"
        )
    return None
