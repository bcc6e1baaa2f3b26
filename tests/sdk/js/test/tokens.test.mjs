// HTTPS and Entra ID tokens: @azure/data-tables with @azure/identity's ClientSecretCredential
// against `tableq serve --tls self-signed`, its local issuer as the authority host.
//
// The runner (scripts/sdk-tests.sh) starts that server, sets TABLEQ_SDK_TLS_ENDPOINT,
// TABLEQ_SDK_TLS_HTTP_ENDPOINT, TABLEQ_SDK_TLS_AUTHORITY, and starts node with
// NODE_EXTRA_CA_CERTS set to the server's CA (as a user would). The server runs its local
// issuer with two registered clients: `reader-app` (secret `reader-secret`, Storage Table
// Data Reader) and `contributor-app` (secret `contributor-secret`, Contributor); any other
// client or a wrong secret gets no token. Skipped without them.

import assert from "node:assert/strict";
import { test } from "node:test";
import { AzureNamedKeyCredential, AzureSASCredential, TableClient, TableServiceClient, generateAccountSas } from "@azure/data-tables";
import { ClientSecretCredential } from "@azure/identity";
import { ACCOUNT, ACCOUNT_KEY, expectRestError, thrown, uniqueName } from "./helpers.mjs";

const TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const ENDPOINT = process.env.TABLEQ_SDK_TLS_ENDPOINT;
const HTTP_ENDPOINT = process.env.TABLEQ_SDK_TLS_HTTP_ENDPOINT;
const AUTHORITY = process.env.TABLEQ_SDK_TLS_AUTHORITY;
const SKIP = !ENDPOINT || !AUTHORITY
  ? "no HTTPS server in this run (TABLEQ_SDK_TLS_* unset: PostgreSQL runs)"
  : false;
const OPTIONS = { retryOptions: { maxRetries: 0 } };

const SECRETS = { "reader-app": "reader-secret", "contributor-app": "contributor-secret" };

function credential(clientId, secret = SECRETS[clientId]) {
  return new ClientSecretCredential(TENANT, clientId, secret, {
    authorityHost: AUTHORITY,
    disableInstanceDiscovery: true,
  });
}

test("a contributor token runs the whole flow over HTTPS", { skip: SKIP }, async () => {
  const cred = credential("contributor-app");
  const service = new TableServiceClient(ENDPOINT, cred, OPTIONS);
  const name = uniqueName("tok");
  await service.createTable(name);
  const table = new TableClient(ENDPOINT, name, cred, OPTIONS);
  try {
    await table.createEntity({ partitionKey: "p", rowKey: "1", n: 1, s: "one" });
    await table.upsertEntity({ partitionKey: "p", rowKey: "2", n: 2 }, "Replace");
    await table.updateEntity({ partitionKey: "p", rowKey: "1", m: "x" }, "Merge");
    const got = await table.getEntity("p", "1");
    assert.deepEqual([got.n, got.s, got.m], [1, "one", "x"]);
    await table.submitTransaction([
      ["create", { partitionKey: "p", rowKey: "3", n: 3 }],
      ["upsert", { partitionKey: "p", rowKey: "4", n: 4 }],
      ["delete", { partitionKey: "p", rowKey: "2" }],
    ]);
    const rows = [];
    for await (const e of table.listEntities({ queryOptions: { filter: "n ge 2" } })) rows.push(e.rowKey);
    assert.deepEqual(rows.sort(), ["3", "4"]);
    const names = [];
    for await (const t of service.listTables()) names.push(t.name);
    assert.ok(names.includes(name));
    await table.deleteEntity("p", "3");
  } finally {
    await service.deleteTable(name);
  }
});

test("a reader token reads but cannot write", { skip: SKIP }, async () => {
  const writer = new TableClient(ENDPOINT, uniqueName("tokr"), credential("contributor-app"), OPTIONS);
  await writer.createTable();
  try {
    await writer.createEntity({ partitionKey: "p", rowKey: "1", n: 1 });
    const reader = new TableClient(ENDPOINT, writer.tableName, credential("reader-app"), OPTIONS);
    assert.equal((await reader.getEntity("p", "1")).n, 1);
    await expectRestError(() => reader.createEntity({ partitionKey: "p", rowKey: "2" }), 403, "AuthorizationPermissionMismatch");
    await expectRestError(() => reader.deleteEntity("p", "1"), 403, "AuthorizationPermissionMismatch");
    // A refused batch: the SDK does not parse a non-multipart body, the header says it.
    const err = await thrown(() => reader.submitTransaction([["create", { partitionKey: "p", rowKey: "9" }]]));
    assert.equal(err.statusCode, 403);
    assert.equal(err.response?.headers.get("x-ms-error-code"), "AuthorizationPermissionMismatch");
  } finally {
    await writer.deleteTable();
  }
});

test("SharedKey and SAS keep working over HTTPS", { skip: SKIP }, async () => {
  const key = new AzureNamedKeyCredential(ACCOUNT, ACCOUNT_KEY);
  const table = new TableClient(ENDPOINT, uniqueName("tokk"), key, OPTIONS);
  await table.createTable();
  try {
    await table.createEntity({ partitionKey: "p", rowKey: "1" });
    const sas = generateAccountSas(key, {
      permissions: { query: true, list: true },
      resourceTypes: "sco",
      expiresOn: new Date(Date.now() + 3600_000),
    });
    const bySas = new TableClient(ENDPOINT, table.tableName, new AzureSASCredential(sas), OPTIONS);
    const rows = [];
    for await (const e of bySas.listEntities()) rows.push(e.rowKey);
    assert.deepEqual(rows, ["1"]);
  } finally {
    await table.deleteTable();
  }
});

test("a token over plain HTTP is refused", { skip: SKIP || !HTTP_ENDPOINT }, async () => {
  const token = await credential("contributor-app").getToken("https://storage.azure.com/.default");
  const reply = await fetch(`${HTTP_ENDPOINT}/Tables`, {
    headers: { Authorization: `Bearer ${token.token}`, "x-ms-version": "2019-02-02" },
  });
  assert.equal(reply.status, 403);
  assert.equal(reply.headers.get("x-ms-error-code"), "AuthenticationFailed");
  assert.match(reply.headers.get("www-authenticate"), /^Bearer authorization_uri=https:\/\/.*resource_id=https:\/\/storage\.azure\.com/);
});

test("strangers and wrong secrets get no token", { skip: SKIP }, async () => {
  for (const [clientId, secret] of [["random-stranger", "x"], ["contributor-app", "made-up"]]) {
    const err = await thrown(() => credential(clientId, secret).getToken("https://storage.azure.com/.default"));
    // @azure/identity surfaces Entra ID's answer (invalid_client, AADSTS7000215).
    assert.match(err.name, /Authentication/, String(err));
    assert.match(String(err.message), /invalid_client/);
    assert.match(String(err.message), /AADSTS7000215/);
    const service = new TableServiceClient(ENDPOINT, credential(clientId, secret), OPTIONS);
    await assert.rejects(() => service.createTable(uniqueName("stolen")));
  }
});
