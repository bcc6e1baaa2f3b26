// Starts `tableq serve` (the Azure Table service emulator) for tests: in memory, on a free
// loopback port, ready when it has printed its ready line (`--ready-json`: tableq prints it
// only once the server answers requests), stopped by its pid.
//
// The binary is `options.binary`, else $TABLEQ_BIN, else `tableq` on PATH.

import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** The tableq binary: `explicit`, else $TABLEQ_BIN, else `tableq` on PATH. */
export function findBinary(explicit) {
  const candidate = explicit || process.env.TABLEQ_BIN;
  if (candidate) {
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      throw new Error(`TABLEQ_BIN=${candidate} is not an executable file`);
    }
    return candidate;
  }
  for (const dir of (process.env.PATH || "").split(delimiter)) {
    if (!dir) continue;
    const path = join(dir, "tableq");
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  throw new Error("tableq not found: set TABLEQ_BIN to the binary or put `tableq` on PATH");
}

/**
 * Starts `tableq serve --in-memory --host 127.0.0.1 --port 0 --ready-json [...options.args]`.
 *
 * @param {{binary?: string, args?: string[], timeoutMs?: number, env?: object}} [options]
 * @returns {Promise<{endpoint: string, connectionString: string, accountName: string,
 *   accountKey: string, port: number, pid: number, ready: object,
 *   stop: (timeoutMs?: number) => Promise<number|null>}>}
 */
export function startTableq(options = {}) {
  const binary = findBinary(options.binary);
  const args = [
    "serve", "--in-memory", "--host", "127.0.0.1", "--port", "0", "--ready-json",
    ...(options.args || []),
  ];
  const timeoutMs = options.timeoutMs ?? 30000;
  const child = spawn(binary, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { RUST_LOG: "warn", ...process.env, ...(options.env || {}) },
  });
  let log = "";
  const keep = (chunk) => {
    log = (log + chunk).slice(-65536);
  };
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", keep);
  child.stdout.setEncoding("utf8");

  const exited = new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve(code ?? signal));
  });

  return new Promise((resolve, reject) => {
    let buffered = "";
    let settled = false;
    const fail = (why) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`\`${binary} ${args.join(" ")}\` did not become ready: ${why}\n${log}`));
    };
    const timer = setTimeout(() => fail(`no ready line within ${timeoutMs} ms`), timeoutMs);
    child.once("error", (e) => fail(e.message));
    child.once("exit", (code, signal) => fail(`it exited (${code ?? signal})`));
    child.stdout.on("data", (chunk) => {
      if (settled) return; // later output is drained and dropped
      buffered += chunk;
      const newline = buffered.indexOf("\n");
      if (newline < 0) return;
      let ready;
      try {
        ready = JSON.parse(buffered.slice(0, newline));
      } catch (e) {
        fail(`the ready line is not JSON (${e.message}): ${buffered.slice(0, newline)}`);
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve(describe(child, ready, exited));
    });
  });
}

function describe(child, ready, exited) {
  const account = ready.accounts[0];
  let stopping = null;
  return {
    endpoint: ready.endpoint,
    connectionString: ready.connectionString,
    accountName: account.name,
    accountKey: account.key,
    port: ready.ports.http,
    pid: ready.pid,
    ready,
    /** The child process (to unref it, or read its exit). */
    process: child,
    /**
     * Replaces the server's fault rules (an object, or its JSON text), e.g.
     * `{rules: [{table: "orders", error: "ServerBusy", next: 2}]}`; the plan starts afresh
     * from its seed. Rejects with the server's reason when a rule is bad.
     */
    async setFaults(rules) {
      await admin(ready, account, "PUT", "faults", typeof rules === "string" ? rules : JSON.stringify(rules));
    },
    /** No more injected faults. */
    async clearFaults() {
      await admin(ready, account, "DELETE", "faults");
    },
    /** The rules in force, their seed, how often each rule fired, the throttle's limits. */
    async faults() {
      return JSON.parse(await admin(ready, account, "GET", "faults"));
    },
    /** Deletes every table of the account and resets its service properties. */
    async reset() {
      await admin(ready, account, "POST", "reset");
    },
    /**
     * Stops the server by its pid: SIGTERM (a clean shutdown), SIGKILL after `timeoutMs`.
     * Resolves to its exit code (or signal); safe to call twice.
     */
    stop(timeoutMs = 10000) {
      if (stopping) return stopping;
      stopping = (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
          try {
            return await exited;
          } finally {
            clearTimeout(timer);
          }
        }
        return child.exitCode ?? child.signalCode;
      })();
      return stopping;
    },
  };
}

/**
 * One of tableq's administrative requests (`restype=tableq`), signed with SharedKeyLite —
 * they take the account key, never a SAS. Resolves to the reply's text.
 */
async function admin(ready, account, method, comp, body) {
  const url = new URL(`${ready.endpoint}/?restype=tableq&comp=${comp}`);
  const date = new Date().toUTCString();
  const resource = `/${account.name}${url.pathname}?comp=${comp}`;
  const signature = createHmac("sha256", Buffer.from(account.key, "base64"))
    .update(`${date}\n${resource}`, "utf8")
    .digest("base64");
  const headers = {
    "x-ms-date": date,
    "x-ms-version": "2019-02-02",
    authorization: `SharedKeyLite ${account.name}:${signature}`,
  };
  if (body !== undefined) headers["content-type"] = "application/json";
  const reply = await fetch(url, { method, headers, body });
  const text = await reply.text();
  if (!reply.ok) {
    throw new Error(`${method} ?restype=tableq&comp=${comp}: ${reply.status} ${text}`);
  }
  return text;
}
