// Each error class from a real answer of the live server (problem+json), as the Python SDK's.
import assert from "node:assert/strict";
import { test } from "node:test";

import { AtlasError, Conflict, Forbidden, NotFound, Unauthorized, ValidationError } from "../src/index.js";
import { client, fresh, live, refusal } from "./_live.js";

const atlas = client();

test("a refused field is a ValidationError naming it", async () => {
  const bad = await refusal(atlas.factWrite({ subject: "alice", text: "x", fact_type: "opinion" }));
  assert.ok(bad instanceof ValidationError && bad instanceof AtlasError);
  assert.equal(bad.status, 400);
  assert.ok("fact_type" in bad.fields);
  assert.ok(bad.title);
  assert.equal(bad.type, "urn:atlas-memory:problem:invalid");
  assert.equal(bad.code, "invalid");
});

test("a read-only token may not write: Forbidden, and nothing is written", async () => {
  const subject = await fresh(atlas);
  const forbidden = await refusal(client({ token: live.readOnly }).episodeWrite({ subject, text: "not allowed" }));
  assert.ok(forbidden instanceof Forbidden);
  assert.equal(forbidden.status, 403);
  assert.deepEqual((await atlas.memoryList({ subject })).memories, []);
});

test("an unknown token is Unauthorized", async () => {
  const stranger = client({ token: `atlas_000000000000_${"x".repeat(43)}` });
  const unauthorized = await refusal(stranger.me());
  assert.ok(unauthorized instanceof Unauthorized);
  assert.equal(unauthorized.status, 401);
});

test("another subject's memories are NotFound, as a missing one", async () => {
  const own = client({ token: live.own });
  const notYours = await refusal(own.memoryList({ subject: "bob" }));
  const missing = await refusal(atlas.memoryGet({ subject: "alice", memory_id: "no-such-memory" }));
  for (const error of [notYours, missing]) {
    assert.ok(error instanceof NotFound);
    assert.deepEqual([error.status, error.code], [404, "not_found"]);
  }
});

test("a taken subject id, and a replaced fact, are a Conflict; the newest version is named", async () => {
  const taken = await refusal(atlas.subjectCreate({ id: "alice" }));
  assert.ok(taken instanceof Conflict);
  assert.equal(taken.status, 409);
  const subject = await fresh(atlas);
  const first = await atlas.factWrite({ subject, text: "Drinks coffee" });
  const second = await atlas.factEdit({ subject, memory_id: first.id, text: "Drinks tea" });
  const replaced = await refusal(atlas.factEdit({ subject, memory_id: first.id, text: "Drinks water" }));
  assert.equal(replaced.constructor, Conflict);
  assert.equal(replaced.newest, second.id);
  const again = await refusal(atlas.factWrite({ subject, text: "Drinks water", supersedes: [first.id] }));
  assert.equal(again.newest, second.id);
});
