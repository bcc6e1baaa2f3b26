// Every entity operation through @azure/data-tables: insert (Prefer: return-no-content),
// get, update (Replace, Merge), delete, their errors, keys in URLs, nulls, and writing back
// what the SDK read (rest.md "Resources" and "What the official clients actually send").

import assert from "node:assert/strict";
import { test } from "node:test";
import { odata } from "@azure/data-tables";
import {
  all,
  customProps,
  etagTimestamp,
  entityTimestamp,
  expectRestError,
  freshTable,
  recordRequests,
} from "./helpers.mjs";

test("createEntity sends Prefer: return-no-content and gets 204 with an ETag", async (t) => {
  const table = await freshTable(t);
  const calls = recordRequests(table);
  const created = await table.createEntity({ partitionKey: "p", rowKey: "r", name: "Ada", age: 36 });
  const call = calls.at(-1);
  assert.deepEqual([call.method, call.prefer, call.status], ["POST", "return-no-content", 204]);
  assert.match(call.authorization, /^SharedKeyLite devstoreaccount1:/);
  assert.equal(created.preferenceApplied, "return-no-content");
  etagTimestamp(created.etag);

  const entity = await table.getEntity("p", "r");
  assert.deepEqual(customProps(entity), { name: "Ada", age: 36 });
  assert.equal(entity.partitionKey, "p");
  assert.equal(entity.rowKey, "r");
  assert.equal(entity.etag, created.etag);
  entityTimestamp(entity);
});

test("inserting an existing key is 409 EntityAlreadyExists", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "r", v: 1 });
  await expectRestError(table.createEntity({ partitionKey: "p", rowKey: "r", v: 2 }), 409, "EntityAlreadyExists");
  assert.equal((await table.getEntity("p", "r")).v, 1);
});

test("getting a missing entity is 404 ResourceNotFound", async (t) => {
  const table = await freshTable(t);
  await expectRestError(table.getEntity("p", "nothing"), 404, "ResourceNotFound");
});

test("updateEntity Replace swaps the property set, Merge keeps the rest (PATCH)", async (t) => {
  const table = await freshTable(t);
  const created = await table.createEntity({ partitionKey: "p", rowKey: "r", a: 1, b: "b" });
  const calls = recordRequests(table);

  const merged = await table.updateEntity({ partitionKey: "p", rowKey: "r", b: "B2", c: true }, "Merge");
  assert.deepEqual([calls.at(-1).method, calls.at(-1).ifMatch, calls.at(-1).xHttpMethod], ["PATCH", "*", null]);
  assert.notEqual(merged.etag, created.etag);
  assert.deepEqual(customProps(await table.getEntity("p", "r")), { a: 1, b: "B2", c: true });

  const replaced = await table.updateEntity({ partitionKey: "p", rowKey: "r", d: "only" }, "Replace");
  assert.deepEqual([calls.at(-1).method, calls.at(-1).ifMatch], ["PUT", "*"]);
  assert.notEqual(replaced.etag, merged.etag);
  const entity = await table.getEntity("p", "r");
  assert.deepEqual(customProps(entity), { d: "only" });
  assert.equal(entity.etag, replaced.etag);
});

test("updating a missing entity is 404 ResourceNotFound (If-Match: *)", async (t) => {
  const table = await freshTable(t);
  for (const mode of ["Merge", "Replace"]) {
    await expectRestError(table.updateEntity({ partitionKey: "p", rowKey: "gone", a: 1 }, mode), 404, "ResourceNotFound");
  }
  await expectRestError(table.getEntity("p", "gone"), 404, "ResourceNotFound");
});

test("null values: not stored on insert and replace, ignored by merge", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "r", a: 1, gone: null });
  assert.deepEqual(customProps(await table.getEntity("p", "r")), { a: 1 });

  await table.updateEntity({ partitionKey: "p", rowKey: "r", a: null, b: 2 }, "Merge");
  assert.deepEqual(customProps(await table.getEntity("p", "r")), { a: 1, b: 2 });

  await table.upsertEntity({ partitionKey: "p", rowKey: "r", b: null, c: 3 }, "Merge");
  assert.deepEqual(customProps(await table.getEntity("p", "r")), { a: 1, b: 2, c: 3 });

  await table.updateEntity({ partitionKey: "p", rowKey: "r", a: null, d: 4 }, "Replace");
  assert.deepEqual(customProps(await table.getEntity("p", "r")), { d: 4 });

  // Query results never contain nulls (except $select of a missing property).
  const [listed] = await all(table.listEntities());
  assert.deepEqual(customProps(listed), { d: 4 });
});

