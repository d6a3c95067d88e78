// Cursor-paged lists: one page at a time, or every page with `for await`.
import assert from "node:assert/strict";
import { test } from "node:test";

import { all, client, fresh } from "./_live.js";

const atlas = client();

test("lists page by cursor, and their iterators walk every page", async () => {
  const subject = await fresh(atlas);
  const written = [];
  for (let n = 0; n < 5; n += 1) {
    written.push((await atlas.episodeWrite({ subject, text: `turn number ${n}`, session_id: "paged" })).id);
  }
  const page = await atlas.memoryList({ subject, types: ["episodic"], page_size: 2 });
  assert.equal(page.memories.length, 2);
  assert.ok(page.next_cursor);
  const second = await atlas.memoryList({ subject, types: ["episodic"], page_size: 2, cursor: page.next_cursor });
  assert.ok(!second.memories.some((m) => page.memories.some((p) => p.id === m.id)));
  const every = [];
  for await (const memory of atlas.memoryListIter({ subject, types: ["episodic"], page_size: 2 })) every.push(memory.id);
  assert.deepEqual(every, written.toReversed()); // newest first
  const only = await atlas.memoryList({ subject, session_id: "elsewhere" });
  assert.deepEqual([only.memories, only.next_cursor], [[], null]);
});

test("subjects page too", async () => {
  const created = await atlas.subjectCreate({ id: `carol-${crypto.randomUUID().slice(0, 8)}`, display_name: "Carol" });
  assert.deepEqual([created.display_name, created.active], ["Carol", true]);
  const ids = (await all(atlas.subjectListIter({ page_size: 2 }))).map((s) => s.id);
  assert.ok(["alice", "bob", created.id].every((id) => ids.includes(id)));
  assert.equal(new Set(ids).size, ids.length);
  assert.equal((await atlas.subjectList({ page_size: 2 })).subjects.length, 2);
});
