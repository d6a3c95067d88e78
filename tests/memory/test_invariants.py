"""The product's promises as invariants, checked after every step of random operation sequences
(Hypothesis ``RuleBasedStateMachine``) by several principals through the real interfaces: REST (live
server) with tokens of every scope, MCP (the official client), the dashboard as the person, the admin as
operators with and without the memory permissions, import, forgetting, and the tenant's review modes.

After every step: a person's memory changes only by the person, an operator with the memory
permissions, or the person's acceptance; no write deletes (every acknowledged memory not forgotten is
readable, and a fact's or turn's text never changes in place); a pending memory is never recalled nor
listed as current; every chain has one current version; provenance names the true author; no answer
is a 5xx. After every forget: the forgotten text is in no index, no database row, not in the SQLite
file read raw, and — within the engine's stated bound — in none of the engine's files. Once a run, a
backup taken mid-sequence is restored into a new site that answers every acknowledged memory as written
and holds none of the text forgotten before it. The usage ledger counts every acknowledged write and a write
past the daily quota stores nothing; every write, supersession and forget has one webhook event, none holding
a forgotten text (tests/memory/invariant_ledgers.py); consolidation asks each stage its own model.

``ATLAS_INVARIANT_STEPS`` sets the number of steps (CI: the default below; benchmarks/invariants.py
runs ≥ 5,000 and prints the table it writes to ``ATLAS_INVARIANT_REPORT``). A shrunk failure becomes an
ordinary regression test beside the others (tests/memory/api/test_write_gate_rest.py).
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings as django_settings
from django.db import connection, connections
from django.test import Client
from django.urls import reverse
from elasticsearch import helpers
from hypothesis import HealthCheck, Verbosity, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from embedded_es import EmbeddedElasticsearch
from memory.consolidation.run import consolidation_run
from memory.elastic.maintenance import cluster_admin_client
from memory.inference import embeddings
from memory.inference.embeddings import embedding_provider
from memory.portable import lines as importing
from memory.services import writes
from memory.services.backup import ENGINE_STATE, ES_DIR, SiteLayout, site_backup
from memory.services.restore import site_restore
from tenants import services, tokens
from tests.fake_llm import remembering
from tests.memory.dashboard.conftest import linked_person
from tests.memory.invariant_ledgers import Ledgers
from tests.memory.invariant_world import STATS, Api, Known, canary_new, known_of, stages_checked, world_opened
from tests.memory.mcp.conftest import call
from tests.memory.test_forget_canary import _cache_entries_holding, _rows_holding

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = int(os.environ.get("ATLAS_INVARIANT_STEPS", "120"))
STEPS_PER_RUN = 30
PROGRESS = bool(os.environ.get("ATLAS_INVARIANT_REPORT"))  # the benchmark's long runs say how far they are
#: The embedded engine's bound for forgotten text to leave its files (docs/embedded-elasticsearch.md).
ENGINE_FORGET_BOUND_S = 6.0
EXTERNAL_IDS = ("ext-a", "ext-b", "ext-c")
CORRECTIONS = ("natural", "harsh")
WORDS = ("tea", "jazz", "Lisbon", "cats", "chess", "rowing", "opera", "sushi")
AGENTS = ("planner", "coder")


def _machine(world: dict[str, Any]) -> type[RuleBasedStateMachine]:
    class Promises(Ledgers, RuleBasedStateMachine):
        @initialize()
        def start(self) -> None:
            slug = f"inv-{uuid.uuid4().hex[:8]}"
            self.tenant = services.tenant_create(slug=slug, name="Invariants", actor="test")
            self.subject = services.subject_create(tenant=self.tenant, external_id="alice", actor="test")
            self.person = linked_person(f"{slug}@example.org", self.subject)
            base = world["server"].url

            def token(name: str, scopes: str, **kw: Any) -> Api:
                secret = tokens.token_create(tenant=self.tenant, name=name, scopes=scopes, actor="t", **kw).secret
                return Api(base, secret, name)

            self.tokens = {
                "writer": token("writer", "read,write"),
                "both": token("both", "read,write,review"),
                "reviewer": token("reviewer", "read,review"),
                "forgetter": token("forgetter", "read,write,forget"),
                "personal": token("personal", "read,write", subject=self.subject, person=self.person),
            }
            self.dashboard = Client()
            self.dashboard.force_login(self.person)
            self.operators = {True: Client(), False: Client()}
            self.operators[True].force_login(world["operator"])
            self.operators[False].force_login(world["staff"])
            self.known: dict[str, Known] = {}
            self.forgotten: list[str] = []
            self.forgotten_ids: set[str] = set()  # forgotten, not written again: no memory may link to one
            self.backed_up = False
            self._ledgers_open(world)
            # The person's own facts, as an import of our export format carries them.
            for word in WORDS[:2]:
                self._person_fact(f"Alice's favourite is {word}")
            # And her own playbook: an agent's refined steps for it wait as a proposal.
            canary = canary_new()
            author = f"person:{self.person.pk}"
            stored = writes.playbook_write(
                subject=self.subject, name=f"morning {canary}", trigger_text="when I wake up", steps=["stretch"],
                authority="person", written_by=author,
            )  # fmt: skip
            self._admitted(refused=False, canary=canary)
            self._acknowledged(known_of(stored, canary, author))

        # ---------------------------------------------------------------------------------- helpers
        def _person_fact(self, text: str) -> None:
            canary = canary_new()
            stored = writes.fact_write(
                subject=self.subject, text=f"{text} {canary}", authority="person", written_by=f"person:{self.person.pk}"
            )
            self._admitted(refused=False, canary=canary)  # at the start: no quota yet
            self._acknowledged(
                Known(stored["id"], "semantic", stored["text"], canary, "person", f"person:{self.person.pk}")
            )

        def _learn(self, body: dict[str, Any], canary: str, author: str, *, announced: bool = True) -> Known:
            return self._acknowledged(known_of(body, canary, author), announced=announced)

        def _pick(self, data: Any, *, kind: str | None = None, pending: bool | None = None) -> Known | None:
            pool = [
                k
                for k in self.known.values()
                if (kind is None or k.type == kind) and (pending is None or k.pending == pending) and not k.replaced
            ]
            # In the order they were learnt (ids are random): a replayed sequence draws the same memories.
            return data.draw(st.sampled_from(pool)) if pool else None

        def _stored(self, memory_id: str) -> requests.Response:
            return self.tokens["reviewer"]("GET", f"subjects/alice/memories/{memory_id}")

        # -------------------------------------------------------------------------------- the rules
        @rule(
            who=st.sampled_from(["writer", "both", "personal"]),
            word=st.sampled_from(WORDS),
            external_id=st.sampled_from([None, *EXTERNAL_IDS]),
            keyed=st.booleans(),
            agent=st.sampled_from([None, *AGENTS]),
            retried=st.booleans(),
        )
        def agent_writes_a_fact(
            self, who: str, word: str, external_id: str | None, keyed: bool, agent: str | None, retried: bool
        ) -> None:
            STATS.operations["REST fact write"] += 1
            canary = canary_new()
            body: dict[str, Any] = {"text": f"Alice likes {word} {canary}"}
            if agent:  # scoped: forget_what_an_agent_wrote may take it
                body |= {"agent_id": agent, "metadata": {"word": word, "length": len(word)}}
            if external_id:
                body["external_id"] = external_id
            headers = {"Idempotency-Key": canary} if keyed else {}  # its stored answer holds the text too
            answer = self.tokens[who]("POST", "subjects/alice/facts", json=body, headers=headers)
            if answer.status_code == 409:
                assert external_id and answer.json()["errors"][0]["field"] == "external_id"
                return
            if not self._admitted(refused=self._refused_over_rest(answer), canary=canary):
                return
            assert answer.status_code in (201, 202), answer.text
            self._learn(answer.json(), canary, f"token:{who}")
            if retried and (keyed or external_id):  # after a lost answer: the same memory, counted and announced once
                STATS.operations["REST fact write retried"] += 1
                again = self.tokens[who]("POST", "subjects/alice/facts", json=body, headers=headers)
                assert again.status_code in (200, 201, 202) and again.json()["id"] == answer.json()["id"], again.text

        @rule(data=st.data(), word=st.sampled_from(WORDS))
        def agent_remembers_over_mcp(self, data: Any, word: str) -> None:
            STATS.operations["MCP remember"] += 1
            canary = canary_new()
            result = call(
                world["server"].url,
                self.tokens["writer"].secret,
                "remember",
                {"kind": "fact", "text": f"Alice plays {word} {canary}", "subject": "alice"},
            )
            code = result.structured_content["error"]["code"] if result.is_error else "ok"
            if not self._admitted(refused=code == "quota_exceeded", canary=canary):
                return
            assert not result.is_error, result.content[0].text
            self._learn(json.loads(result.content[0].text), canary, "token:writer")

        @rule(data=st.data(), who=st.sampled_from(["writer", "both", "personal"]))
        def agent_supersedes(self, data: Any, who: str) -> None:
            target = self._pick(data, kind="semantic")
            if target is None:
                return
            STATS.operations["REST supersede"] += 1
            canary = canary_new()
            body = {"text": f"Alice now prefers {canary}", "supersedes": [target.id]}
            answer = self.tokens[who]("POST", "subjects/alice/facts", json=body)
            if target.pending:
                assert answer.status_code == 409, answer.text
                return
            if not self._admitted(refused=self._refused_over_rest(answer), canary=canary):
                return
            assert answer.status_code in (201, 202), answer.text
            if target.authority == "person":  # an agent never replaces the person's fact
                assert answer.status_code == 202, answer.text
            new = self._learn(answer.json(), canary, f"token:{who}")
            if not new.pending:
                self._replaced(target, by=new.id)

        @rule(data=st.data(), who=st.sampled_from(["writer", "both", "personal"]))
        def agent_edits(self, data: Any, who: str) -> None:
            target = self._pick(data, kind="semantic", pending=False)
            if target is None:
                return
            STATS.operations["REST edit"] += 1
            stored = self._stored(target.id)
            etag, old_evidence = stored.headers["ETag"], stored.json().get("source_episodes") or []
            canary = canary_new()
            body: dict[str, Any] = {
                "text": f"Edited {canary}",
                "contradiction": data.draw(st.sampled_from(CORRECTIONS)),
            }
            turn = self._pick(data, kind="episodic")
            if turn is not None:  # the correction's own evidence (issue 34): kept beside what still holds
                body["source_episodes"] = [turn.id]
            answer = self.tokens[who](
                "PATCH", f"subjects/alice/facts/{target.id}", json=body, headers={"If-Match": etag}
            )
            if not self._admitted(refused=self._refused_over_rest(answer), canary=canary):
                return  # the old version stays current (the invariants read it)
            assert answer.status_code in (200, 202), answer.text
            if target.authority == "person":
                assert answer.status_code == 202, answer.text
            gone = {*self.forgotten_ids, "(forgotten)"}
            kept = [] if body["contradiction"] == "harsh" else [e for e in old_evidence if e not in gone]
            expected = list(dict.fromkeys([*kept, *body.get("source_episodes", [])]))
            assert (answer.json().get("source_episodes") or []) == expected, (body, old_evidence, answer.json())
            STATS.checks["a correction keeps the evidence that still holds"] += 1
            new = self._learn(answer.json(), canary, f"token:{who}")
            if not new.pending:
                self._replaced(target, by=new.id)

        @rule(data=st.data())
        def person_corrects_in_the_dashboard(self, data: Any) -> None:
            target = self._pick(data, kind="semantic", pending=False)
            if target is None:
                return
            STATS.operations["dashboard correction"] += 1
            etag = self._stored(target.id).headers["ETag"]
            canary = canary_new()
            answer = self.dashboard.post(f"/memory/{target.id}/", {"text": f"Really {canary}", "etag": etag})
            if not self._admitted(refused=answer.status_code == 429, canary=canary):
                return
            assert answer.status_code == 302, answer.content[:300]
            self._corrected(target, answer, f"Really {canary}", canary, "person", f"person:{self.person.pk}")

        @rule(data=st.data(), with_permission=st.booleans())
        def operator_corrects_in_the_admin(self, data: Any, with_permission: bool) -> None:
            target = self._pick(data, kind="semantic", pending=False)
            if target is None:
                return
            STATS.operations["admin correction"] += 1
            etag = self._stored(target.id).headers["ETag"]
            url = reverse("admin:tenants_memorysubject_memory", args=[self.subject.pk, target.id])
            canary = canary_new()
            answer = self.operators[with_permission].post(url, {"text": f"Operator {canary}", "etag": etag})
            if not with_permission:
                assert answer.status_code == 403
                return
            if not self._admitted(refused=answer.status_code == 429, canary=canary):
                return
            assert answer.status_code == 302, answer.content[:300]
            author = f"operator:{world['operator'].pk}"
            self._corrected(target, answer, f"Operator {canary}", canary, "operator", author)

        def _corrected(self, target: Known, answer: Any, text: str, canary: str, authority: str, author: str) -> None:
            """A correction in a form (its redirect names the new version): in the scope of what it corrects."""
            new_id = answer["Location"].strip("/").split("/")[-1]
            self._acknowledged(Known(new_id, "semantic", text, canary, authority, author, agent=target.agent))
            self._replaced(target, by=new_id)

        @rule(
            data=st.data(),
            who=st.sampled_from(["reviewer", "both", "personal", "writer", "person", "reviewer over MCP"]),
            decision=st.sampled_from(["accept", "reject"]),
            stale=st.booleans(),
        )
        def someone_decides_a_proposal(self, data: Any, who: str, decision: str, stale: bool) -> None:
            proposal = self._pick(data, pending=True)
            if proposal is None:
                return
            STATS.operations[f"decide ({who})"] += 1
            listed = self.tokens["reviewer"]("GET", "subjects/alice/proposals").json()["proposals"]
            shown = next(p for p in listed if p["id"] == proposal.id)
            version = '"stale"' if stale else shown["version"]
            replaces_person = any(r.get("authority") == "person" for r in shown.get("replaces") or [])
            if who == "person":
                answer = self.dashboard.post(f"/review/{proposal.id}/{decision}/", {"version": version})
                assert answer.status_code == 302
            elif who == "reviewer over MCP":
                arguments = {"proposal_id": proposal.id, "decision": decision, "version": version, "subject": "alice"}
                result = call(world["server"].url, self.tokens["reviewer"].secret, "review_proposal", arguments)
                code = result.structured_content["error"]["code"] if result.is_error else "ok"
                if replaces_person:
                    assert code == "forbidden", result.content[0].text
                elif stale:
                    assert code == "conflict", result.content[0].text
                else:
                    assert code in ("ok", "conflict"), result.content[0].text
                self._follow_decision(proposal, shown, decision, expect_pending=code != "ok")
                return
            else:
                answer = self.tokens[who](
                    "POST", f"subjects/alice/proposals/{proposal.id}/{decision}", json={"version": version}
                )
                own = proposal.author == f"token:{who}"
                allowed = who in ("reviewer", "both") and not own and not replaces_person
                if not allowed:  # no review scope, its own proposal, or the person's fact: refused
                    assert answer.status_code == 403, (who, own, answer.text)
                elif stale:
                    assert answer.status_code == 409, answer.text
                else:
                    assert answer.status_code in (200, 409), answer.text
            self._follow_decision(proposal, shown, decision, expect_pending=stale or answer.status_code >= 400)

        def _follow_decision(self, proposal: Known, shown: dict[str, Any], decision: str, expect_pending: bool) -> None:
            """The model follows what the store says the decision did — and checks it was allowed to."""
            after = self._stored(proposal.id)
            if after.status_code == 404:  # rejected, or refined steps merged into their playbook
                assert not expect_pending
                del self.known[proposal.id]
                merged = [t for t in shown.get("proposal_for") or [] if t in self.known]
                if decision == "accept" and proposal.type == "procedural" and merged:
                    target = self.known[merged[0]]
                    target.steps, target.author, target.authority = proposal.steps, proposal.author, proposal.authority
                return
            if after.json()["status"] == "pending":
                return  # refused or stale: nothing changed
            assert decision == "accept" and not expect_pending, (decision, after.json())
            proposal.pending = False
            for target in shown.get("proposal_for") or []:
                if target in self.known and proposal.type == "semantic":
                    self._replaced(self.known[target], by=proposal.id)

        @rule(who=st.sampled_from(["writer", "both"]), external_id=st.sampled_from([None, *EXTERNAL_IDS]))
        def agent_writes_a_playbook(self, who: str, external_id: str | None) -> None:
            STATS.operations["REST playbook write"] += 1
            canary = canary_new()
            body = {"name": f"routine {canary}", "trigger_text": "when it rains", "steps": ["take an umbrella"]}
            if external_id:
                body["external_id"] = f"pb-{external_id}"
            answer = self.tokens[who]("POST", "subjects/alice/playbooks", json=body)
            if answer.status_code == 409:
                assert external_id is not None
                return
            if not self._admitted(refused=self._refused_over_rest(answer), canary=canary):
                return
            assert answer.status_code in (201, 202), answer.text
            self._learn(answer.json(), canary, f"token:{who}")

        @rule(data=st.data(), who=st.sampled_from(["writer", "both"]), success=st.booleans())
        def agent_refines_a_playbook(self, data: Any, who: str, success: bool) -> None:
            target = self._pick(data, kind="procedural", pending=False)
            if target is None:
                return
            STATS.operations["REST outcome with refined steps"] += 1
            steps = [f"check the forecast {canary_new()}"]
            answer = self.tokens[who](
                "POST",
                f"subjects/alice/playbooks/{target.id}/outcome",
                json={"success": success, "refined_steps": steps},
            )
            if answer.status_code in (202, 429):  # a proposal of the steps: a new memory, under the quota
                if not self._admitted(refused=self._refused_over_rest(answer), canary=steps[0].split()[-1]):
                    return
            assert answer.status_code in (200, 202), answer.text
            body = answer.json()
            if answer.status_code == 202:
                assert body["proposal_for"] == [target.id]
                self._learn(body, target.canary, f"token:{who}").steps = steps
                return
            assert target.authority != "person"
            target.steps, target.author = steps, f"token:{who}"

        @rule(word=st.sampled_from(WORDS), external_id=st.sampled_from([None, *EXTERNAL_IDS]), person=st.booleans())
        def operator_imports_a_line(self, word: str, external_id: str | None, person: bool) -> None:
            STATS.operations["import"] += 1
            canary = canary_new()
            line = {"subject": "alice", "type": "semantic", "text": f"Imported {word} {canary}"}
            if external_id:
                line["id"] = f"imp-{external_id}"
            report = importing.memories_import(
                tenant=self.tenant,
                lines=[json.dumps(line)],
                create_subjects=False,
                actor="ops",
                authority="person" if person else "import",
            )
            if report.errors:
                assert external_id and "already stored" in report.errors[0][1]
                return
            if not external_id:  # a line without an id: find it by its canary
                listed = self.tokens["reviewer"](
                    "GET", "subjects/alice/memories", params={"types": "semantic", "page_size": 200}
                )
                body = next(m for m in listed.json()["memories"] if canary in m["text"])
            else:
                body = self._stored(line["id"]).json()
            self._learn(body, canary, "import:ops", announced=False)  # neither counted nor announced

        @rule(word=st.sampled_from(WORDS))
        def user_says_something(self, word: str) -> None:
            STATS.operations["REST episode"] += 1
            canary = canary_new()
            answer = self.tokens["writer"](
                "POST",
                "subjects/alice/episodes",
                json={"text": f"remember: Alice enjoys {word} {canary}", "session_id": "s"},
            )
            if not self._admitted(refused=self._refused_over_rest(answer), canary=canary):
                return
            assert answer.status_code == 201, answer.text
            self._learn(answer.json(), canary, "")

        @rule()
        def nightly_consolidation(self) -> None:
            """The nightly run with the fake LLM: a fact per new turn; what it wrote speaks for the run."""
            STATS.operations["consolidation (fake LLM)"] += 1
            world["llm"].script(remembering)
            asked = len(world["llm"].requests)
            outcome = consolidation_run(subject=self.subject)
            assert outcome.status in ("done", "skipped", "needs_review"), (outcome.status, outcome.error)
            stages_checked(world["llm"].requests[asked:], outcome)
            for memory_id, stored in self._all_stored().items():
                if memory_id in self.known or stored["type"] not in ("semantic", "procedural"):
                    continue
                assert stored["authority"] == "consolidation" and stored["written_by"].startswith("run:"), stored
                canary = next((w for w in stored["text"].split() if w.startswith("zq")), "")
                self._learn(stored, canary, stored["written_by"])

        @precondition(
            lambda self: connection.vendor == "sqlite" and world["data_dir"] is not None and not self.backed_up
        )
        @rule()
        def operator_backs_up(self) -> None:
            """A backup taken while the machine runs holds every memory acknowledged before it (once a run:
            it blocks writes for a second)."""
            STATS.operations["backup"] += 1
            self.backed_up = True
            layout = SiteLayout(
                data_dir=world["tmp"] / uuid.uuid4().hex,
                database=Path(connection.settings_dict["NAME"]),
                es_data_dir=world["data_dir"],
            )
            report = site_backup(destination=world["tmp"] / f"backup-{uuid.uuid4().hex[:8]}", layout=layout)
            saved = (report.destination / ES_DIR / ENGINE_STATE).read_bytes()
            missing = [k.id for k in self.known.values() if k.id.encode() not in saved]
            assert missing == [], missing
            STATS.checks["a backup holds every acknowledged memory"] += 1
            self._restore_holds(report)

        def _restore_holds(self, report: Any) -> None:
            """The backup restores (site_restore checks the engine's counts against the manifest) into a
            site that answers every acknowledged memory with the text, author and review state it had,
            and holds none of the text forgotten before the backup."""
            STATS.operations["restore"] += 1
            target = world["tmp"] / f"restored-{uuid.uuid4().hex[:8]}"
            layout = SiteLayout(data_dir=target, database=target / "atlas.sqlite3", es_data_dir=target / "es")
            restored = site_restore(source=report.destination, layout=layout)
            assert restored.documents == {name: index["docs"] for name, index in report.manifest["indices"].items()}
            for canary in self.forgotten:
                holding = [p for p in target.rglob("*") if p.is_file() and canary.encode() in p.read_bytes()]
                assert holding == [], f"forgotten {canary} restored in {holding}"
            with EmbeddedElasticsearch(data_dir=layout.es_data_dir, password=uuid.uuid4().hex) as server:
                admin = cluster_admin_client(url=server.url, password=server.password)
                try:
                    found = admin.search(
                        index=f"{django_settings.ATLAS_ES_INDEX_PREFIX}-*",
                        query={"ids": {"values": [k.id for k in self.known.values()]}},
                        size=10_000,
                    )["hits"]["hits"]
                finally:
                    admin.close()
            sources = {hit["_id"]: hit["_source"] for hit in found}
            for known in self.known.values():
                source = sources.get(known.id)
                assert source is not None, f"{known} not restored"
                if known.type in ("semantic", "episodic"):
                    assert source["text"] == known.text, (known, source)
                if known.type in ("semantic", "procedural"):
                    assert source["authority"] == known.authority and source["written_by"] == known.author, source
                    assert (source.get("review_state") == "pending") == known.pending, (known, source)
            STATS.checks["a restored backup answers every acknowledged memory as written"] += 1

        @precondition(lambda self: len(self.known) > 3)
        @rule(data=st.data())
        def forget_one(self, data: Any) -> None:
            # Half the time, when there is one, a memory a pending proposal names (what forgetting must
            # unlink or take with it): a uniform pick rarely lands there.
            named = {i for k in self.known.values() if k.pending for i in k.proposal_for}
            linked = [k for k in self.known.values() if k.id in named]
            target = data.draw(st.sampled_from(linked)) if linked and data.draw(st.booleans()) else self._pick(data)
            if target is None:
                return
            STATS.operations["forget"] += 1
            answer = self.tokens["forgetter"]("DELETE", f"subjects/alice/memories/{target.id}")
            assert answer.status_code == 200, answer.text
            taken = self._forget_known([target.id])
            assert sorted(set(answer.json()["receipt"]["indices"][target.type]["ids"])) == taken, answer.json()
            STATS.checks["forgetting a playbook takes the steps proposed for it"] += len(taken) - 1
            STATS.checks["forgetting what a proposal names unlinks it"] += target.id in named

        def _forget_known(self, ids: list[str]) -> list[str]:
            """The model forgets ``ids`` and what goes with them — a playbook's pending steps proposals (its
            next version: its name and trigger) — and drops them from the proposals naming them; each
            canary no memory holds any more is then looked for in every store. The ids gone, sorted."""
            playbooks = {i for i in ids if self.known[i].type == "procedural"}
            steps = [k.id for k in self.known.values() if k.pending and playbooks & set(k.proposal_for)]
            taken = sorted({*ids, *steps})
            gone = [self.known.pop(memory_id) for memory_id in taken]
            for known in self.known.values():
                known.proposal_for = [i for i in known.proposal_for if i not in taken]
            self.forgotten_ids.update(taken)
            self._forgotten_ids(taken)
            for canary in dict.fromkeys(k.canary for k in gone):
                if canary and not any(k.canary == canary for k in self.known.values()):
                    self.forgotten.append(canary)
                    self._forgotten_nowhere(canary)
            return taken

        @rule(who=st.sampled_from(["writer", "personal"]), agent=st.sampled_from(AGENTS), word=st.sampled_from(WORDS))
        def agent_writes_a_scoped_memory(self, who: str, agent: str, word: str) -> None:
            """A turn or a fact one agent wrote, with metadata (what forget_what_an_agent_wrote takes)."""
            STATS.operations["REST scoped write"] += 1
            canary = canary_new()
            route = "episodes" if len(word) % 2 else "facts"
            body = {"text": f"Alice mentioned {word} {canary}", "agent_id": agent, "metadata": {"word": word}}
            answer = self.tokens[who]("POST", f"subjects/alice/{route}", json=body)
            if not self._admitted(refused=self._refused_over_rest(answer), canary=canary):
                return
            assert answer.status_code in (201, 202), answer.text
            assert (answer.json()["agent_id"], answer.json()["metadata"]) == (agent, {"word": word})
            self._learn(answer.json(), canary, f"token:{who}" if route == "facts" else "")

        @rule(agent=st.sampled_from(AGENTS))
        def forget_what_an_agent_wrote(self, agent: str) -> None:
            """Forgetting by filter takes exactly the memories carrying that agent — every version, pending
            or not — and nothing else (docs/scoping.md)."""
            STATS.operations["forget by filter"] += 1
            body = {"confirm": "alice", "filters": {"agent_id": agent}}
            answer = self.tokens["forgetter"]("DELETE", "subjects/alice/memories", json=body)
            assert answer.status_code == 200, answer.text
            scoped = sorted(k.id for k in self.known.values() if k.agent == agent)
            expected = self._forget_known(scoped)
            assert sorted(answer.json()["ids"]) == expected, (agent, answer.json()["ids"], expected)
            STATS.checks["forgetting by filter takes that scope's memories only"] += 1

        # --------------------------------------------------------------------------- the invariants
        def _all_stored(self) -> dict[str, dict[str, Any]]:
            """Every memory of the subject as the API shows it: the lists (with replaced versions) and the
            review queue (pending ones are never listed among the memories)."""
            reader = self.tokens["reviewer"]
            params = [("types", t) for t in ("episodic", "semantic", "procedural")]
            listed = reader(
                "GET", "subjects/alice/memories", params=[*params, ("include_superseded", "true"), ("page_size", 200)]
            )
            proposals = reader("GET", "subjects/alice/proposals", params={"page_size": 200})
            stored = {m["id"]: m for m in listed.json()["memories"]}
            return stored | {p["id"]: p for p in proposals.json()["proposals"]}

        @invariant()
        def acknowledged_memories_stay_as_written(self) -> None:
            if not hasattr(self, "known"):
                return
            STATS.steps += 1
            if PROGRESS and STATS.steps % 100 == 0:
                print(f"invariants: {STATS.steps} of about {STEPS} steps checked", file=sys.stderr, flush=True)
            stored_all = self._all_stored()
            for known in list(self.known.values()):
                stored = stored_all.get(known.id)
                assert stored is not None, known  # no write deletes
                if known.type in ("semantic", "episodic"):
                    assert stored["text"] == known.text, (known, stored)  # never replaced in place
                if known.type == "procedural":
                    assert [s["instruction"] for s in stored["steps"]] == known.steps or not known.steps, (
                        known,
                        stored,
                    )
                if known.type in ("semantic", "procedural"):
                    assert stored["authority"] == known.authority, (known, stored)  # person stays person
                    assert stored.get("written_by") == known.author, (known, stored)  # the true author
                    assert (stored["status"] == "pending") == known.pending, (known, stored)
                if known.pending:  # what it would replace: never a forgotten id, which a new memory may reuse
                    assert (stored.get("proposal_for") or []) == known.proposal_for, (known, stored)
                # Its evidence names no forgotten turn: a later turn under the same external id is unrelated.
                assert not self.forgotten_ids & set(stored.get("source_episodes") or []), (known, stored)
            STATS.checks["acknowledged memories readable, unchanged, true author"] += 1

        @invariant()
        def pending_is_never_recalled_nor_listed(self) -> None:
            if not hasattr(self, "known"):
                return
            pending = {k.id for k in self.known.values() if k.pending}
            hits = self.tokens["reviewer"](
                "POST", "subjects/alice/recall", json={"query": "Alice likes " + " ".join(WORDS), "k": 50}
            )
            assert not pending & {h["id"] for h in hits.json()["hits"]}
            listed = self.tokens["reviewer"](
                "GET",
                "subjects/alice/memories",
                params=[("types", "semantic"), ("types", "procedural"), ("page_size", 200)],
            )
            assert not pending & {m["id"] for m in listed.json()["memories"]}
            STATS.checks["pending never recalled or listed"] += 1
            if STATS.steps % 5 == 0:  # the export (streamed, a whole subject): every fifth step
                lines = self.tokens["reviewer"]("GET", "subjects/alice/export").text.splitlines()[1:]
                exported = {r["id"]: r for r in map(json.loads, lines)}
                assert all(exported[i].get("review_state") == "pending" for i in pending if i in exported)
                assert pending <= set(exported), pending - set(exported)  # kept, marked as waiting
                STATS.checks["pending exported as pending, never as current"] += 1

        @invariant()
        def every_chain_has_one_current_version(self) -> None:
            if not hasattr(self, "known"):
                return
            listed = self.tokens["reviewer"](
                "GET",
                "subjects/alice/memories",
                params={"types": "semantic", "include_superseded": "true", "page_size": 200},
            ).json()["memories"]
            parent = {m["id"]: m["id"] for m in listed}

            def root(memory_id: str) -> str:
                while parent[memory_id] != memory_id:
                    memory_id = parent[memory_id]
                return memory_id

            for memory in listed:
                for older in memory.get("supersedes") or []:
                    if older in parent:
                        parent[root(older)] = root(memory["id"])
            # At most one: forgetting a chain's current version leaves its history with none.
            current = Counter(root(m["id"]) for m in listed if m["status"] == "current")
            assert all(n == 1 for n in current.values()), current
            STATS.checks["one current version per chain"] += 1
            # Links hold from both ends: a newer version lists what it replaced, or was forgotten — never an
            # id a later, unrelated memory took (the same external id derives a forgotten fact's id).
            by_id = {m["id"]: m for m in listed}
            for memory in listed:
                for newer in memory.get("superseded_by") or []:
                    if newer != "(forgotten)" and (newer in by_id or len(listed) < 200):  # one page is listed
                        assert memory["id"] in (by_id[newer].get("supersedes") or []), (memory, by_id.get(newer))
                assert not self.forgotten_ids & set(memory.get("supersedes") or []), memory
            STATS.checks["every link holds from both ends"] += 1

        def _forgotten_nowhere(self, canary: str) -> None:
            es = world["es"]
            tenant_docs = {"query": {"term": {"tenant_id": str(self.tenant.es_id)}}}
            for index in es.indices.get(index=f"{django_settings.ATLAS_ES_INDEX_PREFIX}-*"):
                for hit in helpers.scan(es, index=index, query=tenant_docs):
                    assert canary not in json.dumps(hit["_source"]), f"{canary} still in index {index} doc {hit['_id']}"

            assert _rows_holding(canary) == []
            for alias in connections:
                connections[alias].close()
            if connection.vendor == "sqlite":
                database = Path(connection.settings_dict["NAME"])
                if database.exists():
                    assert canary.encode() not in database.read_bytes(), "in the SQLite file"
            data_dir = world["data_dir"]
            deadline = time.monotonic() + ENGINE_FORGET_BOUND_S
            while data_dir is not None:
                holding = [p for p in data_dir.rglob("*") if p.is_file() and canary.encode() in p.read_bytes()]
                if not holding:
                    break
                assert time.monotonic() < deadline, f"{canary} still in engine files {holding}"
                time.sleep(0.25)
            assert _cache_entries_holding(canary.encode()) == [], "in Django's cache"
            for provider in (embedding_provider(), *embeddings._extra_providers.values()):
                assert not any(canary in text for text in list(provider.query_cache._entries)), provider.model_id
            assert not any(canary in line for line in world["log"]), "in the logs"
            STATS.checks["forgotten text in no store"] += 1

    return Promises


@pytest.fixture
def world(atlas_server, atlas_es, settings, db, tmp_path):
    with world_opened(atlas_server=atlas_server, atlas_es=atlas_es, settings=settings, tmp_path=tmp_path) as opened:
        yield opened


def test_the_promises_hold_under_random_sequences(world) -> None:
    machine = _machine(world)
    if os.environ.get("ATLAS_INVARIANT_SEED"):  # replay a run Hypothesis reported
        machine.TestCase = seed(int(os.environ["ATLAS_INVARIANT_SEED"]))(machine.TestCase)
    # Runs of up to STEPS_PER_RUN steps each (Hypothesis ends some earlier) until STEPS steps were checked.
    while STATS.steps < STEPS:
        remaining = STEPS - STATS.steps
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=max(1, -(-remaining // STEPS_PER_RUN)),
                stateful_step_count=STEPS_PER_RUN,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
                print_blob=True,
                # Every step as it runs (ATLAS_INVARIANT_PRINT_STEPS): a failure Hypothesis cannot replay
                # (timing) still leaves its sequence in the log.
                verbosity=Verbosity.debug if os.environ.get("ATLAS_INVARIANT_PRINT_STEPS") else Verbosity.normal,
            ),
        )
    report = os.environ.get("ATLAS_INVARIANT_REPORT")
    if report:
        Path(report).write_text(
            json.dumps(
                {
                    "steps": STATS.steps,
                    "operations": dict(STATS.operations),
                    "answers": {str(k): v for k, v in STATS.answers.items()},
                    "checks": dict(STATS.checks),
                }
            )
        )
    assert STATS.steps >= STEPS  # the machine ran and checked every step
