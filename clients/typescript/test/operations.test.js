// Every operation against the live server: what it sends, and the answer it gives back.
import assert from "node:assert/strict";
import { test } from "node:test";

import { NotFound, PreconditionFailed, ValidationError } from "../src/index.js";
import { all, client, fresh, refusal } from "./_live.js";

const atlas = client();

test("write, recall, get, edit, chain, forget", async () => {
  const subject = await fresh(atlas);
  const episode = await atlas.episodeWrite({ subject, text: "I moved to Lisbon last month", session_id: "s1" });
  assert.deepEqual([episode.type, episode.subject, episode.session_id], ["episodic", subject, "s1"]);
  assert.ok(!Number.isNaN(Date.parse(episode.created_at)));
  const fact = await atlas.factWrite({ subject, text: "Lives in Lisbon", fact_type: "identity", source_episodes: [episode.id] });
  assert.deepEqual([fact.type, fact.status, fact.authority, fact.fact_type], ["semantic", "current", "agent", "identity"]);

  const recalled = await atlas.recall({ subject, query: "where does the user live?", k: 3 });
  assert.deepEqual(recalled.hits.map((hit) => hit.rank), recalled.hits.map((_, i) => i + 1));
  const top = recalled.hits.find((hit) => hit.id === fact.id);
  assert.deepEqual([top.evidence.map((e) => e.id), top.evidence_count], [[episode.id], 1]);
  assert.ok(recalled.legs.includes("bm25") && recalled.took_ms > 0 && recalled.explain === undefined);

  const detail = await atlas.memoryGet({ subject, memory_id: fact.id });
  assert.ok(detail.etag);
  assert.deepEqual(detail.provenance.episodes.map((e) => e.id), [episode.id]);
  assert.equal(detail.provenance.written_by.kind, "token");
  const edited = await atlas.factEdit({ subject, memory_id: fact.id, text: "Lives in Porto", ifMatch: detail.etag });
  assert.deepEqual(edited.supersedes, [fact.id]);
  assert.ok(edited.etag);
  const chain = await atlas.memoryChain({ subject, memory_id: fact.id });
  assert.deepEqual(chain.chain.map((m) => m.id), [fact.id, edited.id]);

  const forgotten = await atlas.memoryForget({ subject, memory_id: episode.id });
  assert.deepEqual([forgotten.id, forgotten.type, forgotten.forgotten], [episode.id, "episodic", true]);
  assert.deepEqual(forgotten.receipt.indices.episodic.ids, [episode.id]);
  const missing = await refusal(atlas.memoryGet({ subject, memory_id: episode.id }));
  assert.ok(missing instanceof NotFound);
  assert.deepEqual([missing.status, missing.code], [404, "not_found"]);
});

test("turn answers the episode and the hits", async () => {
  const subject = await fresh(atlas);
  const fact = await atlas.factWrite({ subject, text: "Alice is allergic to peanuts", fact_type: "constraint" });
  const turn = await atlas.turn({ subject, text: "what snack can I eat, given my allergy to peanuts?", session_id: "s2" });
  assert.equal(turn.episode.type, "episodic");
  assert.ok(turn.episode.text.startsWith("what snack"));
  assert.equal(turn.hits, turn.recall.hits);
  assert.ok(turn.hits.some((hit) => hit.id === fact.id));
  assert.ok(!turn.hits.some((hit) => hit.id === turn.episode.id));
  const explained = await atlas.turn({ subject, text: "peanut allergy again", recall: { k: 1, explain: true } });
  assert.equal(explained.hits.length, 1);
  assert.ok(explained.hits[0].explain);
});

test("recall explains, and says what kept the expected memories out", async () => {
  const subject = await fresh(atlas);
  const kept = await atlas.factWrite({ subject, text: "Prefers window seats on trains", fact_type: "preference" });
  const other = await atlas.factWrite({ subject, text: "Owns a grey cat named Miso", external_id: "cat" });
  const explained = await atlas.recall({ subject, query: "train seats", explain: true, expect: ["cat"], types: ["semantic"] });
  assert.equal(explained.hits[0].id, kept.id);
  assert.ok(explained.hits[0].explain);
  assert.deepEqual(explained.explain.expected.map((entry) => entry.id), ["cat"]);
  assert.equal(other.external_id, "cat");
  const asFactType = await atlas.recall({ subject, query: "train seats", fact_type: "world" });
  assert.ok(!asFactType.hits.some((hit) => hit.id === kept.id));
});

