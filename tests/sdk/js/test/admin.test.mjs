// Service properties, service stats, table access policies, SAS with a stored policy
// (identifier) and the authorization codes, through @azure/data-tables (issue 16): the
// methods of TableServiceClient and TableClient the other files do not cover.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  AzureNamedKeyCredential,
  AzureSASCredential,
  TableClient,
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
  serviceClient,
} from "./helpers.mjs";

const credential = new AzureNamedKeyCredential(ACCOUNT, ACCOUNT_KEY);

/** An XML operation (service properties, ACLs) failed with `status` and `code`: the SDK
 *  reads the code of these operations from `x-ms-error-code` (`err.details.errorCode`). */
async function expectXmlOpError(action, status, code) {
  let err;
  try {
    await action();
  } catch (e) {
    err = e;
  }
  assert.ok(err, "expected an error, but the call succeeded");
  assert.equal(err.statusCode, status, err.message);
  assert.equal(err.response?.headers.get("x-ms-error-code"), code, err.message);
  assert.equal(err.details?.errorCode, code, err.message);
}
const hourFromNow = () => new Date(Date.now() + 3600 * 1000);

/** Runs `body` with the account's service properties put back afterwards. */
async function withProperties(body) {
  const service = serviceClient();
  const before = await service.getProperties();
  try {
    await body(service);
  } finally {
    await service.setProperties({
      logging: before.logging,
      hourMetrics: before.hourMetrics,
      minuteMetrics: before.minuteMetrics,
      cors: before.cors ?? [],
    });
  }
}

test("getProperties / setProperties round trip, a set keeps what it does not name", async () => {
  await withProperties(async (service) => {
    await service.setProperties({
      logging: { version: "1.0", delete: true, read: false, write: true, retentionPolicy: { enabled: true, days: 4 } },
      hourMetrics: { version: "1.0", enabled: true, includeAPIs: false, retentionPolicy: { enabled: false } },
      minuteMetrics: { version: "1.0", enabled: false, retentionPolicy: { enabled: false } },
      cors: [
        {
          allowedOrigins: "http://app.example",
          allowedMethods: "GET,MERGE",
          allowedHeaders: "x-ms-*",
          exposedHeaders: "*",
          maxAgeInSeconds: 30,
        },
      ],
    });
    const got = await service.getProperties();
    assert.equal(got.logging.delete, true);
    assert.equal(got.logging.retentionPolicy.days, 4);
    assert.equal(got.hourMetrics.enabled, true);
    assert.equal(got.hourMetrics.includeAPIs, false);
    assert.equal(got.cors.length, 1);
    assert.equal(got.cors[0].allowedMethods, "GET,MERGE");
    assert.equal(got.cors[0].maxAgeInSeconds, 30);

    await service.setProperties({ cors: [] });
    const after = await service.getProperties();
    assert.deepEqual(after.cors ?? [], []);
    assert.equal(after.logging.delete, true);

    const sixRules = Array.from({ length: 6 }, () => ({
      allowedOrigins: "*", allowedMethods: "GET", allowedHeaders: "", exposedHeaders: "", maxAgeInSeconds: 1,
    }));
    // As the service answers it (docs/rest.md, protocol notes).
    await expectXmlOpError(() => service.setProperties({ cors: sixRules }), 400, "InvalidXmlDocument");
  });
});

test("getStatistics is answered on the secondary endpoint", async () => {
  const service = serviceClient();
  // @azure/data-tables finds the secondary by renaming the first label of the host
  // (`acct.table…` → `acct-secondary.table…`). For a path-style endpoint on an IP address the
  // new host name is invalid and the URL setter ignores it, so the request goes to the
  // primary path, where the service answers 400 (checked first). Point it where the Python
  // SDK points for such endpoints — `/devstoreaccount1-secondary` (this policy runs after the
  // SDK signed the primary path, as its own rerouting does; the server accepts that, as the
  // service accepts a secondary request signed like the primary one).
  await expectXmlOpError(() => service.getStatistics(), 400, "InvalidQueryParameterValue");
  service.pipeline.addPolicy({
    name: "pathStyleSecondary",
    async sendRequest(request, next) {
      const url = new URL(request.url);
      if (url.searchParams.get("comp") === "stats" && url.pathname.startsWith(`/${ACCOUNT}/`)) {
        url.pathname = url.pathname.replace(`/${ACCOUNT}/`, `/${ACCOUNT}-secondary/`);
        request.url = url.toString();
      }
      return next(request);
    },
  });
  const stats = await service.getStatistics();
  assert.equal(stats.geoReplication.status, "live");
  assert.ok(stats.geoReplication.lastSyncTime instanceof Date);
  assert.ok(Math.abs(Date.now() - stats.geoReplication.lastSyncTime.getTime()) < 600_000);
});

