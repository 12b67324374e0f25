#!/usr/bin/env node
// Before/after of two builds on a busy machine: one client alternates single calls between two
// gateways (this build and another), each in front of its own echo server, so that both meet the
// same load at the same moments. bench/relay measures each path in its own stretch of time; when
// other work shares the cores, those stretches differ by more than a change does (the same build
// measured 0.62 and 2.4 thousand calls/s a minute apart at load 11), while the ratio of two
// gateways driven call by call held within ±8 % at that load, and 1.01 for a build against itself.
//
//   node bench/ab.mjs --base OTHER/dist/cli/main.js [--calls N] [--repeat R] [--method tools/call|ping]
//                     [--first] [-- extra run options, default --audit-sync normal]
//
// Prints, per repetition, each gateway's CPU time per call (all its threads, /proc schedstat) and
// its p50 round trip at c=1, then the ratios this/base and their median over the repetitions.
// --first: the first call instead, in a fresh pair of gateways each repetition: the CPU each
// spent on its first call alone (its first argument check: ajv's compiles), sent once the list
// is answered and the validator's warm-up has loaded ajv, and from spawn to that call's answer.
// Needs `npm run build` (this build) and the other build's dist/. Linux only (schedstat).
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values, positionals } = parseArgs({
  options: {
    base: { type: "string" },
    calls: { type: "string", default: "3000" },
    repeat: { type: "string", default: "3" },
    method: { type: "string", default: "tools/call" },
    first: { type: "boolean", default: false },
  },
  allowPositionals: true,
});
if (!values.base) {
  process.stderr.write(
    "ab bench: --base PATH (another build's dist/cli/main.cjs, or main.js before it) is required\n",
  );
  process.exit(2);
}
const CALLS = Number(values.calls);
const WARMUP = 1500;
const RUN_ARGS = positionals.length > 0 ? positionals : ["--audit-sync", "normal"];
const SERVER = [process.execPath, join(REPO, "test", "fixtures", "servers", "echo.mjs")];
const ENV = Object.fromEntries(
  ["HOME", "LOGNAME", "PATH", "USER"].flatMap((k) => (process.env[k] ? [[k, process.env[k]]] : [])),
);

