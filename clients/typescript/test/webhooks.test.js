// Webhook administration against the live server, in a tenant of its own so its endpoints and delivery
// log are exactly what these tests made (tests/clients/test_typescript.py makes it, a loopback receiver,
// and another tenant's token). No worker runs: a delivery stays pending, as the log shows it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Forbidden, NotFound, ValidationError } from "../src/index.js";
import { client, live, refusal } from "./_live.js";

const admin = client({ token: live.env("ATLAS_WEBHOOK_ADMIN") });
const stranger = client({ token: live.env("ATLAS_WEBHOOK_OTHER") });
const receiver = live.env("ATLAS_WEBHOOK_RECEIVER");
const HOUR = 3600 * 1000;

/** The endpoint as get and list answer it: the creation's answer less its secret. */
function listed(created) {
  const { secret, ...shown } = created;
  assert.match(secret, /^whsec_/);
  return shown;
}

test("an endpoint is made, listed, changed, rotated and removed", async () => {
  const created = await admin.webhookCreate({ url: receiver, events: ["memory.created"], description: "crm" });
  assert.deepEqual(
    [created.url, created.events, created.description, created.enabled, created.previous_secret_expires_at],
    [receiver, ["memory.created"], "crm", true, null],
  );
  // The secret was shown once: get and list answer the endpoint without it.
  assert.deepEqual(await admin.webhookGet({ webhook_id: created.id }), listed(created));
  assert.deepEqual((await admin.webhookList()).webhooks, [listed(created)]);

  const disabled = await admin.webhookUpdate({ webhook_id: created.id, enabled: false });
  assert.deepEqual([disabled.enabled, disabled.events], [false, ["memory.created"]]);
  const events = ["memory.created", "memory.forgotten"];
  const enabled = await admin.webhookUpdate({ webhook_id: created.id, enabled: true, events });
  assert.deepEqual([enabled.enabled, enabled.events, enabled.description], [true, events, "crm"]);
  assert.deepEqual(await admin.webhookGet({ webhook_id: created.id }), enabled);

  const rotated = await admin.webhookSecretRotate({ webhook_id: created.id });
  assert.match(rotated.secret, /^whsec_/);
  assert.notEqual(rotated.secret, created.secret);
  // The previous secret keeps signing for the overlap (24 h by default); the endpoint says until when.
  const overlap = Date.parse(rotated.previous_secret_expires_at) - Date.now();
  assert.ok(23 * HOUR < overlap && overlap <= 24 * HOUR, rotated.previous_secret_expires_at);
  const after = await admin.webhookGet({ webhook_id: created.id });
  assert.equal(Date.parse(after.previous_secret_expires_at), Date.parse(rotated.previous_secret_expires_at));
  assert.ok(!("secret" in after));

  assert.equal(await admin.webhookDelete({ webhook_id: created.id }), null);
  assert.ok((await refusal(admin.webhookGet({ webhook_id: created.id }))) instanceof NotFound);
  assert.deepEqual((await admin.webhookList()).webhooks, []);
});

test("a memory write is logged, paged and sent again", async () => {
  const created = await admin.webhookCreate({ url: receiver, events: ["memory.created"] });
  const episode = await admin.episodeWrite({ subject: "alice", text: "I moved to Lisbon last month" });
  const page = await admin.webhookDeliveries({ webhook_id: created.id });
  assert.equal(page.next_before, null);
  assert.equal(page.deliveries.length, 1);
  const [pending] = page.deliveries;
  assert.deepEqual(
    [pending.type, pending.subject, pending.status, pending.attempts, pending.data.memory.id],
    ["memory.created", "alice", "pending", 0, episode.id],
  );

  const again = await admin.webhookRedeliver({ webhook_id: created.id, delivery_id: pending.id });
  assert.deepEqual([again.event_id, again.status, again.data], [pending.event_id, "pending", pending.data]);
  assert.notEqual(again.id, pending.id);
  const newest = await admin.webhookDeliveries({ webhook_id: created.id, page_size: 1 });
  assert.deepEqual([newest.deliveries.map((d) => d.id), newest.next_before], [[again.id], again.id]);
  const older = await admin.webhookDeliveries({ webhook_id: created.id, page_size: 1, before: newest.next_before });
  assert.deepEqual([older.deliveries.map((d) => d.id), older.next_before], [[pending.id], null]);
  await admin.webhookDelete({ webhook_id: created.id });
});

