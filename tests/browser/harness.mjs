// A small, general harness for browser tests against `tableq serve`: headless Chromium
// from Debian's package (/usr/bin/chromium, driven by playwright-core — Playwright's own
// browser downloads are not used), and a page served from a loopback port of its own, so
// that the page's fetch() calls to tableq are cross-origin requests with an `Origin`.
//
//   const browser = await launchChromium();        // null (with a reason) when unavailable
//   const site = await servePage("<!doctype html><title>t</title>");
//   const page = await browser.newPage();
//   await page.goto(site.url);                      // the page's origin is site.origin
//   const answer = await page.evaluate(async (url) => (await fetch(url)).status, someUrl);
//   await site.close(); await browser.close();
//
// Environment: TABLEQ_CHROMIUM overrides the browser path.

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.TABLEQ_CHROMIUM || "/usr/bin/chromium";

/** Flags for a quiet, self-contained headless Chromium in a container (no sandbox: CI
 *  runs as root; no network beyond what the page asks for). */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Why the browser cannot run here, or null when it can. */
export function unavailableReason() {
  if (!existsSync(CHROMIUM)) {
    return `${CHROMIUM} is not installed (Debian package chromium; scripts/browser-tests.sh installs it where apt-get can)`;
  }
  return null;
}

/**
 * Launches headless Chromium with a fresh profile directory (removed on close). Returns a
 * Playwright Browser whose close() also removes the profile.
 */
export async function launchChromium() {
  const profile = mkdtempSync(join(tmpdir(), "tableq-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    timeout: 30_000,
  });
  const close = context.close.bind(context);
  context.close = async () => {
    try {
      await close();
    } finally {
      rmSync(profile, { recursive: true, force: true });
    }
  };
  return context;
}

/** Serves `html` at `/` from a loopback port; returns { origin, url, close }. */
export async function servePage(html) {
  const server = createServer((request, response) => {
    if (request.url === "/" || request.url.startsWith("/?")) {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end(html);
    } else {
      response.writeHead(404, { "content-type": "text/plain" });
      response.end("not found");
    }
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    origin,
    url: `${origin}/`,
    // The browser keeps its connections alive: close them, or close() waits for them.
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
