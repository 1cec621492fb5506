#!/usr/bin/env node
// `npx codex-parity ARGS…`: runs the platform's codex-parity binary with ARGS, passes
// signals on to it, and exits as it did (its status, or its signal).
"use strict";

const { spawn } = require("node:child_process");
const { resolveBinary } = require("./resolve.js");

let binary;
try {
  binary = resolveBinary();
} catch (e) {
  console.error(`codex-parity: ${e.message}`);
  process.exit(2);
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
const forward = (signal) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
for (const signal of signals) process.on(signal, forward);

child.on("error", (e) => {
  console.error(`codex-parity: cannot run ${binary}: ${e.message}`);
  process.exit(2);
});
child.on("exit", (code, signal) => {
  for (const s of signals) process.off(s, forward);
  if (signal) {
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
