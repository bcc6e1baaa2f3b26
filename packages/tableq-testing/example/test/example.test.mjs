// An example suite using tableq-testing, as a project of yours would. Run with
//   tableq-run node --test
// for the run's server in the environment, and startTableq() for a server of a test's own.

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { TableClient, TableServiceClient, odata } from "@azure/data-tables";
import { startTableq } from "tableq-testing";

// Plain http needs allowInsecureConnection with a key.
const OPTIONS = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };

async function freshTable(connectionString) {
  const name = `t${randomUUID().replaceAll("-", "")}`;
  const client = TableClient.fromConnectionString(connectionString, name, OPTIONS);
  await client.createTable();
  return client;
}

test("the run's server is in the environment", () => {
  assert.match(process.env.TABLEQ_ENDPOINT, /^http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1$/);
  assert.equal(process.env.TABLEQ_ACCOUNT_NAME, "devstoreaccount1");
  assert.ok(process.env.TABLEQ_CONNECTION_STRING.includes(`TableEndpoint=${process.env.TABLEQ_ENDPOINT};`));
  // run-tests.sh checks that this pid is gone once the run is over.
  if (process.env.TABLEQ_PID_FILE) writeFileSync(process.env.TABLEQ_PID_FILE, process.env.TABLEQ_PID);
});

test("insert, query and upsert", async () => {
  const client = await freshTable(process.env.TABLEQ_CONNECTION_STRING);
  try {
    for (let i = 0; i < 10; i++) {
      await client.createEntity({ partitionKey: "p", rowKey: String(i).padStart(2, "0"), age: i * 10 });
    }
    const found = [];
    for await (const e of client.listEntities({ queryOptions: { filter: odata`age ge ${30} and age lt ${70}` } })) {
      found.push(e.rowKey);
    }
    assert.deepEqual(found, ["03", "04", "05", "06"]);

    await client.upsertEntity({ partitionKey: "p", rowKey: "r", a: 1, b: 2 }, "Merge");
    await client.upsertEntity({ partitionKey: "p", rowKey: "r", b: 3 }, "Merge");
    let entity = await client.getEntity("p", "r");
    assert.equal(entity.a, 1);
    assert.equal(entity.b, 3);
    await client.upsertEntity({ partitionKey: "p", rowKey: "r", c: 4 }, "Replace");
    entity = await client.getEntity("p", "r");
    assert.equal(entity.a, undefined);
    assert.equal(entity.c, 4);
  } finally {
    await client.deleteTable();
  }
});

test("a server of the test's own is separate, empty, and stops", async () => {
  const server = await startTableq();
  try {
    assert.notEqual(String(server.pid), process.env.TABLEQ_PID);
    assert.notEqual(server.endpoint, process.env.TABLEQ_ENDPOINT);
    assert.equal(server.accountName, "devstoreaccount1");
    const service = TableServiceClient.fromConnectionString(server.connectionString, OPTIONS);
    const tables = [];
    for await (const t of service.listTables()) tables.push(t.name);
    assert.deepEqual(tables, []);
    const client = await freshTable(server.connectionString);
    await client.createEntity({ partitionKey: "p", rowKey: "r" });
    assert.equal((await client.getEntity("p", "r")).rowKey, "r");
  } finally {
    assert.equal(await server.stop(), 0, "a clean stop exits 0");
  }
  assert.throws(() => process.kill(server.pid, 0), { code: "ESRCH" });
});

test("the global setup/teardown pair (mocha, vitest, jest, node:test >= 24) starts and stops a server", async () => {
  const global = await import("tableq-testing/global");
  const saved = { ...process.env };
  try {
    await global.setup(); // vitest's name; mochaGlobalSetup and globalSetup are the same
    const pid = Number(process.env.TABLEQ_PID);
    assert.notEqual(String(pid), saved.TABLEQ_PID);
    const service = TableServiceClient.fromConnectionString(process.env.TABLEQ_CONNECTION_STRING, OPTIONS);
    await service.createTable("fromglobalsetup");
    await global.teardown();
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.throws(() => process.kill(pid, 0), { code: "ESRCH" });
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
});

test("the SDK's retry policy retries an injected ServerBusy", async () => {
  const server = await startTableq();
  try {
    // The service's 503 ServerBusy, twice, on inserts into this table: the SDK retries
    // (fast here) and the third attempt succeeds.
    await server.setFaults({
      seed: 1,
      rules: [{ table: "retried", operation: "InsertEntity", error: "ServerBusy", next: 2 }],
    });
    const client = TableClient.fromConnectionString(server.connectionString, "retried", {
      allowInsecureConnection: true,
      retryOptions: { maxRetries: 3, retryDelayInMs: 10, maxRetryDelayInMs: 50 },
    });
    await client.createTable();
    await client.createEntity({ partitionKey: "p", rowKey: "1" });
    assert.equal((await client.getEntity("p", "1")).rowKey, "1");
    const report = await server.faults();
    assert.deepEqual(report.fired.map((f) => f.count), [2]);

    await server.reset();
    const service = TableServiceClient.fromConnectionString(server.connectionString, OPTIONS);
    const tables = [];
    for await (const t of service.listTables()) tables.push(t.name);
    assert.deepEqual(tables, [], "a reset leaves no table");
    await assert.rejects(server.setFaults({ rules: [{ error: "Teapot" }] }), /Teapot/);
  } finally {
    await server.stop();
  }
});
