#!/usr/bin/env node
// Memory of one gateway (`portcullis run --approval none` in front of the echo fixture): its
// resident set (VmRSS of the gateway process, not its server) when idle after the handshake and
// the first tools/list, then after 1,000 tools/call and after 100,000 (16 at a time). Also the
// direct server's idle RSS, for scale.
// Targets (issue #11): idle <= 80 MB; after 100,000 calls within 20 MB of after 1,000 (growth per
// call is a leak: a map keyed by call id never cleared, a cache without bound).
//
//   node bench/memory.mjs
// Env: BENCH_CALLS=N (default 100000); PORTCULLIS_CLI=PATH; PORTCULLIS_BENCH_ARGS="..." (extra
//      `run` options, e.g. "--audit-sync normal" to get there sooner)
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = process.env.PORTCULLIS_CLI ?? join(REPO, "dist", "cli", "main.cjs");
const NODE = process.execPath;
const CALLS = Number(process.env.BENCH_CALLS ?? 100_000);
const SERVER = [NODE, join(REPO, "test", "fixtures", "servers", "echo.mjs")];
const extraArgs = (process.env.PORTCULLIS_BENCH_ARGS ?? "").split(/\s+/).filter(Boolean);
const MINIMAL_ENV = Object.fromEntries(
  ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"].flatMap((k) =>
    process.env[k] ? [[k, process.env[k]]] : [],
  ),
);

function client(argv, env) {
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...MINIMAL_ENV, ...env },
  });
  const pending = new Map();
  let nextId = 1;
  let buffer = "";
  let stderr = "";
  child.stderr.on("data", (c) => {
    if (stderr.length < 16_000) stderr += c;
  });
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    buffer += chunk;
    let nl = buffer.indexOf("\n");
    while (nl >= 0) {
      const m = JSON.parse(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      nl = buffer.indexOf("\n");
      const p = m.method === undefined ? pending.get(m.id) : undefined;
      if (!p) continue;
      pending.delete(m.id);
      if (m.error || m.result?.isError) p.reject(new Error(JSON.stringify(m.error ?? m.result)));
      else p.resolve(m.result);
    }
  });
  const exited = new Promise((res) => child.once("exit", res));
  exited.then(() => {
    for (const p of pending.values())
      p.reject(new Error(`exited: ${stderr.trim().split("\n").slice(-3).join(" | ")}`));
  });
  const request = (method, params) =>
    new Promise((res, rej) => {
      const id = nextId++;
      pending.set(id, { resolve: res, reject: rej });
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  return {
    pid: child.pid,
    request,
    notify: (method) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method })}\n`),
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/**
 * Where the resident set is, from /proc/PID/smaps: "[heap]" is glibc's main arena (native
 * allocations of the main thread: SQLite's page cache, OpenSSL, node's C++ objects), "anon" every
 * other anonymous mapping (V8's heap, other threads' arenas, stacks), "file" mapped files (node's
 * own binary, shared with every node process). What grew, and so what to look at, shows here.
 */
function breakdown(pid) {
  const kb = { heap: 0, anon: 0, file: 0 };
  let kind = "anon";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const name = head[1];
      kind = name === "[heap]" ? "heap" : name.startsWith("/") ? "file" : "anon";
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) kb[kind] += Number(rss[1]);
  }
  return `[heap] ${mb(kb.heap / 1024)}, anon ${mb(kb.anon / 1024)}, file ${mb(kb.file / 1024)}`;
}

async function open(argv, env) {
  const c = client(argv, env);
  await c.request("initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "memory-bench", version: "1.0.0" },
  });
  c.notify("notifications/initialized");
  await c.request("tools/list", {});
  return c;
}

async function calls(c, total, concurrency) {
  let issued = 0;
  const worker = async () => {
    while (issued < total) {
      const i = issued++;
      await c.request("tools/call", { name: "echo", arguments: { message: `m ${i}` } });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

// Idle means past start-up: the gateway collects once, a second after its capture released the
// digest cache (src/identity/collect.ts), so the first reading waits 2 s.
const settle = (ms = 1000) => new Promise((r) => setTimeout(r, ms));
const mb = (n) => `${n.toFixed(1)} MB`;

async function main() {
  console.log(`memory bench: RSS of one gateway in front of the echo fixture, node ${process.version}`);
  if (!existsSync(CLI) || process.platform !== "linux") {
    console.log("portcullis not built, or not Linux (/proc): skipped");
    return 0;
  }
  const direct = await open(SERVER, {});
  await settle();
  const directIdle = rssMb(direct.pid);
  await direct.close();

  const stateDir = mkdtempSync(join(tmpdir(), "portcullis-memory-"));
  const passFile = `${stateDir}.pass`;
  writeFileSync(passFile, "bench-passphrase-not-secret\n", { mode: 0o600 });
  const env = { PORTCULLIS_PASSPHRASE_FILE: passFile };
  try {
    const init = spawnSync(NODE, [CLI, "init", "--state-dir", stateDir], {
      env: { ...MINIMAL_ENV, ...env },
      encoding: "utf8",
    });
    if (init.status !== 0) throw new Error(`portcullis init failed: ${init.stderr.trim()}`);
    // --approval none unless PORTCULLIS_BENCH_ARGS gives its own (run refuses an option given twice)
    const approval = extraArgs.includes("--approval") ? [] : ["--approval", "none"];
    const args = ["run", "--state-dir", stateDir, "--label", "memory", ...approval, ...extraArgs];
    const gw = await open([NODE, CLI, ...args, "--", ...SERVER], env);
    await settle(2000);
    const idle = rssMb(gw.pid);
    const idleParts = breakdown(gw.pid);
    // After calls: read 1 s and 5 s after the last one. An idle gateway collects the garbage of
    // a burst within a few seconds (src/identity/collect.ts); the targets use the 5 s readings.
    await calls(gw, 1000, 16);
    await settle();
    const after1kEarly = rssMb(gw.pid);
    await settle(4000);
    const after1k = rssMb(gw.pid);
    const after1kParts = breakdown(gw.pid);
    const t0 = Date.now();
    await calls(gw, CALLS - 1000, 16);
    const rate = (CALLS - 1000) / ((Date.now() - t0) / 1000);
    await settle();
    const afterAllEarly = rssMb(gw.pid);
    await settle(4000);
    const afterAll = rssMb(gw.pid);
    const afterAllParts = breakdown(gw.pid);
    await gw.close();
    console.log(`direct echo server idle: ${mb(directIdle)}`);
    console.log(
      `gateway idle (after handshake and tools/list): ${mb(idle)} (target <= 80 MB: ${idle <= 80 ? "met" : "MISSED"}); ${idleParts}`,
    );
    console.log(
      `gateway after 1,000 calls: ${mb(after1k)} (1 s after the last: ${mb(after1kEarly)}); ${after1kParts}`,
    );
    console.log(
      `gateway after ${CALLS.toLocaleString("en")} calls: ${mb(afterAll)} (1 s after the last: ${mb(afterAllEarly)}; ${rate.toFixed(0)} calls/s); ` +
        `growth ${mb(afterAll - after1k)} (target <= 20 MB: ${afterAll - after1k <= 20 ? "met" : "MISSED"}); ${afterAllParts}`,
    );
    return 0;
  } catch (e) {
    console.log(`FAILED: ${e.message}`);
    return 1;
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(passFile, { force: true });
  }
}

process.exitCode = await main();
