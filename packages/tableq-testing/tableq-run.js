#!/usr/bin/env node
// `tableq-run [--] COMMAND [ARGS…]`: starts one tableq server (global.js's globalSetup),
// runs COMMAND with its details in the environment (TABLEQ_ENDPOINT,
// TABLEQ_CONNECTION_STRING, TABLEQ_ACCOUNT_NAME, TABLEQ_ACCOUNT_KEY, TABLEQ_PID), stops the
// server when COMMAND ends and exits with COMMAND's status. One server for a whole run of
// any runner, e.g. `tableq-run node --test` on every Node >= 20.

import { spawn } from "node:child_process";
import { globalSetup, globalTeardown } from "./global.js";

const args = process.argv.slice(2);
if (args[0] === "--") args.shift();
if (args.length === 0) {
  console.error("usage: tableq-run [--] COMMAND [ARGS...]   (e.g. tableq-run node --test)");
  process.exit(2);
}
try {
  await globalSetup();
} catch (e) {
  console.error(`tableq-run: ${e.message}`);
  process.exit(2);
}
const child = spawn(args[0], args.slice(1), { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => child.kill(signal));
}
const status = await new Promise((resolve) => {
  child.once("error", (e) => {
    console.error(`tableq-run: cannot run ${args[0]}: ${e.message}`);
    resolve(127);
  });
  child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
});
await globalTeardown();
process.exit(status);
