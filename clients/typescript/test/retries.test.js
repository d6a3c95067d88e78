// Retries and idempotency for real: failures made by the real HTTP proxies pytest put in front of the
// live server (tests/clients/proxy.py; what each saw is checked there after), and the server's own
// "still running" answer.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import { ConnectionFailed, NEVER, StillRunning, Unavailable, ValidationError } from "../src/index.js";
import { FAST, all, client, fresh, live, refusal } from "./_live.js";

const direct = client();
const episodes = async (subject) => (await all(direct.memoryListIter({ subject, types: ["episodic"] }))).map((m) => m.text);

test("the same key answers the same memory and stores one", async () => {
  const subject = await fresh(direct);
  const first = await direct.episodeWrite({ subject, text: "I moved to Lisbon", idempotencyKey: "turn-1" });
  const again = await direct.episodeWrite({ subject, text: "I moved to Lisbon", idempotencyKey: "turn-1" });
  assert.deepEqual(again, first);
  const mismatch = await refusal(direct.episodeWrite({ subject, text: "something else", idempotencyKey: "turn-1" }));
  assert.ok(mismatch instanceof ValidationError);
  assert.deepEqual([mismatch.status, mismatch.code], [422, "idempotency_mismatch"]);
  await direct.episodeWrite({ subject, text: "twice" });
  await direct.episodeWrite({ subject, text: "twice" });
  assert.deepEqual(await episodes(subject), ["twice", "twice", "I moved to Lisbon"]);
});

test("a write retried after a 503 waits its Retry-After, keeps its key and stores one document", async () => {
  const subject = await fresh(direct);
  const started = performance.now();
  const fact = await client({ baseUrl: live.proxy("503") }).factWrite({ subject, text: "Plays the cello" });
  assert.ok(performance.now() - started >= 1000, "the proxy's Retry-After: 1, not the 0.05 s backoff");
  assert.deepEqual((await direct.memoryList({ subject })).memories.map((m) => m.id), [fact.id]);
});

test("a write whose answer was lost is retried onto the same memory", async () => {
  const subject = await fresh(direct);
  const atlas = client({ baseUrl: live.proxy("LOST") });
  const episode = await atlas.episodeWrite({ subject, text: "I adopted a dog" });
  const turn = await atlas.turn({ subject, text: "what food suits my dog?" });
  assert.deepEqual(await episodes(subject), ["what food suits my dog?", "I adopted a dog"]);
  assert.equal((await direct.memoryGet({ subject, memory_id: episode.id })).id, episode.id);
  assert.equal(turn.episode.text, "what food suits my dog?");
});

test("reads are retried after a lost answer and a 503", async () => {
  const subject = await fresh(direct);
  assert.deepEqual((await client({ baseUrl: live.proxy("READ") }).memoryList({ subject })).memories, []);
});

test("an edit or a forget is not retried once it may have run", async () => {
  const subject = await fresh(direct);
  const fact = await direct.factWrite({ subject, text: "Drinks coffee" });
  const atlas = client({ baseUrl: live.proxy("UNKEYED") });
  const lost = await refusal(atlas.factEdit({ subject, memory_id: fact.id, text: "Drinks tea" }));
  assert.ok(lost instanceof ConnectionFailed);
  assert.equal(lost.status, null);
  const unavailable = await refusal(atlas.memoryForget({ subject, memory_id: fact.id }));
  assert.ok(unavailable instanceof Unavailable);
  assert.deepEqual([unavailable.status, unavailable.retryAfter], [503, 1]);
  const facts = await direct.memoryList({ subject, types: ["semantic"] });
  assert.deepEqual(facts.memories.map((m) => m.text), ["Drinks tea"]);
});

/** A port nothing listens on (one just freed). */
async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test("no server is a connection error after the budget", async () => {
  const atlas = client({ baseUrl: `http://127.0.0.1:${await closedPort()}`, retry: { attempts: 3, backoff: 0.01 } });
  const started = performance.now();
  const failed = await refusal(atlas.episodeWrite({ subject: "alice", text: "hello" }));
  assert.ok(failed instanceof ConnectionFailed);
  assert.equal(failed.status, null);
  assert.match(failed.message, /ECONNREFUSED/);
  assert.ok(performance.now() - started < 5000);
});

test("still running is retried until the first request finishes", async () => {
  const subject = await fresh(direct);
  const started = performance.now();
  const episode = await client({ baseUrl: live.proxy("RUNNING") }).episodeWrite({ subject, text: "said once" });
  assert.ok(performance.now() - started >= 2000, "the server's Retry-After for a running request");
  const impatient = client({ baseUrl: live.proxy("RUNNING"), retry: NEVER });
  const running = await refusal(impatient.episodeWrite({ subject, text: "said once more" }));
  assert.ok(running instanceof StillRunning);
  assert.deepEqual([running.status, running.code], [409, "idempotency_running"]);
  assert.deepEqual(await episodes(subject), ["said once"]);
  assert.equal(episode.text, "said once");
});

test("the same key sent twice at once stores one memory", async () => {
  const subject = await fresh(direct);
  const write = () => client().turn({ subject, text: "at the same time", idempotencyKey: `twice-${subject}` });
  const [a, b] = await Promise.all([write(), write()]);
  assert.equal(a.episode.id, b.episode.id);
  assert.deepEqual(await episodes(subject), ["at the same time"]);
});

test("the export is retried until it begins, never after", async () => {
  const subject = await fresh(direct);
  const fact = await direct.factWrite({ subject, text: "Speaks Portuguese" });
  const atlas = client({ baseUrl: live.proxy("EXPORT") });
  const lines = await all(atlas.memoryExport({ subject }));
  assert.equal(lines[0].format, "atlas-memory-export");
  assert.deepEqual(lines.slice(1).map((line) => line.id), [fact.id]);
  const received = [];
  const broken = await refusal(
    (async () => {
      for await (const line of atlas.memoryExport({ subject })) received.push(line);
    })(),
  );
  assert.ok(broken instanceof ConnectionFailed);
  assert.match(broken.message, /the stream broke after it began/);
  assert.deepEqual(received.map((line) => line.format), ["atlas-memory-export"]);
});

test("the retry defaults are the Python SDK's", () => {
  assert.deepEqual(client({ retry: undefined }).retry, FAST);
  assert.deepEqual(new (client().constructor)({ baseUrl: live.url, token: "t" }).retry, {
    attempts: 5,
    totalSeconds: 60,
    backoff: 0.5,
    maxWait: 10,
  });
});
