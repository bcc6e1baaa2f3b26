// Entity group transactions through @azure/data-tables' submitTransaction (rest.md "Batch"
// and "What the official clients actually send"): lower-case part headers, no Content-ID,
// Prefer: return-no-content inside the batch, the reply split on --changesetresponse_ and
// ETag matched case-sensitively; a failure is a RestError whose message starts with the
// failing operation's index.

import assert from "node:assert/strict";
import { test } from "node:test";
import { RestError, TableTransaction } from "@azure/data-tables";
import { all, customProps, etagTimestamp, freshTable } from "./helpers.mjs";

test("submitTransaction applies every operation type with one shared ETag", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "replace", old: 1 });
  await table.createEntity({ partitionKey: "p", rowKey: "merge", keep: 1 });
  await table.createEntity({ partitionKey: "p", rowKey: "delete" });
  const current = (await table.getEntity("p", "replace")).etag;

  const tx = new TableTransaction();
  tx.createEntity({ partitionKey: "p", rowKey: "create", n: 1 });
  tx.updateEntity({ partitionKey: "p", rowKey: "replace", fresh: 2 }, "Replace", { etag: current });
  tx.updateEntity({ partitionKey: "p", rowKey: "merge", added: 3 }, "Merge");
  tx.upsertEntity({ partitionKey: "p", rowKey: "upsert-merge", m: 4 }, "Merge");
  tx.upsertEntity({ partitionKey: "p", rowKey: "upsert'replace", r: 5 }, "Replace");
  tx.deleteEntity("p", "delete");
  const result = await table.submitTransaction(tx.actions);

  assert.equal(result.status, 202);
  assert.deepEqual(
    result.subResponses.map((r) => r.status),
    [204, 204, 204, 204, 204, 204],
  );
  const etags = result.subResponses.slice(0, 5).map((r) => r.etag);
  assert.equal(new Set(etags).size, 1, `one Timestamp for the transaction: ${etags}`);
  etagTimestamp(etags[0]);
  assert.equal(result.getResponseForEntity("create")?.status, 204);

  const got = Object.fromEntries((await all(table.listEntities())).map((e) => [e.rowKey, e]));
  assert.deepEqual(Object.keys(got).sort(), ["create", "merge", "replace", "upsert'replace", "upsert-merge"]);
  assert.deepEqual(customProps(got.replace), { fresh: 2 });
  assert.deepEqual(customProps(got.merge), { keep: 1, added: 3 });
  for (const e of Object.values(got)) assert.equal(e.etag, etags[0]);
});

test("a failing operation rejects the transaction with its index and applies nothing", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "exists", v: 1 });
  let err;
  try {
    await table.submitTransaction([
      ["create", { partitionKey: "p", rowKey: "a" }],
      ["upsert", { partitionKey: "p", rowKey: "b", v: 2 }],
      ["create", { partitionKey: "p", rowKey: "exists" }],
    ]);
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof RestError, `expected a RestError, got ${err}`);
  assert.equal(err.statusCode, 409);
  assert.equal(err.code, "EntityAlreadyExists");
  assert.match(err.message, /^2:The specified entity already exists\./);
  const rows = (await all(table.listEntities())).map((e) => e.rowKey);
  assert.deepEqual(rows, ["exists"]);

  // Duplicate rows: the second occurrence's index.
  try {
    await table.submitTransaction([
      ["upsert", { partitionKey: "p", rowKey: "x" }],
      ["delete", { partitionKey: "p", rowKey: "x" }],
    ]);
    assert.fail("a duplicate row must fail");
  } catch (e) {
    assert.equal(e.statusCode, 400);
    assert.equal(e.code, "InvalidDuplicateRow");
    assert.match(e.message, /^1:/);
  }
  // A stale ETag.
  try {
    await table.submitTransaction([
      ["update", { partitionKey: "p", rowKey: "exists", v: 9 }, "Merge", { etag: `W/"datetime'2020-01-01T00%3A00%3A00.0000000Z'"` }],
    ]);
    assert.fail("a stale ETag must fail");
  } catch (e) {
    assert.equal(e.statusCode, 412);
    assert.match(e.message, /^0:/);
  }
  assert.equal((await table.getEntity("p", "exists")).v, 1);
});

test("mixed partitions are refused by the SDK before anything is sent (the server check is tested in Rust and Python)", async (t) => {
  const table = await freshTable(t);
  await assert.rejects(
    table.submitTransaction([
      ["create", { partitionKey: "p", rowKey: "1" }],
      ["create", { partitionKey: "q", rowKey: "2" }],
    ]),
    /same partitionKey/,
  );
  assert.deepEqual(await all(table.listEntities()), []);
});
