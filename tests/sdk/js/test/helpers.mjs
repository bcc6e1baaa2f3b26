// Helpers shared by the JS SDK tests (@azure/data-tables against `tableq serve`).
//
// Environment (set by scripts/sdk-tests.sh):
//   TABLEQ_SDK_ENDPOINT  the table endpoint, e.g. http://127.0.0.1:41234/devstoreaccount1
//   TABLEQ_BIN           the tableq binary, for the test that starts its own server

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { RestError, TableClient, TableServiceClient } from "@azure/data-tables";

export const ACCOUNT = "devstoreaccount1";
export const ACCOUNT_KEY =
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

// W/"datetime'2021-06-09T01%3A17%3A08.3795894Z'"  (rest.md: ':' percent-encoded)
export const ETAG_RE = /^W\/"datetime'(\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(?:\.\d{1,7})?Z)'"$/;

// No retries (a failure shows at once); plain http needs allowInsecureConnection with an
// explicit connection string (the SDK sets it itself for UseDevelopmentStorage=true).
export const CLIENT_OPTIONS = { retryOptions: { maxRetries: 0 }, allowInsecureConnection: true };

export function endpoint() {
  const value = process.env.TABLEQ_SDK_ENDPOINT;
  if (!value) throw new Error("TABLEQ_SDK_ENDPOINT is not set: run the suite with scripts/sdk-tests.sh");
  return value.replace(/\/+$/, "");
}

export function connectionString(url = endpoint()) {
  return (
    `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${ACCOUNT_KEY};` +
    `TableEndpoint=${url};`
  );
}

export function uniqueName(prefix = "js") {
  return prefix + randomUUID().replace(/-/g, "").slice(0, 12);
}

export function serviceClient(url = endpoint()) {
  return TableServiceClient.fromConnectionString(connectionString(url), { ...CLIENT_OPTIONS });
}

export function tableClient(name, url = endpoint()) {
  return TableClient.fromConnectionString(connectionString(url), name, { ...CLIENT_OPTIONS });
}

/** A fresh table for one test (node:test context `t`), deleted when the test ends. */
export async function freshTable(t, prefix = "js") {
  const client = tableClient(uniqueName(prefix));
  await client.createTable();
  t.after(() => client.deleteTable());
  return client;
}

/** Awaits `action` (a promise or a function returning one) and returns what it threw. */
export async function thrown(action) {
  try {
    await (typeof action === "function" ? action() : action);
  } catch (err) {
    return err;
  }
  assert.fail("expected an error, but the call succeeded");
}

/** The call fails with a RestError carrying `status` and the service error `code` (in the
 *  odata.error body and in x-ms-error-code). @azure/data-tables 13.3.2 leaves `err.code`
 *  undefined for table errors (core-client looks for a top-level `error` object), so the
 *  code is read where the SDK puts it: `err.response.parsedBody.odataError.code`. */
export async function expectRestError(action, status, code) {
  const err = await thrown(action);
  assert.ok(err instanceof RestError, `expected a RestError, got ${err?.name}: ${err?.message}`);
  assert.equal(err.statusCode, status, `status ${err.statusCode}, expected ${status}: ${err.message}`);
  assert.equal(errorCode(err), code, `odata.error.code: ${err.message}`);
  assert.equal(err.response?.headers.get("x-ms-error-code"), code, "x-ms-error-code header");
  return err;
}

export function errorCode(err) {
  return err?.response?.parsedBody?.odataError?.code;
}

export function errorMessage(err) {
  return err?.response?.parsedBody?.odataError?.message?.value ?? "";
}

/** Records every request the client sends (after signing): method, headers, status, code. */
export function recordRequests(client) {
  const calls = [];
  client.pipeline.addPolicy(
    {
      name: "tableqRecorder",
      async sendRequest(request, next) {
        const response = await next(request);
        calls.push({
          method: request.method,
          url: request.url,
          ifMatch: request.headers.get("If-Match") ?? null,
          prefer: request.headers.get("Prefer") ?? null,
          xHttpMethod: request.headers.get("X-HTTP-Method") ?? null,
          authorization: request.headers.get("Authorization") ?? null,
          status: response.status,
          code: response.headers.get("x-ms-error-code") ?? null,
        });
        return response;
      },
    },
    { afterPhase: "Sign" },
  );
  return calls;
}

/** The Timestamp text inside an ETag (`%3A` decoded). */
export function etagTimestamp(etag) {
  const match = ETAG_RE.exec(etag ?? "");
  assert.ok(match, `not an ETag of the form W/"datetime'...'": ${etag}`);
  return match[1].replaceAll("%3A", ":");
}

/**
 * The exact Timestamp of an entity the SDK returned, as text (7 fraction digits at most).
 *
 * Minimal metadata carries the Timestamp bare, as the service does (rest.md, "Payloads"),
 * so the SDK hands it over as the exact text; full metadata annotates it, and the SDK then
 * converts it to a `Date` (millisecond precision). The exact value is also the one in the
 * ETag: this checks that both agree and returns the exact text.
 */
export function entityTimestamp(entity) {
  const exact = etagTimestamp(entity.etag);
  const ts = entity.timestamp;
  if (ts instanceof Date) {
    assert.equal(ts.getTime(), new Date(exact).getTime(), `timestamp ${ts.toISOString()} vs ETag ${exact}`);
  } else {
    assert.equal(ts, exact);
  }
  return exact;
}

/** The custom properties of an entity as the SDK returns it (keys and metadata dropped). */
export function customProps(entity) {
  const { partitionKey, rowKey, etag, timestamp, "odata.metadata": _, ...rest } = entity;
  return rest;
}

/** Collects every entity of an async iterable. */
export async function all(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** Collects pages (arrays) of `byPage()`. */
export async function pages(iterable) {
  const out = [];
  for await (const page of iterable) out.push([...page]);
  return out;
}
