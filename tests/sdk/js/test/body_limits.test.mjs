// Request bodies over the service's 4 MiB limit reach Node's HTTP stacks as the service's
// 413 RequestBodyTooLarge with its JSON error, not as a connection reset: the server reads
// and discards the rest of the body before it answers (issue 16, issue 19). Node writes the
// whole body before it reads the answer: through the SDK, fetch (undici) and node:http. The
// raw requests carry a table SAS token.

import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";
import { AzureNamedKeyCredential, generateTableSas } from "@azure/data-tables";
import { ACCOUNT, ACCOUNT_KEY, all, endpoint, expectRestError, freshTable, thrown } from "./helpers.mjs";

const OVER = 4 * 1024 * 1024 + 512 * 1024; // the limit is 4 MiB
const bigEntity = (rowKey = "r") => ({ partitionKey: "p", rowKey, s: "x".repeat(OVER) });
const bigBody = () => JSON.stringify({ PartitionKey: "p", RowKey: "r", S: "x".repeat(OVER) });

function sasUrl(table) {
  const token = generateTableSas(table.tableName, new AzureNamedKeyCredential(ACCOUNT, ACCOUNT_KEY), {
    permissions: { add: true, query: true },
    expiresOn: new Date(Date.now() + 3600 * 1000),
  });
  return `${endpoint()}/${table.tableName}?${token}`;
}

function assert413Body(text) {
  const error = JSON.parse(text)["odata.error"];
  assert.equal(error.code, "RequestBodyTooLarge", text);
  assert.match(error.message.value, /4194304 bytes/);
}

test("SDK createEntity over the limit: 413 RequestBodyTooLarge", async (t) => {
  const table = await freshTable(t);
  await expectRestError(() => table.createEntity(bigEntity()), 413, "RequestBodyTooLarge");
  await table.createEntity({ partitionKey: "p", rowKey: "small" });
  assert.deepEqual((await all(table.listEntities())).map((e) => e.rowKey), ["small"]);
});

test("SDK submitTransaction over the limit: 413", async (t) => {
  const table = await freshTable(t);
  const actions = Array.from({ length: 100 }, (_, i) => [
    "create",
    { partitionKey: "p", rowKey: `r${String(i).padStart(3, "0")}`, s: "y".repeat(48 * 1024) },
  ]);
  // The SDK does not parse a failed transaction's JSON body into `odataError` (it expects a
  // multipart reply): the status, the header and the message are what it shows.
  const err = await thrown(() => table.submitTransaction(actions));
  assert.equal(err.statusCode, 413, err.message);
  assert.equal(err.response?.headers.get("x-ms-error-code"), "RequestBodyTooLarge");
  assert.match(err.message, /request body is too large/);
  assert.deepEqual(await all(table.listEntities()), []);
});

test("fetch over the limit: 413 with the JSON error", async (t) => {
  const table = await freshTable(t);
  const response = await fetch(sasUrl(table), {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json;odata=nometadata" },
    body: bigBody(),
  });
  assert.equal(response.status, 413);
  assert.equal(response.headers.get("x-ms-error-code"), "RequestBodyTooLarge");
  assert413Body(await response.text());
});

test("node:http over the limit: 413 with the JSON error", async (t) => {
  const table = await freshTable(t);
  const body = bigBody();
  const [status, text] = await new Promise((resolve, reject) => {
    const request = http.request(
      sasUrl(table),
      {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk) => (text += chunk));
        response.on("end", () => resolve([response.statusCode, text]));
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(body);
  });
  assert.equal(status, 413);
  assert413Body(text);
});
