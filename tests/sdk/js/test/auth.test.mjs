// Authorization with @azure/data-tables: AzureNamedKeyCredential (SharedKeyLite signatures),
// SAS tokens from generateTableSas / generateAccountSas used through AzureSASCredential
// (permissions, time window, key ranges), and wrong credentials (403 AuthenticationFailed).

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  AzureNamedKeyCredential,
  AzureSASCredential,
  TableClient,
  TableServiceClient,
  generateAccountSas,
  generateTableSas,
} from "@azure/data-tables";
import {
  ACCOUNT,
  ACCOUNT_KEY,
  CLIENT_OPTIONS,
  all,
  endpoint,
  expectRestError,
  freshTable,
  uniqueName,
} from "./helpers.mjs";

const WRONG_KEY = "b3RoZXIgYWNjb3VudCBrZXkgZm9yIHRlc3RzIG9ubHkgMDEyMzQ1Njc4OQ==";
const HOUR = 3600 * 1000;

const devCredential = (key = ACCOUNT_KEY) => new AzureNamedKeyCredential(ACCOUNT, key);
const sasTable = (name, token) =>
  new TableClient(endpoint(), name, new AzureSASCredential(token), { ...CLIENT_OPTIONS });
const fromNow = (ms) => new Date(Date.now() + ms);
const denied = (action) => expectRestError(action, 403, "AuthenticationFailed");
// What a valid SAS does not allow has the service's own codes.
const lacksPermission = (action) => expectRestError(action, 403, "AuthorizationPermissionMismatch");
const outside = (action) => expectRestError(action, 403, "AuthorizationFailure");
const keys = (entities) => entities.map((e) => `${e.partitionKey}${e.rowKey}`).sort();

async function seed(table) {
  for (const [partitionKey, rowKey] of [["a", "1"], ["b", "1"], ["b", "5"], ["c", "1"], ["d", "1"]]) {
    await table.createEntity({ partitionKey, rowKey, v: 1 });
  }
}

test("AzureNamedKeyCredential signs with SharedKeyLite and works", async (t) => {
  const name = uniqueName("jsauth");
  const table = new TableClient(endpoint(), name, devCredential(), { ...CLIENT_OPTIONS });
  await table.createTable();
  t.after(() => table.deleteTable());
  await table.createEntity({ partitionKey: "p", rowKey: "r" });
  assert.equal((await table.getEntity("p", "r")).rowKey, "r");
});

test("a wrong key is refused with 403 AuthenticationFailed and writes nothing", async (t) => {
  const table = await freshTable(t);
  const service = new TableServiceClient(endpoint(), devCredential(WRONG_KEY), { ...CLIENT_OPTIONS });
  await denied(() => all(service.listTables()));
  const wrong = new TableClient(endpoint(), table.tableName, devCredential(WRONG_KEY), { ...CLIENT_OPTIONS });
  await denied(() => wrong.createEntity({ partitionKey: "p", rowKey: "r" }));
  assert.deepEqual(await all(table.listEntities()), []);
});

test("generateTableSas: permissions and time window", async (t) => {
  const table = await freshTable(t);
  await seed(table);
  const read = generateTableSas(table.tableName, devCredential(), {
    permissions: { query: true },
    startsOn: fromNow(-5 * 60 * 1000),
    expiresOn: fromNow(HOUR),
  });
  const reader = sasTable(table.tableName, read);
  assert.equal((await all(reader.listEntities())).length, 5);
  assert.equal((await reader.getEntity("b", "5")).v, 1);
  await lacksPermission(() => reader.createEntity({ partitionKey: "x", rowKey: "1" }));
  await lacksPermission(() => reader.deleteEntity("a", "1"));

  const expired = generateTableSas(table.tableName, devCredential(), {
    permissions: { query: true, add: true, update: true, delete: true },
    startsOn: fromNow(-2 * HOUR),
    expiresOn: fromNow(-HOUR),
  });
  await denied(() => sasTable(table.tableName, expired).createEntity({ partitionKey: "x", rowKey: "1" }));
  const early = generateTableSas(table.tableName, devCredential(), {
    permissions: { query: true, add: true, update: true, delete: true },
    startsOn: fromNow(HOUR),
    expiresOn: fromNow(2 * HOUR),
  });
  await denied(() => all(sasTable(table.tableName, early).listEntities()));
  assert.equal((await all(table.listEntities())).length, 5);

  const writer = sasTable(
    table.tableName,
    generateTableSas(table.tableName, devCredential(), {
      permissions: { query: true, add: true, update: true, delete: true },
      expiresOn: fromNow(HOUR),
    }),
  );
  await writer.createEntity({ partitionKey: "x", rowKey: "1" });
  await writer.upsertEntity({ partitionKey: "x", rowKey: "1", v: 2 }, "Replace");
  await writer.deleteEntity("x", "1");
});

test("generateTableSas: key ranges limit queries and single-entity operations", async (t) => {
  const table = await freshTable(t);
  await seed(table);
  const ranged = sasTable(
    table.tableName,
    generateTableSas(table.tableName, devCredential(), {
      permissions: { query: true, add: true, update: true, delete: true },
      expiresOn: fromNow(HOUR),
      startPartitionKey: "b",
      startRowKey: "2",
      endPartitionKey: "c",
      endRowKey: "9",
    }),
  );
  assert.deepEqual(keys(await all(ranged.listEntities())), ["b5", "c1"]);
  for (const [pk, rk] of [["a", "1"], ["b", "1"], ["d", "1"]]) {
    await outside(() => ranged.getEntity(pk, rk));
    await outside(() => ranged.createEntity({ partitionKey: pk, rowKey: `${rk}x` }));
    await outside(() => ranged.deleteEntity(pk, rk));
  }
  await ranged.createEntity({ partitionKey: "b", rowKey: "3" });
  assert.deepEqual(keys(await all(table.listEntities())), ["a1", "b1", "b3", "b5", "c1", "d1"]);
});

test("generateAccountSas: resource types and permissions", async (t) => {
  const table = await freshTable(t);
  await seed(table);
  const token = generateAccountSas(devCredential(), {
    resourceTypes: "co",
    permissions: { query: true, list: true, add: true },
    expiresOn: fromNow(HOUR),
  });
  const service = new TableServiceClient(endpoint(), new AzureSASCredential(token), { ...CLIENT_OPTIONS });
  const names = (await all(service.listTables())).map((x) => x.name);
  assert.ok(names.includes(table.tableName), names.join(","));
  const other = sasTable(table.tableName, token);
  assert.equal((await all(other.listEntities())).length, 5);
  await other.createEntity({ partitionKey: "n", rowKey: "1" });
  await lacksPermission(() => other.deleteEntity("n", "1"));

  const objectsOnly = generateAccountSas(devCredential(), {
    resourceTypes: "o",
    permissions: { query: true, list: true },
    expiresOn: fromNow(HOUR),
  });
  const limited = new TableServiceClient(endpoint(), new AzureSASCredential(objectsOnly), { ...CLIENT_OPTIONS });
  await expectRestError(() => all(limited.listTables()), 403, "AuthorizationResourceTypeMismatch");
});
