#!/usr/bin/env node
// Runs every bench/*.mjs (except this file, ab.mjs, which compares two builds, null-relay.mjs and guard-off-gateway.mjs, which
// are tools of the relay bench, and cpuprofile.mjs, which reads a profile) as a child process, one after the other, streaming its output under a header.
// Order: relay, http, identity, catalog, audit (whichever exist), then any other, alphabetically.
// Exit code: non-zero only if a bench crashed (exited non-zero or by a signal).
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const BENCH = dirname(fileURLToPath(import.meta.url));
const FIRST = ["relay", "http", "identity", "catalog", "audit"];
const SKIP = new Set(["run", "null-relay", "guard-off-gateway", "ab", "cpuprofile"]);

const names = readdirSync(BENCH)
  .filter((file) => file.endsWith(".mjs"))
  .map((file) => file.slice(0, -".mjs".length))
  .filter((name) => !SKIP.has(name));
const order = (name) => (FIRST.includes(name) ? FIRST.indexOf(name) : FIRST.length);
names.sort((a, b) => order(a) - order(b) || a.localeCompare(b));

function runOne(name) {
  return new Promise((resolve) => {
    const started = Date.now();
    // --expose-gc: the catalog bench collects before each timed run when it can
    const child = spawn(process.execPath, ["--expose-gc", join(BENCH, `${name}.mjs`)], { stdio: "inherit" });
    child.on("error", (error) =>
      resolve({ name, code: null, signal: null, error: error.message, ms: Date.now() - started }),
    );
    child.on("exit", (code, signal) => resolve({ name, code, signal, ms: Date.now() - started }));
  });
}

const results = [];
for (const name of names) {
  console.log(`\n=== bench: ${name} ===`);
  results.push(await runOne(name));
}
console.log("\n=== benches ===");
for (const r of results) {
  const outcome =
    r.code === 0
      ? "ok"
      : r.error
        ? `failed: ${r.error}`
        : r.signal
          ? `killed by ${r.signal}`
          : `exit ${r.code}`;
  console.log(`${r.name.padEnd(12)} ${outcome} (${(r.ms / 1000).toFixed(1)} s)`);
}
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
