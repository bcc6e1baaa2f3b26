// Optimistic concurrency and both upserts through @azure/data-tables (rest.md "Resources").
// This SDK sends merges as PATCH on our endpoints (it treats 127.0.0.1/localhost paths under
// /devstoreaccount1 as storage, not Cosmos); the Python suite covers POST + X-HTTP-Method.

import assert from "node:assert/strict";
import { test } from "node:test";
import { customProps, entityTimestamp, etagTimestamp, expectRestError, freshTable, recordRequests } from "./helpers.mjs";

for (const mode of ["Merge", "Replace"]) {
  test(`updateEntity ${mode} with a stale ETag is 412 UpdateConditionNotSatisfied`, async (t) => {
    const table = await freshTable(t);
    const first = await table.createEntity({ partitionKey: "p", rowKey: "r", v: 1 });
    const second = await table.updateEntity({ partitionKey: "p", rowKey: "r", v: 2 }, mode, { etag: first.etag });
    assert.notEqual(second.etag, first.etag);
    await expectRestError(
      table.updateEntity({ partitionKey: "p", rowKey: "r", v: 3 }, mode, { etag: first.etag }),
      412,
      "UpdateConditionNotSatisfied",
    );
    const entity = await table.getEntity("p", "r");
    assert.equal(entity.v, 2);
    assert.equal(entity.etag, second.etag);
  });
}

test("deleteEntity with a stale ETag is 412, with the current one succeeds", async (t) => {
  const table = await freshTable(t);
  const first = await table.createEntity({ partitionKey: "p", rowKey: "r", v: 1 });
  await table.updateEntity({ partitionKey: "p", rowKey: "r", v: 2 }, "Merge");
  await expectRestError(table.deleteEntity("p", "r", { etag: first.etag }), 412, "UpdateConditionNotSatisfied");
  const { etag } = await table.getEntity("p", "r");
  await table.deleteEntity("p", "r", { etag });
  await expectRestError(table.getEntity("p", "r"), 404, "ResourceNotFound");
});

test("an If-Match that is not an ETag is 400 InvalidInput", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "r", v: 1 });
  await expectRestError(
    table.updateEntity({ partitionKey: "p", rowKey: "r", v: 2 }, "Replace", { etag: "not-an-etag" }),
    400,
    "InvalidInput",
  );
  assert.equal((await table.getEntity("p", "r")).v, 1);
});

test("upsertEntity Merge inserts, then merges (PATCH without If-Match)", async (t) => {
  const table = await freshTable(t);
  const calls = recordRequests(table);
  const inserted = await table.upsertEntity({ partitionKey: "p", rowKey: "r", a: 1, b: "b" }, "Merge");
  assert.deepEqual([calls.at(-1).method, calls.at(-1).ifMatch, calls.at(-1).status], ["PATCH", null, 204]);
  etagTimestamp(inserted.etag);
  const merged = await table.upsertEntity({ partitionKey: "p", rowKey: "r", b: "B2", c: 2.5 }, "Merge");
  assert.notEqual(merged.etag, inserted.etag);
  const entity = await table.getEntity("p", "r");
  assert.deepEqual(customProps(entity), { a: 1, b: "B2", c: 2.5 });
  assert.equal(entity.etag, merged.etag);
});

test("upsertEntity Replace inserts, then replaces (PUT without If-Match)", async (t) => {
  const table = await freshTable(t);
  const calls = recordRequests(table);
  const inserted = await table.upsertEntity({ partitionKey: "p", rowKey: "r", a: 1, b: "b" }, "Replace");
  assert.deepEqual([calls.at(-1).method, calls.at(-1).ifMatch, calls.at(-1).status], ["PUT", null, 204]);
  const replaced = await table.upsertEntity({ partitionKey: "p", rowKey: "r", c: true }, "Replace");
  assert.notEqual(replaced.etag, inserted.etag);
  const entity = await table.getEntity("p", "r");
  assert.deepEqual(customProps(entity), { c: true });
  assert.equal(entity.etag, replaced.etag);
});

test("the ETag of every write response is the entity's ETag", async (t) => {
  const table = await freshTable(t);
  const results = [
    await table.createEntity({ partitionKey: "p", rowKey: "r", v: 1 }),
    await table.updateEntity({ partitionKey: "p", rowKey: "r", v: 2 }, "Merge"),
    await table.updateEntity({ partitionKey: "p", rowKey: "r", v: 3 }, "Replace"),
    await table.upsertEntity({ partitionKey: "p", rowKey: "r", v: 4 }, "Merge"),
    await table.upsertEntity({ partitionKey: "p", rowKey: "r", v: 5 }, "Replace"),
  ];
  assert.equal(new Set(results.map((r) => r.etag)).size, 5);
  const entity = await table.getEntity("p", "r");
  assert.equal(entity.etag, results.at(-1).etag);
  entityTimestamp(entity);
});