test("a replaced fact: include_superseded, and the newest version named", async () => {
  const subject = await fresh(atlas);
  const first = await atlas.factWrite({ subject, text: "Drinks coffee" });
  const { etag } = await atlas.memoryGet({ subject, memory_id: first.id });
  const second = await atlas.factEdit({ subject, memory_id: first.id, text: "Drinks tea", ifMatch: etag });
  const stale = await refusal(atlas.factEdit({ subject, memory_id: first.id, text: "Drinks water", ifMatch: etag }));
  assert.ok(stale instanceof PreconditionFailed);
  assert.deepEqual([stale.status, stale.newest], [412, second.id]);
  const current = await atlas.memoryList({ subject, types: ["semantic"] });
  assert.deepEqual(current.memories.map((m) => m.text), ["Drinks tea"]);
  const everything = await atlas.memoryList({ subject, types: ["semantic"], include_superseded: true });
  assert.deepEqual(new Set(everything.memories.map((m) => m.id)), new Set([first.id, second.id]));
});

test("playbooks and their outcomes", async () => {
  const subject = await fresh(atlas);
  const playbook = await atlas.playbookWrite({
    subject,
    name: "router reset",
    trigger_text: "my internet is down",
    steps: ["unplug the router for 30 seconds", { instruction: "plug it back in" }],
  });
  assert.equal(playbook.type, "procedural");
  const outcome = await atlas.playbookOutcome({
    subject,
    memory_id: playbook.id,
    success: true,
    refined_steps: ["unplug it", "wait", "plug it in"],
  });
  assert.equal(outcome.id, playbook.id);
  assert.deepEqual(outcome.steps.map((s) => s.instruction), ["unplug it", "wait", "plug it in"]);
});

test("the catalog, and what the token is", async () => {
  const me = await atlas.me();
  assert.deepEqual([me.kind, me.subject, me.name, [...me.scopes].sort()], ["tenant", null, "svc", ["forget", "read", "write"]]);
  const entry = await atlas.catalogWrite({ title: "Return policy", text: "Returns within 30 days.", tags: ["policy"] });
  assert.ok(entry.shared);
  assert.equal(entry.type, "catalog");
  const got = await atlas.catalogGet({ entry_id: entry.id });
  assert.equal(got.text, "Returns within 30 days.");
  const edited = await atlas.catalogEdit({ entry_id: entry.id, text: "Returns within 60 days.", ifMatch: got.etag });
  assert.equal(edited.text, "Returns within 60 days.");
  assert.ok((await refusal(atlas.catalogEdit({ entry_id: entry.id, text: "x", ifMatch: got.etag }))) instanceof PreconditionFailed);
  assert.ok((await all(atlas.catalogListIter({ page_size: 1 }))).some((m) => m.id === entry.id));
  assert.equal((await atlas.catalogDelete({ entry_id: entry.id })).forgotten, true);
  assert.ok((await refusal(atlas.catalogGet({ entry_id: entry.id }))) instanceof NotFound);
});

test("the export streams the header, then each memory", async () => {
  const subject = await fresh(atlas);
  const fact = await atlas.factWrite({ subject, text: "Speaks Portuguese" });
  const lines = await all(atlas.memoryExport({ subject }));
  assert.deepEqual([lines[0].format, lines[0].version], ["atlas-memory-export", 1]);
  assert.deepEqual(lines.slice(1).map((line) => line.id), [fact.id]);
  assert.ok((await refusal(all(atlas.memoryExport({ subject: "nobody" })))) instanceof NotFound);
});

test("forgetting everything needs the confirmation", async () => {
  const subject = await fresh(atlas);
  await atlas.episodeWrite({ subject, text: "I like jazz" });
  const unconfirmed = await refusal(atlas.memoryForgetAll({ subject, confirm: "alice" }));
  assert.ok(unconfirmed instanceof ValidationError);
  assert.deepEqual(Object.keys(unconfirmed.fields), ["confirm"]);
  assert.match(unconfirmed.detail, /confirm must repeat/);
  const everything = await atlas.memoryForgetAll({ subject, confirm: subject });
  assert.equal(everything.forgotten.episodic, 1);
  assert.deepEqual((await atlas.memoryList({ subject })).memories, []);
});

test("options are checked before anything is sent", async () => {
  await assert.rejects(atlas.episodeWrite({ subject: "alice" }), /episodeWrite\(\) needs text/);
  await assert.rejects(atlas.episodeWrite({ subject: "alice", text: "x", sesion_id: "typo" }), /does not take sesion_id/);
  await assert.rejects(atlas.memoryListIter({ subject: "alice", cursor: "x" }).next(), /follows the cursor itself/);
});
