// `UseDevelopmentStorage=true`, literally: @azure/data-tables against `tableq serve` started
// with its defaults (127.0.0.1:10002). Needs port 10002 and TABLEQ_BIN: skipped, with the
// reason printed, when either is missing — or when port 10002 is taken between the check and
// the server's start (another suite's run of this test, say). As in the Python suite
// (`conftest.py`), it starts its own server, not the store under test, so the PostgreSQL
// runs (`TABLEQ_SDK_STORE=pg|pg-sharded`) skip it: the durable run covers it, and two runs
// at once would race for the one port.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import http from "node:http";
import net from "node:net";
import { test } from "node:test";
import { TableClient, TableServiceClient } from "@azure/data-tables";
import { customProps, recordRequests, uniqueName } from "./helpers.mjs";

const PORT = 10002;

function portIsFree(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

function answers(port) {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/devstoreaccount1/Tables", timeout: 1000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
  });
}

/** The server could not listen on PORT: taken since `portIsFree` said it was free. */
class PortTaken extends Error {}

async function startDefaultServer(bin) {
  const child = spawn(bin, ["serve", "--in-memory"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  let exited = false;
  child.on("exit", () => (exited = true));
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    if (exited) {
      if (stderr.includes("Address already in use")) throw new PortTaken(stderr.trim());
      throw new Error(`${bin} serve --in-memory exited before it answered:\n${stderr}`);
    }
    if (await answers(PORT)) return child;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill("SIGKILL");
  throw new Error(`${bin} serve --in-memory did not answer on port ${PORT} within 30 s:\n${stderr}`);
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM"); // by the pid we started
  const timer = setTimeout(() => child.kill("SIGKILL"), 10000);
  await exited;
  clearTimeout(timer);
}

test("UseDevelopmentStorage=true works unchanged", async (t) => {
  const bin = process.env.TABLEQ_BIN;
  if (!bin) return t.skip("TABLEQ_BIN is not set: this test starts its own tableq server");
  const store = process.env.TABLEQ_SDK_STORE ?? "durable";
  if (store !== "durable" && store !== "memory") {
    return t.skip(
      `starts its own tableq server (--in-memory), not the ${store} store under test: covered by the --store durable run`,
    );
  }
  const inUse = `port ${PORT} is in use, so UseDevelopmentStorage=true cannot reach our server`;
  if (!(await portIsFree(PORT))) return t.skip(inUse);
  let child;
  try {
    child = await startDefaultServer(bin);
  } catch (e) {
    if (e instanceof PortTaken) return t.skip(`${inUse} (taken after the check)`);
    throw e;
  }
  try {
    const service = TableServiceClient.fromConnectionString("UseDevelopmentStorage=true", {
      retryOptions: { maxRetries: 0 },
    });
    assert.equal(service.url, `http://127.0.0.1:${PORT}/devstoreaccount1`);
    const name = uniqueName("DevStorage");
    await service.createTable(name);
    const table = TableClient.fromConnectionString("UseDevelopmentStorage=true", name, {
      retryOptions: { maxRetries: 0 },
    });
    const calls = recordRequests(table);
    await table.createEntity({ partitionKey: "p", rowKey: "r", a: 1 });
    await table.upsertEntity({ partitionKey: "p", rowKey: "r", b: "b" }, "Merge");
    assert.equal(calls.at(-1).method, "PATCH");
    assert.match(calls.at(-1).authorization, /^SharedKeyLite devstoreaccount1:/);
    assert.deepEqual(customProps(await table.getEntity("p", "r")), { a: 1, b: "b" });
    await service.deleteTable(name);
  } finally {
    await stop(child);
  }
});