test("getAccessPolicy / setAccessPolicy round trip and limits", async (t) => {
  const table = await freshTable(t, "jsacl");
  assert.deepEqual(await table.getAccessPolicy(), []);
  await table.setAccessPolicy([
    { id: "readers", accessPolicy: { start: new Date("2030-01-01T00:00:00Z"), expiry: new Date("2031-01-01T00:00:00Z"), permission: "r" } },
    { id: "writers", accessPolicy: { expiry: new Date("2031-01-01T00:00:00Z"), permission: "raud" } },
  ]);
  const got = await table.getAccessPolicy();
  assert.deepEqual(got.map((s) => s.id), ["readers", "writers"]);
  assert.equal(got[0].accessPolicy.permission, "r");
  assert.equal(new Date(got[0].accessPolicy.start).toISOString(), "2030-01-01T00:00:00.000Z");
  assert.equal(new Date(got[1].accessPolicy.expiry).toISOString(), "2031-01-01T00:00:00.000Z");
  const six = Array.from({ length: 6 }, (_, i) => ({ id: `p${i}`, accessPolicy: { permission: "r" } }));
  await expectXmlOpError(() => table.setAccessPolicy(six), 400, "InvalidXmlDocument");
  await table.setAccessPolicy([]);
  assert.deepEqual(await table.getAccessPolicy(), []);
});

test("generateTableSas with an identifier follows the stored policy at once", async (t) => {
  const table = await freshTable(t, "jspol");
  await table.createEntity({ partitionKey: "p", rowKey: "r" });
  await table.setAccessPolicy([{ id: "team", accessPolicy: { expiry: hourFromNow(), permission: "r" } }]);
  const token = generateTableSas(table.tableName, credential, { identifier: "team" });
  const sas = new TableClient(endpoint(), table.tableName, new AzureSASCredential(token), { ...CLIENT_OPTIONS });
  assert.deepEqual((await all(sas.listEntities())).map((e) => e.rowKey), ["r"]);
  await expectRestError(() => sas.createEntity({ partitionKey: "p", rowKey: "n" }), 403, "AuthorizationPermissionMismatch");
  await table.setAccessPolicy([{ id: "team", accessPolicy: { expiry: hourFromNow(), permission: "ra" } }]);
  await sas.createEntity({ partitionKey: "p", rowKey: "n" });
  await table.setAccessPolicy([]);
  await expectRestError(() => all(sas.listEntities()), 403, "AuthenticationFailed");
});

test("authorization codes: permission, range, resource type", async (t) => {
  const table = await freshTable(t, "jscodes");
  await table.createEntity({ partitionKey: "b", rowKey: "1" });
  const reader = new TableClient(
    endpoint(),
    table.tableName,
    new AzureSASCredential(generateTableSas(table.tableName, credential, { permissions: { query: true }, expiresOn: hourFromNow() })),
    { ...CLIENT_OPTIONS },
  );
  await expectRestError(() => reader.createEntity({ partitionKey: "b", rowKey: "2" }), 403, "AuthorizationPermissionMismatch");
  const ranged = new TableClient(
    endpoint(),
    table.tableName,
    new AzureSASCredential(
      generateTableSas(table.tableName, credential, {
        permissions: { query: true },
        expiresOn: hourFromNow(),
        startPartitionKey: "a",
        endPartitionKey: "a",
      }),
    ),
    { ...CLIENT_OPTIONS },
  );
  await expectRestError(() => ranged.getEntity("b", "1"), 403, "AuthorizationFailure");
});

test("the Timestamp of a read entity is a string, as against the service", async (t) => {
  const table = await freshTable(t, "jsstamp");
  await table.createEntity({ partitionKey: "p", rowKey: "r" });
  const entity = await table.getEntity("p", "r");
  assert.equal(typeof entity.timestamp, "string", `timestamp is ${typeof entity.timestamp}`);
  const [listed] = await all(table.listEntities());
  assert.equal(typeof listed.timestamp, "string");
});
