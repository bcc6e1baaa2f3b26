// The table explorer (issue 21) in a real browser: the pages tableq serves under
// /_explorer/, driven as a user would — sign in with the development key, create a table,
// import JSON lines, filter with a typo and see the caret, fix it and see the plan and the
// rows, page forward, edit an entity, and provoke an ETag conflict. Along the way, the
// layout papercuts stay mended: the run statistics fit their panel, the import drawer's
// example wraps, the type list shows whole type names, the ETag note shows only beside
// Replace/Merge, empty keys show as "(empty)"; and a read-only SAS is offered no New/Import.
//
// Environment (set by scripts/browser-tests.sh):
//   TABLEQ_BROWSER_ENDPOINT     the table endpoint, e.g. http://127.0.0.1:41234/devstoreaccount1
//   TABLEQ_BROWSER_SAS          an account SAS token (srt=sco, sp=rwdlacu): the "someone else"
//                               who changes an entity behind the page's back
//   TABLEQ_BROWSER_SAS_READONLY an account SAS token that may only read and list (sp=rl)
//   TABLEQ_EXPLORER_SCREENSHOTS optional: a directory to save screenshots of the main pages
//                               into (how the images in docs/ are made)

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { launchChromium, unavailableReason } from "../harness.mjs";

const endpoint = (process.env.TABLEQ_BROWSER_ENDPOINT || "").replace(/\/+$/, "");
const sas = process.env.TABLEQ_BROWSER_SAS || "";
const readOnlySas = process.env.TABLEQ_BROWSER_SAS_READONLY || "";
const shots = process.env.TABLEQ_EXPLORER_SCREENSHOTS || "";
const reason = unavailableReason() ?? (endpoint && sas ? null : "TABLEQ_BROWSER_ENDPOINT / TABLEQ_BROWSER_SAS are not set");
if (reason) console.log(`SKIPPED: ${reason}`);

const origin = endpoint ? new URL(endpoint).origin : "";
const WAIT = { timeout: 15_000 };

/** The JSON lines imported: 5 partitions × 50 rows with every awkward type, plus one bad line. */
function jsonLines() {
  const lines = [];
  for (let p = 0; p < 5; p++) {
    for (let i = 0; i < 50; i++) {
      const n = String(i).padStart(3, "0");
      lines.push(
        JSON.stringify({
          PartitionKey: `p${p}`,
          RowKey: `r${n}`,
          Age: i,
          "Big@odata.type": "Edm.Int64",
          Big: `9007199254741${String(100 + i)}`, // past 2^53: no JS number holds it
          "When@odata.type": "Edm.DateTime",
          When: `2024-01-02T03:04:05.12345${String(10 + i)}Z`,
          "Id@odata.type": "Edm.Guid",
          Id: `c9da6455-213d-42c9-9a79-3e9149a578${String(10 + i)}`,
          "Blob@odata.type": "Edm.Binary",
          Blob: "AQID",
          Note: `row ${p}/${n}`,
        }),
      );
    }
  }
  // An Int64 that is no integer: the server refuses this line, the import reports it.
  lines.push('{"PartitionKey":"p9","RowKey":"bad","Big@odata.type":"Edm.Int64","Big":"twelve"}');
  return `${lines.join("\n")}\n`;
}

async function screenshot(page, name) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, `${name}.png`) });
}

/** The grid's cell texts: [{ pk, rk, cells: { column: text } }]. */
function gridRows(page) {
  return page.$$eval("#grid tbody tr[data-pk]", (rows) => {
    const heads = [...document.querySelectorAll("#grid thead th")].map((th) => th.dataset.column);
    return rows.map((tr) => ({
      pk: tr.dataset.pk,
      rk: tr.dataset.rk,
      cells: Object.fromEntries([...tr.children].map((td, i) => [heads[i], td.lastChild?.textContent ?? ""])),
    }));
  });
}

/** Whether the element `selector` lies within `container` (both visible): [fits, detail]. */
function fitsInside(page, selector, container) {
  return page.evaluate(
    ([selector, container]) => {
      const el = document.querySelector(selector);
      const box = document.querySelector(container);
      if (!el || !box) return [false, `missing ${el ? container : selector}`];
      const a = el.getBoundingClientRect();
      const b = box.getBoundingClientRect();
      const fits = a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && el.scrollWidth <= el.clientWidth + 1;
      return [fits, `${selector} [${a.left}, ${a.right}] scrollWidth ${el.scrollWidth} clientWidth ${el.clientWidth}; ${container} [${b.left}, ${b.right}]`];
    },
    [selector, container],
  );
}

