// tableq's injected faults seen by the SDK (issue 30): the SDK's retry policy retries an
// injected ServerBusy and the call succeeds. The rules are armed through tableq's
// administrative endpoint (PUT /{account}/?restype=tableq&comp=faults, signed with the
// account key), confined to this test's table, and cleared afterwards.

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import { TableClient } from "@azure/data-tables";
import { ACCOUNT, ACCOUNT_KEY, connectionString, endpoint, freshTable } from "./helpers.mjs";

/** `method` on the account's fault rules, signed with SharedKeyLite: { status, body }. */
async function faultsRequest(method, body) {
  const url = new URL(endpoint());
  const path = url.pathname.replace(/\/+$/, "") + "/";
  const date = new Date().toUTCString();
  const signature = createHmac("sha256", Buffer.from(ACCOUNT_KEY, "base64"))
    .update(`${date}\n/${ACCOUNT}${path}?comp=faults`)
    .digest("base64");
  const response = await fetch(`${url.origin}${path}?restype=tableq&comp=faults`, {
    method,
    body,
    headers: {
      "x-ms-date": date,
      "x-ms-version": "2019-02-02",
      Authorization: `SharedKeyLite ${ACCOUNT}:${signature}`,
      "Content-Type": "application/json",
    },
  });
  return { status: response.status, body: await response.text() };
}

test("the retry policy retries an injected ServerBusy", async (t) => {
  const table = await freshTable(t, "jsretry");
  const rules = {
    rules: [
      { name: "busy twice", table: table.tableName, operation: "InsertEntity", error: "ServerBusy", next: 2 },
    ],
  };
  assert.equal((await faultsRequest("PUT", JSON.stringify(rules))).status, 204);
  t.after(() => faultsRequest("DELETE"));
  // The SDK's default retry policy (retries on 503), with short delays.
  const retrying = TableClient.fromConnectionString(connectionString(), table.tableName, {
    retryOptions: { maxRetries: 3, retryDelayInMs: 20, maxRetryDelayInMs: 100 },
    allowInsecureConnection: true,
  });
  await retrying.createEntity({ partitionKey: "p", rowKey: "1", n: 1 });
  assert.equal((await table.getEntity("p", "1")).n, 1);
  const report = await faultsRequest("GET");
  assert.equal(report.status, 200);
  assert.deepEqual(JSON.parse(report.body).fired, [{ rule: "busy twice", count: 2 }]);
});
