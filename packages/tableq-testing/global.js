// One tableq server for a whole test run, for the test runners' global setup hooks. The
// server's details go into the environment of the run (inherited by worker processes):
//   TABLEQ_ENDPOINT, TABLEQ_CONNECTION_STRING, TABLEQ_ACCOUNT_NAME, TABLEQ_ACCOUNT_KEY,
//   TABLEQ_PID.
// Exported under the names each runner looks for:
//   node:test (>= 24, --test-global-setup=FILE): globalSetup / globalTeardown
//   mocha (--require tableq-testing/global):     mochaGlobalSetup / mochaGlobalTeardown
//   vitest (test.globalSetup: ["tableq-testing/global"]): setup / teardown
//   jest: tableq-testing/jest-global-setup and tableq-testing/jest-global-teardown
//   any runner: the bin `tableq-run COMMAND` (tableq-run.js)

import { startTableq } from "./index.js";

const KEY = Symbol.for("tableq-testing.server");

/** Starts the run's server (once) and exports its details into process.env. */
export async function globalSetup(options = {}) {
  if (globalThis[KEY]) return globalThis[KEY];
  const server = await startTableq(options);
  globalThis[KEY] = server;
  process.env.TABLEQ_ENDPOINT = server.endpoint;
  process.env.TABLEQ_CONNECTION_STRING = server.connectionString;
  process.env.TABLEQ_ACCOUNT_NAME = server.accountName;
  process.env.TABLEQ_ACCOUNT_KEY = server.accountKey;
  process.env.TABLEQ_PID = String(server.pid);
  return server;
}

/** Stops the run's server (by its pid; also when setup ran in another module instance). */
export async function globalTeardown() {
  const server = globalThis[KEY];
  delete globalThis[KEY];
  if (server) {
    await server.stop();
  } else if (process.env.TABLEQ_PID) {
    try {
      process.kill(Number(process.env.TABLEQ_PID), "SIGTERM");
    } catch {
      // already gone
    }
  }
  delete process.env.TABLEQ_PID;
}

// mocha's global fixtures take no arguments.
export const mochaGlobalSetup = () => globalSetup().then(() => undefined);
export const mochaGlobalTeardown = globalTeardown;
// vitest's globalSetup file.
export const setup = () => globalSetup().then(() => undefined);
export const teardown = globalTeardown;
