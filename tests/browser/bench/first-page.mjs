// How fast the explorer shows a table's first page (issue 21: < 200 ms for a 1 M-entity
// table), measured in headless Chromium against a running `tableq serve` — see
// scripts/explorer-bench.sh, which loads the table and starts the server.
//
// For each query, ROUNDS times, in the signed-in tab:
//
// * **open**: from setting the location to the table's query (`#/tables/T?filter=…`, as
//   clicking a table or a shared link does, from another table view) until the grid holds
//   the page's rows and the browser has laid them out (the next animation frame): the
//   plan request, the signed query, parsing, the grid and its layout;
// * **reload**: the same after a full page load (HTML and modules revalidated with the
//   server, 304, config.json, sign-in from sessionStorage) — timed from Node;
// * **server**: the server's own milliseconds for the page (`x-tableq-stats`).
//
// Prints the median and the range of each, per query, as JSON lines.
//
// Environment: TABLEQ_BENCH_ORIGIN (http://127.0.0.1:PORT), TABLEQ_BENCH_TABLE,
// TABLEQ_BENCH_ROUNDS (default 15).

import { launchChromium, unavailableReason } from "../harness.mjs";

const origin = process.env.TABLEQ_BENCH_ORIGIN;
const table = process.env.TABLEQ_BENCH_TABLE;
const rounds = Number(process.env.TABLEQ_BENCH_ROUNDS || 15);
if (!origin || !table) {
  console.error("set TABLEQ_BENCH_ORIGIN and TABLEQ_BENCH_TABLE");
  process.exit(2);
}
const reason = unavailableReason();
if (reason) {
  console.log(`SKIPPED: ${reason}`);
  process.exit(0);
}

const QUERIES = [
  { name: "first page, no filter ($top 100)", filter: "", rows: 100 },
  { name: "first page, one partition", filter: "PartitionKey eq 'p500'", rows: 100 },
  { name: "first page, residual over the full scan (Age lt 10)", filter: "Age lt 10", rows: 100 },
];

const stats = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return { median: Number(median.toFixed(1)), min: Number(sorted[0].toFixed(1)), max: Number(sorted.at(-1).toFixed(1)) };
};

const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.goto(`${origin}/_explorer/`);
  await page.fill("#login-secret", "UseDevelopmentStorage=true");
  await page.click("#login-submit");
  await page.waitForSelector("#new-table", { timeout: 30_000 });
  const hashOf = (filter) =>
    `#/tables/${encodeURIComponent(table)}${filter ? `?filter=${encodeURIComponent(filter)}` : ""}`;
  // In the page: go to `hash`, wait until the grid shows `rows` rows for `filter` and has
  // been laid out; returns the milliseconds it took.
  const open = (hash, filter, rows) =>
    page.evaluate(
      ([hash, filter, rows]) =>
        new Promise((resolve, reject) => {
          const started = performance.now();
          location.hash = hash;
          const deadline = started + 30_000;
          const check = () => {
            const results = document.querySelector("#results");
            const input = document.querySelector("#filter");
            if (results?.dataset.rows === String(rows) && input?.value === filter && !results.hasAttribute("aria-busy")) {
              requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - started), 0));
            } else if (performance.now() > deadline) {
              reject(new Error(`no grid of ${rows} rows for ${hash}`));
            } else {
              requestAnimationFrame(check);
            }
          };
          check();
        }),
      [hash, filter, rows],
    );
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const threadTime = async () =>
    (await cdp.send("Performance.getMetrics")).metrics.find((m) => m.name === "ThreadTime").value * 1000;
  const other = "PartitionKey eq 'none'";
  for (const q of QUERIES) {
    const opened = [];
    const reloaded = [];
    const server = [];
    const cpu = [];
    for (let i = 0; i <= rounds; i++) {
      await open(hashOf(other), other, 0);
      const cpuBefore = await threadTime();
      const took = await open(hashOf(q.filter), q.filter, q.rows);
      const cpuMs = (await threadTime()) - cpuBefore;
      const serverMs = Number(await page.getAttribute("#results", "data-server-ms"));
      await page.goto("about:blank");
      const started = performance.now();
      await page.goto(`${origin}/_explorer/${hashOf(q.filter)}`);
      await page.waitForFunction((rows) => document.querySelector("#results")?.dataset.rows === String(rows), q.rows, { timeout: 30_000 });
      const reload = performance.now() - started;
      if (i === 0) continue; // the first round warms the browser's cache and the store's
      opened.push(took);
      reloaded.push(reload);
      server.push(serverMs);
      cpu.push(cpuMs);
    }
    console.log(JSON.stringify({ query: q.name, rounds, open_ms: stats(opened), main_thread_cpu_ms: stats(cpu), reload_ms: stats(reloaded), server_ms: stats(server) }));
  }
} finally {
  await browser.close();
}