/** Sets the editor's value of property `name`. */
function setProperty(page, name, text) {
  return page.evaluate(
    ([name, text]) => {
      const row = [...document.querySelectorAll("#editor-props .prop")].find((r) => r.querySelector(".prop-name").value === name);
      if (!row) throw new Error(`no property ${name} in the editor`);
      const input = row.querySelector(".prop-value");
      input.value = text;
      input.dispatchEvent(new Event("input", { bubbles: true }));
    },
    [name, text],
  );
}

test("the explorer: tables, import, caret diagnostics, plan, paging, editing, ETag conflicts", { skip: reason ?? false, timeout: 120_000 }, async (t) => {
  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await browser.newPage();
  await page.setViewportSize({ width: 1280, height: 860 });
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  // Chromium logs every refused fetch (the bad import line, the conflict): those are expected.
  page.on("console", (m) => m.type() === "error" && !m.text().startsWith("Failed to load resource") && problems.push(`console: ${m.text()}`));

  // The files: strict CSP, ETag revalidation.
  const index = await fetch(`${origin}/_explorer/`);
  assert.equal(index.status, 200);
  assert.match(index.headers.get("content-type"), /^text\/html/);
  assert.match(index.headers.get("content-security-policy"), /script-src 'self'/);
  const again = await fetch(`${origin}/_explorer/`, { headers: { "if-none-match": index.headers.get("etag") } });
  assert.equal(again.status, 304);

  // Sign in: authorization is on, the page asks for a credential.
  await page.goto(`${origin}/_explorer`);
  await page.waitForSelector("#login-secret", WAIT);
  await screenshot(page, "explorer-sign-in");
  await page.fill("#login-secret", "UseDevelopmentStorage=true");
  await page.click("#login-submit");
  await page.waitForSelector("#new-table", WAIT);

  // Create a table.
  const table = `explorer${Date.now()}`;
  await page.fill("#new-table", table);
  await page.click("#create-table");
  await page.waitForSelector(`#tables tr[data-table="${table}"]`, WAIT);
  await page.click(`#tables tr[data-table="${table}"] a`);
  await page.waitForSelector("#grid", WAIT);

  // Import JSON lines: 250 loaded in $batch changesets, the bad line reported by number.
  await page.click("#open-import");
  const [exampleFits, exampleDetail] = await fitsInside(page, "#import-example", "#import");
  assert.ok(exampleFits, `the import drawer's example line wraps inside the drawer: ${exampleDetail}`);
  await page.setInputFiles("#import-file", { name: "rows.jsonl", mimeType: "application/x-ndjson", buffer: Buffer.from(jsonLines()) });
  await page.click("#import-start");
  const summary = await page.waitForSelector("#import-summary", WAIT);
  assert.match(await summary.textContent(), /250 loaded, 1 rejected, 251 lines read/);
  assert.match(await page.textContent("#import-rejections"), /line 251: InvalidInput/);
  await page.click("#import-close");
  await page.waitForFunction(() => document.querySelector("#results")?.dataset.rows === "100", null, WAIT);

  // A typo: the server's parser answers as the user types, with the caret under it.
  await page.fill("#top", "20");
  await page.fill("#filter", "PartitionKey eq 'p1' adn Age gt 3");
  const carets = await page.waitForSelector("#diagnostic .carets", WAIT);
  const caretText = await carets.textContent();
  assert.match(caretText, /adn/);
  assert.match(caretText, /\^\^\^/);
  assert.equal(await page.getAttribute("#filter", "aria-invalid"), "true");
  const diagnostic = await page.textContent("#diagnostic");
  assert.match(diagnostic, /expected: /);
  assert.match(diagnostic, /`and`/);
  assert.match(await page.textContent("#plan"), /No plan: \$filter is not valid/, "no stale plan beside a diagnostic");
  await screenshot(page, "explorer-diagnostic");

  // Fixed: the plan (one partition, the residual, inexact), then the rows and the statistics.
  await page.fill("#filter", "PartitionKey eq 'p1' and Age gt 3");
  await page.waitForSelector("#diagnostic .carets", { state: "detached", ...WAIT });
  await page.waitForFunction(() => document.querySelector("#plan-shape")?.textContent === "partition", null, WAIT);
  assert.equal(await page.textContent("#plan-residual"), "Age gt 3");
  assert.match(await page.textContent("#plan"), /inexact/);
  await page.press("#filter", "Enter");
  await page.waitForFunction(() => document.querySelector("#stat-pages")?.textContent === "1", null, WAIT);
  await page.waitForFunction(() => document.querySelector("#results")?.dataset.rows === "20", null, WAIT);
  let rows = await gridRows(page);
  assert.deepEqual([rows[0].pk, rows[0].rk, rows.at(-1).rk], ["p1", "r004", "r023"]);
  // Typed columns, values as the wire has them: Int64 digits, 7-digit DateTimes, Binary.
  const types = await page.$$eval("#grid thead th", (ths) => Object.fromEntries(ths.map((th) => [th.dataset.column, th.querySelector(".type").textContent])));
  assert.deepEqual(
    [types.Age, types.Big, types.When, types.Id, types.Blob, types.Note],
    ["Int32", "Int64", "DateTime", "Guid", "Binary", "String"],
  );
  assert.equal(rows[0].cells.Big, "9007199254741104");
  assert.equal(rows[0].cells.When, "2024-01-02T03:04:05.1234514Z");
  assert.equal(rows[0].cells.Id, "c9da6455-213d-42c9-9a79-3e9149a57814");
  assert.equal(rows[0].cells.Blob, "01 02 03 (3 B)");
  // The partition is read in key order until the page is full: r000…r023, 4 of them filtered out.
  assert.equal(await page.textContent("#stat-examined"), "24");
  assert.equal(await page.textContent("#stat-matched"), "20");
  // The run statistics fit their panel, the `time` column included, wherever the panel sits
  // beside the grid (1280 and 1400 px wide).
  for (const width of [1280, 1400]) {
    await page.setViewportSize({ width, height: 860 });
    const [statsFit, statsDetail] = await fitsInside(page, "#stats .table-scroll", "#explain");
    assert.ok(statsFit, `at ${width} px the run statistics fit their panel: ${statsDetail}`);
    const [timeFits, timeDetail] = await fitsInside(page, "#stats-pages th:last-child", "#stats .table-scroll");
    assert.ok(timeFits, `at ${width} px the time column is not cut: ${timeDetail}`);
  }
  await page.setViewportSize({ width: 1280, height: 860 });
  await screenshot(page, "explorer-table");

  // Page forward with the continuation: 20 more, then the last 6.
  await page.click(".next-page >> nth=0");
  await page.waitForFunction(() => document.querySelector("#stat-pages")?.textContent === "2", null, WAIT);
  rows = await gridRows(page);
  assert.deepEqual([rows.length, rows[0].rk, rows.at(-1).rk], [20, "r024", "r043"]);
  await page.click(".next-page >> nth=0");
  await page.waitForFunction(() => document.querySelector("#results")?.dataset.rows === "6", null, WAIT);
  assert.equal(await page.isDisabled(".next-page >> nth=0"), true, "the last page has no next");
  assert.match(await page.textContent(".page-info"), /page 3 · last page/);

  // Edit an entity: open it from the grid, merge a change.
  await page.click('#grid tr[data-rk="r049"]');
  await page.waitForSelector("#editor-merge", WAIT);
  const etag = await page.textContent("#editor-etag");
  assert.match(etag, /^W\/"datetime'/);
  assert.equal(await page.inputValue("#editor-pk"), "p1");
  assert.equal(await page.isVisible("#editor-etag-note"), true, "the If-Match note is shown beside Replace/Merge");
  // Every type list is at least as wide as its longest name needs (no "DateTim").
  const cut = await page.$$eval("#editor-props .prop-type", (selects) =>
    selects
      .map((s) => {
        const natural = s.cloneNode(true);
        natural.style.cssText = "position:absolute;visibility:hidden;width:auto";
        document.body.append(natural);
        const need = natural.getBoundingClientRect().width;
        natural.remove();
        return [s.value, s.getBoundingClientRect().width, need];
      })
      .filter(([, has, need]) => has + 0.5 < need),
  );
  assert.deepEqual(cut, [], "type lists narrower than their names: [type, width, needed]");
  await setProperty(page, "Note", "edited in the explorer");
  await page.click("#editor-merge");
  await page.waitForFunction((old) => document.querySelector("#editor-etag")?.textContent !== old, etag, WAIT);
  assert.match(await page.textContent("#editor-status"), /Merged/);
  const read = await fetch(`${endpoint}/${table}(PartitionKey='p1',RowKey='r049')?${sas}`, {
    headers: { "x-ms-version": "2019-02-02", accept: "application/json;odata=nometadata" },
  });
  const stored = await read.json();
  assert.equal(stored.Note, "edited in the explorer");
  assert.equal(stored.Big, "9007199254741149", "the Int64 is untouched by the merge");

  // Someone else changes the entity: the page's write is refused as an ETag conflict.
  const other = await fetch(`${endpoint}/${table}(PartitionKey='p1',RowKey='r049')?${sas}`, {
    method: "MERGE",
    headers: { "x-ms-version": "2019-02-02", "content-type": "application/json", "if-match": "*" },
    body: JSON.stringify({ Note: "changed elsewhere" }),
  });
  assert.equal(other.status, 204, await other.text());
  await setProperty(page, "Note", "my stale edit");
  await page.click("#editor-replace");
  const conflict = await page.waitForSelector("#conflict", WAIT);
  assert.match(await conflict.textContent(), /ETag conflict — 412 UpdateConditionNotSatisfied/);
  await screenshot(page, "explorer-conflict");
  await page.click("#conflict-reload");
  await page.waitForSelector("#conflict", { state: "detached", ...WAIT });
  const reloaded = await page.evaluate(() =>
    [...document.querySelectorAll("#editor-props .prop")].find((r) => r.querySelector(".prop-name").value === "Note").querySelector(".prop-value").value,
  );
  assert.equal(reloaded, "changed elsewhere");

  // The tables page counts the rows where it is cheap.
  await page.click(".brand");
  await page.waitForFunction((t) => /^\d/.test(document.querySelector(`#tables tr[data-table="${t}"] td.num`)?.textContent ?? ""), table, WAIT);
  assert.equal(await page.textContent(`#tables tr[data-table="${table}"] td.num`), "250");
  await screenshot(page, "explorer-tables");

  // A new entity has no ETag yet: no Replace/Merge buttons, and no note about them.
  await page.click(`#tables tr[data-table="${table}"] a`);
  await page.waitForSelector("#grid", WAIT);
  await page.click("#new-entity");
  await page.waitForSelector("#editor-insert", WAIT);
  assert.equal(await page.isVisible("#editor-replace"), false);
  assert.equal(await page.isVisible("#editor-etag-note"), false, "no If-Match note on the new-entity form");
  await page.click("#editor-close");

  // Empty keys are legal; the grid shows them as "(empty)", never as a blank row.
  const empty = await fetch(`${endpoint}/${table}?${sas}`, {
    method: "POST",
    headers: { "x-ms-version": "2019-02-02", "content-type": "application/json", prefer: "return-no-content" },
    body: JSON.stringify({ PartitionKey: "", RowKey: "", Note: "empty keys" }),
  });
  assert.equal(empty.status, 204, await empty.text());
  await page.fill("#filter", "PartitionKey eq ''");
  await page.press("#filter", "Enter");
  await page.waitForFunction(() => document.querySelector("#results")?.dataset.rows === "1", null, WAIT);
  rows = await gridRows(page);
  assert.deepEqual([rows[0].cells.PartitionKey, rows[0].cells.RowKey, rows[0].cells.Note], ["(empty)", "(empty)", "empty keys"]);

  assert.deepEqual(problems, [], "no script error and no CSP violation");
});

test("the explorer under a read-only SAS offers no New entity and no Import", { skip: reason ?? (readOnlySas ? false : "TABLEQ_BROWSER_SAS_READONLY is not set"), timeout: 60_000 }, async (t) => {
  const table = `readonly${Date.now()}`;
  const created = await fetch(`${endpoint}/Tables?${sas}`, {
    method: "POST",
    headers: { "x-ms-version": "2019-02-02", "content-type": "application/json", prefer: "return-no-content" },
    body: JSON.stringify({ TableName: table }),
  });
  assert.equal(created.status, 204, await created.text());
  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  await page.goto(`${origin}/_explorer/`);
  await page.waitForSelector("#login-secret", WAIT);
  await page.fill("#login-secret", readOnlySas);
  await page.click("#login-submit");
  await page.waitForSelector(`#tables tr[data-table="${table}"]`, WAIT);
  await page.click(`#tables tr[data-table="${table}"] a`);
  await page.waitForSelector("#grid", WAIT);
  assert.equal(await page.isDisabled("#new-entity"), true, "New entity is disabled");
  assert.equal(await page.isDisabled("#open-import"), true, "Import is disabled");
  assert.match(await page.getAttribute("#new-entity", "title"), /sp=rl\b.*adding entities/);
  assert.equal(await page.isDisabled("#export"), false, "Export only reads: it stays");
  assert.deepEqual(problems, []);
});
