// The server's rate limit: waited out within the budget, or a RateLimited with the wait asked for.
// Runs only with the limit lowered (ATLAS_RATE_LIMITED: tests/clients/test_typescript.py sets 2/s).
import assert from "node:assert/strict";
import { test } from "node:test";

import { NEVER, RateLimited } from "../src/index.js";
import { all, client, live, refusal } from "./_live.js";

const skip = process.env.ATLAS_RATE_LIMITED ? false : "runs with the server's rate limit lowered (ATLAS_RATE_LIMITED)";

test("the rate limit is waited out within the budget, or raised", { skip }, async () => {
  const atlas = client({ baseUrl: live.proxy("LIMIT"), token: live.own });
  const written = [];
  for (let n = 0; n < 5; n += 1) written.push((await atlas.episodeWrite({ subject: "alice", text: `turn ${n}` })).id);
  assert.equal(new Set(written).size, 5);
  const texts = (await all(atlas.memoryListIter({ subject: "alice", types: ["episodic"] }))).map((m) => m.text);
  assert.deepEqual(texts.slice(0, 5), ["turn 4", "turn 3", "turn 2", "turn 1", "turn 0"]);

  const impatient = client({ token: live.own, retry: NEVER });
  const limited = await refusal((async () => { for (let n = 0; n < 5; n += 1) await impatient.me(); })());
  assert.ok(limited instanceof RateLimited);
  assert.equal(limited.status, 429);
  assert.ok(limited.retryAfter >= 1);
  const brief = client({ token: live.own, retry: { attempts: 10, totalSeconds: 0.5 } });
  const short = await refusal((async () => { for (let n = 0; n < 5; n += 1) await brief.me(); })());
  assert.ok(short instanceof RateLimited, "the wait asked for is longer than the budget has left");
});
