// Queries through @azure/data-tables: filters built with the odata tag, $select (also of
// missing properties), paging with byPage and continuation tokens, errors (query.md).

import assert from "node:assert/strict";
import { test } from "node:test";
import { odata } from "@azure/data-tables";
import { all, customProps, entityTimestamp, expectRestError, freshTable, pages } from "./helpers.mjs";

async function people(t) {
  const table = await freshTable(t);
  const rows = [
    { rowKey: "01", name: "Ada", age: 36, active: true, born: new Date("1815-12-10T00:00:00Z") },
    { rowKey: "02", name: "O'Brien", age: 51, active: false, born: new Date("1970-01-01T12:30:00Z") },
    { rowKey: "03", name: "Grace", age: 85, active: true, big: 4611686018427387904n },
    { rowKey: "04", name: "NoAge" },
  ];
  for (const row of rows) await table.createEntity({ partitionKey: "people", ...row });
  return table;
}

const rowKeys = (entities) => entities.map((e) => e.rowKey);
const query = (table, filter, extra = {}) =>
  all(table.listEntities({ queryOptions: { filter, ...extra } }));

test("filters with the odata tag, quotes, and every operator", async (t) => {
  const table = await people(t);
  assert.deepEqual(rowKeys(await query(table, odata`name eq ${"O'Brien"}`)), ["02"]);
  assert.deepEqual(rowKeys(await query(table, odata`age gt ${40}`)), ["02", "03"]);
  assert.deepEqual(rowKeys(await query(table, odata`age ge ${36} and age lt ${85}`)), ["01", "02"]);
  assert.deepEqual(rowKeys(await query(table, odata`born lt ${new Date("1900-01-01T00:00:00Z")}`)), ["01"]);
  assert.deepEqual(rowKeys(await query(table, "active")), ["01", "03"]);
  assert.deepEqual(rowKeys(await query(table, "big gt 2L")), ["03"]);
  assert.deepEqual(rowKeys(await query(table, "age ne 36")), ["02", "03"]); // missing -> false
  assert.deepEqual(rowKeys(await query(table, "not (age eq 36)")), ["02", "03", "04"]);
  assert.deepEqual(rowKeys(await query(table, "")), ["01", "02", "03", "04"]); // empty = all
});

test("$select returns exactly the selected properties, null for missing ones", async (t) => {
  const table = await people(t);
  const selected = await query(table, "PartitionKey eq 'people'", { select: ["name", "age", "nope"] });
  assert.deepEqual(selected.map(customProps), [
    { name: "Ada", age: 36, nope: null },
    { name: "O'Brien", age: 51, nope: null },
    { name: "Grace", age: 85, nope: null },
    { name: "NoAge", age: null, nope: null },
  ]);
  assert.ok(selected.every((e) => e.partitionKey === undefined && e.rowKey === undefined));
  assert.ok(selected.every((e) => e.etag), "odata.etag is still there");

  const keysOnly = await query(table, "", { select: ["rowKey", "big"] });
  assert.deepEqual(keysOnly.map((e) => [e.rowKey, e.big]), [["01", null], ["02", null], ["03", 4611686018427387904n], ["04", null]]);

  const one = await table.getEntity("people", "04", { queryOptions: { select: ["name", "active"] } });
  assert.deepEqual(customProps(one), { name: "NoAge", active: null });
});

async function fill(table, count, partitions) {
  const keys = [];
  for (let i = 0; i < count; i++) {
    const key = [`p${i % partitions}`, `r${String(i).padStart(4, "0")}`];
    await table.createEntity({ partitionKey: key[0], rowKey: key[1], n: i });
    keys.push(key);
  }
  return keys.sort((a, b) => (a[0] + "\0" + a[1] < b[0] + "\0" + b[1] ? -1 : 1));
}

test("listEntities pages across partitions (byPage, maxPageSize)", async (t) => {
  const table = await freshTable(t);
  const expected = await fill(table, 25, 3);
  const paged = await pages(table.listEntities().byPage({ maxPageSize: 7 }));
  assert.deepEqual(paged.map((p) => p.length), [7, 7, 7, 4]);
  assert.deepEqual(paged.flat().map((e) => [e.partitionKey, e.rowKey]), expected);
});

test("a query with a residual filter pages and resumes from a continuation token", async (t) => {
  const table = await freshTable(t);
  const expected = (await fill(table, 30, 4)).filter(([, rk]) => Number(rk.slice(1)) % 3 !== 0);
  const filter = "n ne 0 and n ne 3 and n ne 6 and n ne 9 and n ne 12 and n ne 15 and n ne 18 and n ne 21 and n ne 24 and n ne 27";
  const paged = await pages(table.listEntities({ queryOptions: { filter } }).byPage({ maxPageSize: 4 }));
  assert.ok(paged.length >= 3, `${paged.length} pages`);
  assert.ok(paged.every((p) => p.length <= 4));
  assert.deepEqual(paged.flat().map((e) => [e.partitionKey, e.rowKey]), expected);

  const first = await table.listEntities({ queryOptions: { filter } }).byPage({ maxPageSize: 4 }).next();
  const token = first.value.continuationToken;
  assert.ok(token);
  const rest = await pages(table.listEntities({ queryOptions: { filter } }).byPage({ maxPageSize: 4, continuationToken: token }));
  assert.deepEqual([...first.value, ...rest.flat()].map((e) => [e.partitionKey, e.rowKey]), expected);
});

test("the last page carries no continuation token", async (t) => {
  const table = await freshTable(t);
  await fill(table, 6, 1);
  const paged = [];
  for await (const page of table.listEntities().byPage({ maxPageSize: 3 })) paged.push(page);
  assert.equal(paged.at(-1).continuationToken, undefined);
  assert.deepEqual(paged.flat().length, 6);
});

for (const filter of ["age EQ 5", "age eq", "startswith(name, 'A')", "age eq null", "(age eq 1"]) {
  test(`invalid filter ${JSON.stringify(filter)} is 400 InvalidInput`, async (t) => {
    const table = await people(t);
    await expectRestError(query(table, filter), 400, "InvalidInput");
  });
}

test("$top outside 1..1000 is 400 InvalidInput", async (t) => {
  const table = await people(t);
  // byPage's maxPageSize is what this SDK sends as $top (queryOptions.top is overwritten).
  for (const top of [0, 1001]) {
    await expectRestError(table.listEntities().byPage({ maxPageSize: top }).next(), 400, "InvalidInput");
  }
  assert.equal((await table.listEntities().byPage({ maxPageSize: 1000 }).next()).value.length, 4);
});

test("Timestamp is queryable", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "old" });
  const timestamp = entityTimestamp(await table.getEntity("p", "old"));
  await table.upsertEntity({ partitionKey: "p", rowKey: "new" }, "Replace");
  const newer = await query(table, `Timestamp gt datetime'${timestamp}'`);
  assert.deepEqual(rowKeys(newer), ["new"]);
});
