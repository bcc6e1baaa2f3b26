// Tables through @azure/data-tables: create, list, query, delete, case rules, invalid names
// (data-model.md "Table names", rest.md "Resources").

import assert from "node:assert/strict";
import { test } from "node:test";
import { odata } from "@azure/data-tables";
import {
  all,
  errorMessage,
  expectRestError,
  pages,
  recordRequests,
  serviceClient,
  tableClient,
  uniqueName,
} from "./helpers.mjs";

const service = serviceClient();

async function tableNames(filter) {
  const options = filter ? { queryOptions: { filter } } : undefined;
  return (await all(service.listTables(options))).map((t) => t.name);
}

test("create, list and delete a table", async () => {
  const name = uniqueName("Created");
  await service.createTable(name);
  assert.ok((await tableNames()).includes(name));
  await service.deleteTable(name);
  assert.ok(!(await tableNames()).includes(name));
});

test("table names are case-insensitive and keep their case", async () => {
  const name = uniqueName("MiXeD");
  await service.createTable(name);
  try {
    // The SDK swallows TableAlreadyExists on create; the recorded response shows it.
    const lower = tableClient(name.toLowerCase());
    const calls = recordRequests(lower);
    await lower.createTable();
    assert.deepEqual([calls.at(-1).status, calls.at(-1).code], [409, "TableAlreadyExists"]);

    await tableClient(name.toUpperCase()).createEntity({ partitionKey: "p", rowKey: "r", v: 1 });
    assert.equal((await lower.getEntity("p", "r")).v, 1);
    assert.deepEqual(await tableNames(odata`TableName eq ${name}`), [name]);
  } finally {
    await service.deleteTable(name.toLowerCase());
  }
  assert.ok(!(await tableNames()).includes(name));
});

const INVALID_NAMES = [
  ["my_table", "InvalidResourceName", "The specified resource name contains invalid characters."],
  ["1abc", "InvalidResourceName", "The specified resource name contains invalid characters."],
  ["tab-le", "InvalidResourceName", "The specified resource name contains invalid characters."],
  ["ab", "OutOfRangeInput", "The specified resource name length is not within the permissible limits."],
  ["a".repeat(64), "OutOfRangeInput", "The specified resource name length is not within the permissible limits."],
  ["tables", "InvalidResourceName", null], // reserved (decided)
  ["Tables", "InvalidResourceName", null],
];

for (const [name, code, message] of INVALID_NAMES) {
  test(`invalid table name ${JSON.stringify(name.length > 10 ? `${name.slice(0, 4)}…(${name.length})` : name)} is ${code}`, async () => {
    const err = await expectRestError(service.createTable(name), 400, code);
    // The service's wording, which the Python SDK matches on.
    if (message) assert.ok(errorMessage(err).startsWith(message), errorMessage(err));
  });
}

test("deleting a missing table is 404 ResourceNotFound (swallowed by the SDK)", async () => {
  const client = tableClient(uniqueName("Missing"));
  const calls = recordRequests(client);
  await client.deleteTable();
  assert.deepEqual([calls.at(-1).method, calls.at(-1).status, calls.at(-1).code], ["DELETE", 404, "ResourceNotFound"]);
});

test("entity operations on a missing table are 404 TableNotFound", async () => {
  const missing = tableClient(uniqueName("Missing"));
  await expectRestError(missing.createEntity({ partitionKey: "p", rowKey: "r" }), 404, "TableNotFound");
  await expectRestError(missing.getEntity("p", "r"), 404, "TableNotFound");
  await expectRestError(all(missing.listEntities()), 404, "TableNotFound");
  await expectRestError(missing.upsertEntity({ partitionKey: "p", rowKey: "r" }, "Replace"), 404, "TableNotFound");
  await expectRestError(missing.deleteEntity("p", "r"), 404, "TableNotFound");
});

test("listTables with a name filter pages with NextTableName", async () => {
  const prefix = uniqueName("Pg");
  const names = [0, 1, 2, 3, 4].map((i) => `${prefix}${i}`);
  for (const name of names) await service.createTable(name);
  try {
    const filter = odata`TableName ge ${prefix} and TableName lt ${prefix + "z"}`;
    const paged = await pages(service.listTables({ queryOptions: { filter } }).byPage({ maxPageSize: 2 }));
    assert.ok(paged.length >= 3, `pages: ${JSON.stringify(paged)}`);
    assert.ok(paged.every((p) => p.length <= 2));
    const found = paged.flat().map((t) => t.name);
    assert.deepEqual([...found].sort(), names);

    // Resume from the first page's continuation token in a new iteration.
    const first = await service.listTables({ queryOptions: { filter } }).byPage({ maxPageSize: 2 }).next();
    const token = first.value.continuationToken;
    assert.ok(token, "the first page has a continuation token");
    const rest = await pages(
      service.listTables({ queryOptions: { filter } }).byPage({ maxPageSize: 2, continuationToken: token }),
    );
    assert.deepEqual(
      [...first.value.map((t) => t.name), ...rest.flat().map((t) => t.name)].sort(),
      names,
    );

    assert.deepEqual(await tableNames(odata`TableName eq ${names[3]}`), [names[3]]);
  } finally {
    for (const name of names) await service.deleteTable(name);
  }
});
