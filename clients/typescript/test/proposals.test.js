// Proposals waiting for the person's review (a tenant whose agent writes all wait): listed, accepted, rejected.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Conflict, Forbidden } from "../src/index.js";
import { all, client, live, refusal } from "./_live.js";

test("proposals are listed, accepted and rejected", async () => {
  const writer = client({ token: live.env("ATLAS_REVIEW_WRITER") });
  const subject = "alice";
  const fact = await writer.factWrite({ subject, text: "Alice collects stamps" });
  const playbook = await writer.playbookWrite({ subject, name: "n", trigger_text: "t", steps: ["s"] });
  assert.deepEqual([fact.status, playbook.status], ["pending", "pending"]);
  assert.ok(fact.version);
  const listed = await all(writer.proposalListIter({ subject, page_size: 1 }));
  assert.deepEqual(listed.map((p) => p.id), [playbook.id, fact.id]);
  assert.deepEqual((await writer.proposalList({ subject, written_by: "token:nobody" })).proposals, []);
  const forbidden = await refusal(writer.proposalAccept({ subject, proposal_id: fact.id, version: fact.version }));
  assert.ok(forbidden instanceof Forbidden, "deciding needs the review scope, never implied by write");

  const review = client({ token: live.env("ATLAS_REVIEW_REVIEWER") });
  const changed = await refusal(review.proposalAccept({ subject, proposal_id: fact.id, version: '"an-old-version"' }));
  assert.ok(changed instanceof Conflict);
  assert.equal(changed.version, fact.version);
  const accepted = await review.proposalAccept({ subject, proposal_id: fact.id, version: fact.version, text: "Stamps!" });
  assert.deepEqual([accepted.status, accepted.text], ["current", "Stamps!"]);
  const rejected = await review.proposalReject({ subject, proposal_id: playbook.id, version: playbook.version });
  assert.deepEqual([rejected.id, rejected.type, rejected.status], [playbook.id, "procedural", "rejected"]);
  assert.deepEqual((await writer.proposalList({ subject })).proposals, []);
});
