// CORS from a real browser page (issue 16): a page on its own loopback origin calls tableq
// with fetch(); the account's CORS rules decide whether Chromium lets the page see the
// answers (the preflight for the non-simple headers, then the request itself).
//
// Environment (set by scripts/browser-tests.sh):
//   TABLEQ_BROWSER_ENDPOINT  the table endpoint, e.g. http://127.0.0.1:41234/devstoreaccount1
//   TABLEQ_BROWSER_SAS       an account SAS token (srt=sco, sp=rwdlacu) for the page and the test

import assert from "node:assert/strict";
import { test } from "node:test";
import { launchChromium, servePage, unavailableReason } from "../harness.mjs";

const endpoint = (process.env.TABLEQ_BROWSER_ENDPOINT || "").replace(/\/+$/, "");
const sas = process.env.TABLEQ_BROWSER_SAS || "";
const reason = unavailableReason() ?? (endpoint && sas ? null : "TABLEQ_BROWSER_ENDPOINT / TABLEQ_BROWSER_SAS are not set");
if (reason) console.log(`SKIPPED: ${reason}`);

const HEADERS = {
  "x-ms-version": "2019-02-02",
  "content-type": "application/json",
  accept: "application/json;odata=nometadata",
};

async function setCors(origin) {
  const rules = origin
    ? `<Cors><CorsRule><AllowedOrigins>${origin}</AllowedOrigins><AllowedMethods>GET,POST,PUT,MERGE,DELETE</AllowedMethods>` +
      `<MaxAgeInSeconds>0</MaxAgeInSeconds><ExposedHeaders>x-ms-*,etag</ExposedHeaders>` +
      `<AllowedHeaders>x-ms-*,content-type,accept</AllowedHeaders></CorsRule></Cors>`
    : "<Cors/>";
  const response = await fetch(`${endpoint}/?restype=service&comp=properties&${sas}`, {
    method: "PUT",
    headers: { "x-ms-version": "2019-02-02", "content-type": "application/xml" },
    body: `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>${rules}</StorageServiceProperties>`,
  });
  assert.equal(response.status, 202, await response.text());
}

/** In the page: fetch `url` with `init`; returns what the page can see. */
function pageFetch(page, url, init) {
  return page.evaluate(
    async ([url, init]) => {
      try {
        const r = await fetch(url, init);
        return {
          ok: true,
          status: r.status,
          requestId: r.headers.get("x-ms-request-id"),
          etag: r.headers.get("etag"),
          body: await r.text(),
        };
      } catch (e) {
        return { ok: false, error: String(e) };
      }
    },
    [url, init],
  );
}

test("a page on another origin reaches tableq exactly when a CORS rule allows it", { skip: reason ?? false }, async (t) => {
  const site = await servePage("<!doctype html><meta charset=utf-8><title>tableq CORS</title><p>cors</p>");
  t.after(() => site.close());
  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await browser.newPage();
  await page.goto(site.url);

  const table = `cors${Date.now()}`;
  const created = await fetch(`${endpoint}/Tables?${sas}`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ TableName: table }),
  });
  assert.equal(created.status, 201, await created.text());

  // No rule: the browser refuses to hand the answer to the page.
  await setCors(null);
  const refused = await pageFetch(page, `${endpoint}/${table}()?${sas}`, { headers: HEADERS });
  assert.equal(refused.ok, false, JSON.stringify(refused));

  // A rule for the page's origin: insert (preflighted: content-type JSON, x-ms-version), read.
  await setCors(site.origin);
  const insert = await pageFetch(page, `${endpoint}/${table}?${sas}`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ PartitionKey: "p", RowKey: "r", Seen: "from the page" }),
  });
  assert.equal(insert.ok, true, JSON.stringify(insert));
  assert.equal(insert.status, 201, insert.body);
  assert.ok(insert.requestId, "x-ms-request-id is exposed to the page");
  assert.match(insert.etag ?? "", /^W\/"datetime'/);
  const read = await pageFetch(page, `${endpoint}/${table}()?${sas}`, { headers: HEADERS });
  assert.equal(read.status, 200, read.body);
  assert.deepEqual(JSON.parse(read.body).value.map((e) => e.Seen), ["from the page"]);

  // A rule for another origin only: refused again.
  await setCors("http://elsewhere.example");
  const other = await pageFetch(page, `${endpoint}/${table}()?${sas}`, { headers: HEADERS });
  assert.equal(other.ok, false, JSON.stringify(other));
  await setCors(null);
});
