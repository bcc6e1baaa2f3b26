// How fast the explorer shows a table's first page (issue 21: < 200 ms for a 1 M-entity
// table), measured in headless Chromium against a running `tableq serve` — see
// scripts/explorer-bench.sh, which loads the table and starts the server.
//
// For each query, ROUNDS times: open `/_explorer/#/tables/TABLE?filter=…` in the signed-in
// tab (a full page load: HTML, modules from the browser's cache after a 304 revalidation,
// config.json, the plan request and the first page's query), and time it until the grid
// holds the page's rows. Prints the median and the range of that, of the page's own fetch
// + render time, and of the server's time for the query (x-tableq-stats), as JSON lines.
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
  for (const q of QUERIES) {
    const hash = `#/tables/${encodeURIComponent(table)}${q.filter ? `?filter=${encodeURIComponent(q.filter)}` : ""}`;
    const total = [];
    const own = [];
    const server = [];
    for (let i = 0; i <= rounds; i++) {
      await page.goto("about:blank");
      const started = performance.now();
      await page.goto(`${origin}/_explorer/${hash}`);
      await page.waitForFunction((rows) => document.querySelector("#results")?.dataset.rows === String(rows), q.rows, { timeout: 30_000 });
      const took = performance.now() - started;
      const pageMs = Number(await page.getAttribute("#results", "data-page-ms"));
      const serverMs = Number(await page.getAttribute("#results", "data-server-ms"));
      if (i === 0) continue; // the first round warms the browser's cache and the store's
      total.push(took);
      own.push(pageMs);
      server.push(serverMs);
    }
    console.log(JSON.stringify({ query: q.name, rounds, load_to_grid_ms: stats(total), fetch_and_render_ms: stats(own), server_ms: stats(server) }));
  }
} finally {
  await browser.close();
}