test("deleteEntity, and deleting a missing entity is 404 ResourceNotFound", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "r" });
  const calls = recordRequests(table);
  await table.deleteEntity("p", "r");
  assert.deepEqual([calls.at(-1).method, calls.at(-1).ifMatch, calls.at(-1).status], ["DELETE", "*", 204]);
  await expectRestError(table.getEntity("p", "r"), 404, "ResourceNotFound");
  await expectRestError(table.deleteEntity("p", "r"), 404, "ResourceNotFound");
});

const KEYS = [
  ["it's", "O''Brien'"],
  ["with space", "a+b&c=d%20e"],
  ["ünïcödé ключ", "日本語"],
  ["😀 emoji", "\u{1f600}"],
  ["", ""],
  ["(PartitionKey='x')", ",RowKey='y'"],
];

for (const [pk, rk] of KEYS) {
  test(`keys ${JSON.stringify(pk)} / ${JSON.stringify(rk)} round-trip through URLs`, async (t) => {
    const table = await freshTable(t);
    await table.createEntity({ partitionKey: pk, rowKey: rk, v: 1 });
    assert.equal((await table.getEntity(pk, rk)).v, 1);
    await table.updateEntity({ partitionKey: pk, rowKey: rk, v: 2 }, "Merge");
    await table.upsertEntity({ partitionKey: pk, rowKey: rk, v: 3, w: 4 }, "Replace");
    const entity = await table.getEntity(pk, rk);
    assert.deepEqual([entity.partitionKey, entity.rowKey, entity.v, entity.w], [pk, rk, 3, 4]);
    const found = await all(table.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${pk} and RowKey eq ${rk}` } }));
    assert.deepEqual(found.map((e) => [e.partitionKey, e.rowKey]), [[pk, rk]]);
    await table.deleteEntity(pk, rk);
    await expectRestError(table.getEntity(pk, rk), 404, "ResourceNotFound");
  });
}

test("writing back what the SDK read: odata.metadata, odata.etag and Timestamp are ignored", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "r", a: 1, b: "x" });

  // The read entity carries odata.metadata, etag (sent as odata.etag) and timestamp (sent
  // as Timestamp); the server must ignore them all.
  const read = await table.getEntity("p", "r");
  assert.ok("odata.metadata" in read && read.etag && read.timestamp);
  read.a = 2;
  const replaced = await table.updateEntity(read, "Replace");
  let entity = await table.getEntity("p", "r");
  assert.deepEqual(customProps(entity), { a: 2, b: "x" });
  assert.equal(entity.etag, replaced.etag);
  assert.ok(entityTimestamp(entity) > entityTimestamp(read), `${entity.timestamp} after ${read.timestamp}`);

  // The same in the untyped form: every value is {value, type}, odata.metadata included.
  const raw = await table.getEntity("p", "r", { disableTypeConversion: true });
  raw.c = { value: "3", type: "Int32" };
  await table.upsertEntity(raw, "Merge");
  entity = await table.getEntity("p", "r");
  assert.deepEqual(customProps(entity), { a: 2, b: "x", c: 3 });

  for (const e of await all(table.listEntities())) {
    await table.upsertEntity(e, "Replace");
  }
  assert.deepEqual(customProps(await table.getEntity("p", "r")), { a: 2, b: "x", c: 3 });
});

test("the Timestamp advances on every write, even back to back", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "r", n: 0 });
  const seen = [entityTimestamp(await table.getEntity("p", "r"))];
  const etags = new Set();
  for (let n = 1; n <= 6; n++) {
    const result = await table.upsertEntity({ partitionKey: "p", rowKey: "r", n }, n % 2 ? "Merge" : "Replace");
    etags.add(result.etag);
    seen.push(etagTimestamp(result.etag));
  }
  assert.equal(etags.size, 6);
  const ticks = seen.map((s) => {
    const [, whole, frac = ""] = /^(.*?)(?:\.(\d+))?Z$/.exec(s);
    return `${whole}.${frac.padEnd(7, "0")}`;
  });
  for (let i = 1; i < ticks.length; i++) assert.ok(ticks[i] > ticks[i - 1], `${ticks[i]} > ${ticks[i - 1]}`);
});