/** A gateway of build `cli` with its own state directory, and a bare JSON-RPC client for it. */
function gateway(cli) {
  const stateDir = mkdtempSync(join(tmpdir(), "portcullis-ab-"));
  const passFile = `${stateDir}.pass`;
  writeFileSync(passFile, "bench-passphrase-not-secret\n", { mode: 0o600 });
  const env = { ...ENV, PORTCULLIS_PASSPHRASE_FILE: passFile };
  const init = spawnSync(process.execPath, [cli, "init", "--state-dir", stateDir], { env, encoding: "utf8" });
  if (init.status !== 0) throw new Error(`${cli} init: ${init.stderr.trim().split("\n")[0]}`);
  const args = [cli, "run", "--state-dir", stateDir, "--label", "ab", "--approval", "none", ...RUN_ARGS];
  const child = spawn(process.execPath, [...args, "--", ...SERVER], {
    stdio: ["pipe", "pipe", "ignore"],
    env,
  });
  const pending = new Map();
  let buffer = "";
  let nextId = 1;
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    buffer += chunk;
    for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
      const msg = JSON.parse(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      pending.get(msg.id)?.(msg);
      pending.delete(msg.id);
    }
  });
  const request = (method, params) =>
    new Promise((res) => {
      const id = nextId++;
      pending.set(id, res);
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  const cpuNs = () =>
    readdirSync(`/proc/${child.pid}/task`).reduce((sum, t) => {
      try {
        return sum + Number(readFileSync(`/proc/${child.pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        return sum; // a thread that ended meanwhile
      }
    }, 0);
  const close = () => {
    child.kill();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(passFile, { force: true });
  };
  return { request, cpuNs, close, child, latencies: [], cpu0: 0 };
}

const params = values.method === "ping" ? {} : { name: "echo", arguments: { message: "ab" } };
async function one(g) {
  const t = process.hrtime.bigint();
  const answer = await g.request(values.method, params);
  g.latencies.push(Number(process.hrtime.bigint() - t) / 1000);
  if (answer.error || answer.result?.isError) throw new Error(JSON.stringify(answer.error ?? answer.result));
}

/** This build's gateway and the base's, each past its handshake. */
async function handshakenPair() {
  const pair = [gateway(join(REPO, "dist", "cli", "main.cjs")), gateway(resolve(values.base))];
  try {
    for (const g of pair) {
      const init = {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "ab", version: "1" },
      };
      await g.request("initialize", init);
      g.child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    }
  } catch (e) {
    for (const g of pair) g.close();
    throw e;
  }
  return pair;
}

async function repetition() {
  const pair = await handshakenPair();
  try {
    for (let i = 0; i < WARMUP; i++) for (const g of pair) await one(g);
    for (const g of pair) {
      g.latencies = [];
      g.cpu0 = g.cpuNs();
    }
    // alternate which goes first, so neither always follows the other's wake-ups
    for (let i = 0; i < CALLS; i++) for (const g of i & 1 ? [pair[1], pair[0]] : pair) await one(g);
    return pair.map((g) => ({
      cpu: (g.cpuNs() - g.cpu0) / 1000 / CALLS,
      p50: g.latencies.sort((a, b) => a - b)[g.latencies.length >> 1],
    }));
  } finally {
    for (const g of pair) g.close();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** --first: each gateway's CPU ms on its first call, and from spawn to its answer. */
async function firstCall() {
  const pair = await handshakenPair();
  try {
    for (const g of pair) await g.request("tools/list", {});
    // past the validator's warm-up (250 ms after the first catalog), which loads ajv
    await new Promise((r) => setTimeout(r, 600));
    const out = [];
    for (const g of pair) {
      const before = g.cpuNs();
      await one(g);
      const after = g.cpuNs();
      out.push({ call: (after - before) / 1e6, total: after / 1e6 });
    }
    return out;
  } finally {
    for (const g of pair) g.close();
  }
}

if (values.first) {
  console.log(
    `ab bench --first: the first ${values.method} of a fresh gateway, echo fixture; run ${RUN_ARGS.join(" ")}`,
  );
  console.log(`this: ${join(REPO, "dist", "cli", "main.cjs")}\nbase: ${resolve(values.base)}`);
  const rows = [];
  for (let r = 0; r < Number(values.repeat); r++) {
    const [a, b] = await firstCall();
    rows.push([a, b]);
    console.log(
      `  first call cpu: this ${a.call.toFixed(1)} ms, base ${b.call.toFixed(1)} ms | spawn to its answer: this ${a.total.toFixed(0)} ms, base ${b.total.toFixed(0)} ms`,
    );
  }
  const m = (f) => median(rows.map(f)).toFixed(1);
  console.log(
    `median: first call this ${m(([a]) => a.call)} ms, base ${m(([, b]) => b.call)} ms; ` +
      `spawn to its answer this ${m(([a]) => a.total)} ms, base ${m(([, b]) => b.total)} ms`,
  );
  process.exit(0);
}
console.log(
  `ab bench: ${values.method} against the echo fixture, c=1, ${CALLS} calls each, alternating; run ${RUN_ARGS.join(" ")}`,
);
console.log(`this: ${join(REPO, "dist", "cli", "main.cjs")}\nbase: ${resolve(values.base)}`);
const ratios = { cpu: [], p50: [] };
for (let r = 0; r < Number(values.repeat); r++) {
  const [a, b] = await repetition();
  ratios.cpu.push(a.cpu / b.cpu);
  ratios.p50.push(a.p50 / b.p50);
  console.log(
    `  this cpu ${a.cpu.toFixed(1)} µs/call p50 ${a.p50.toFixed(0)} µs | base cpu ${b.cpu.toFixed(1)} p50 ${b.p50.toFixed(0)}` +
      ` | this/base cpu ${(a.cpu / b.cpu).toFixed(3)} p50 ${(a.p50 / b.p50).toFixed(3)}`,
  );
}
console.log(`median this/base: cpu ${median(ratios.cpu).toFixed(3)}, p50 ${median(ratios.p50).toFixed(3)}`);