test("the delivery log is walked page after page", async () => {
  const created = await admin.webhookCreate({ url: receiver, events: ["memory.created"] });
  for (let n = 0; n < 5; n += 1) await admin.episodeWrite({ subject: "alice", text: `Turn ${n} of the long talk` });
  const log = await admin.webhookDeliveries({ webhook_id: created.id, page_size: 100 });
  const newestFirst = log.deliveries.map((d) => d.id);
  assert.deepEqual(newestFirst, [...newestFirst].sort((a, b) => b - a));
  assert.equal(newestFirst.length, 5);
  // Two a page: only following next_before past the first two pages reaches the oldest ones.
  const walked = [];
  for await (const delivery of admin.webhookDeliveriesIter({ webhook_id: created.id, page_size: 2 })) walked.push(delivery);
  assert.deepEqual(walked.map((d) => d.id), newestFirst);
  assert.deepEqual(walked.map((d) => d.data.memory.text), [4, 3, 2, 1, 0].map((n) => `Turn ${n} of the long talk`));
  await assert.rejects(admin.webhookDeliveriesIter({ webhook_id: created.id, before: 1 }).next(), /follows the before itself/);
  await admin.webhookDelete({ webhook_id: created.id });
});

test("bad input is refused and changes nothing", async () => {
  const plain = await refusal(admin.webhookCreate({ url: "http://hooks.example.com/atlas", events: ["memory.created"] }));
  assert.ok(plain instanceof ValidationError);
  assert.equal(plain.status, 400);
  assert.match(plain.fields.url, /^url must use https/);
  assert.deepEqual((await admin.webhookList()).webhooks, []);

  const created = await admin.webhookCreate({ url: receiver, events: ["memory.created"] });
  const nothing = await refusal(admin.webhookUpdate({ webhook_id: created.id }));
  assert.ok(nothing instanceof ValidationError);
  assert.match(nothing.detail, /at least one/);
  assert.deepEqual(await admin.webhookGet({ webhook_id: created.id }), listed(created));
  const reader = client({ token: live.readOnly }); // a token that may only read: registering one reads all to come
  assert.ok((await refusal(reader.webhookCreate({ url: receiver, events: ["memory.created"] }))) instanceof Forbidden);
  await assert.rejects(admin.webhookCreate({ url: receiver }), /webhookCreate\(\) needs events/);
  await admin.webhookDelete({ webhook_id: created.id });
});

test("another tenant's token finds no endpoint and changes nothing", async () => {
  const created = await admin.webhookCreate({ url: receiver, events: ["memory.created"] });
  await admin.episodeWrite({ subject: "alice", text: "I like jazz" });
  const [delivery] = (await admin.webhookDeliveries({ webhook_id: created.id })).deliveries;
  const webhook_id = created.id;
  for (const attempt of [
    () => stranger.webhookGet({ webhook_id }),
    () => stranger.webhookUpdate({ webhook_id, enabled: false }),
    () => stranger.webhookSecretRotate({ webhook_id }),
    () => stranger.webhookDeliveries({ webhook_id }),
    () => stranger.webhookRedeliver({ webhook_id, delivery_id: delivery.id }),
    () => stranger.webhookDelete({ webhook_id }),
  ]) {
    const missing = await refusal(attempt()); // the same 404 as an endpoint that does not exist
    assert.ok(missing instanceof NotFound);
    assert.equal(missing.status, 404);
  }
  assert.deepEqual((await stranger.webhookList()).webhooks, []);
  assert.deepEqual(await admin.webhookGet({ webhook_id }), listed(created));
  assert.deepEqual((await admin.webhookDeliveries({ webhook_id })).deliveries.map((d) => d.id), [delivery.id]);
  await admin.webhookDelete({ webhook_id });
});
