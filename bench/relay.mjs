#!/usr/bin/env node
// What a user pays for portcullis on each call, against baselines measured in the same run:
//   direct       the client spawns the server
//   null-relay   the client spawns bench/null-relay.mjs, which spawns the server (the floor)
//   fsync        one fsync of a small append, on the filesystem of the state directories (measured
//                here, in-process, each round: what the intent's durability costs at best)
//   portcullis   the client spawns `node dist/cli/main.cjs run --state-dir <tmp> ... -- <server>`
// Headline (the user's path): the guard fully on, audit on, with `--approval none` and with every
// call covered by a session grant (approved once through the CLI, as a human would), the intent
// durable before the forward (default) and with `--audit-sync normal`; and the relay alone (ping,
// a method the gateway does not guard). Targets (issue #11), judged on the medians over rounds,
// the spread over rounds printed beside them:
//   default durability  c=1 p50 <= null-relay + fsync + 0.1 ms; c=16 calls/s >= 0.4x null-relay
//   --audit-sync normal c=1 p50 <= 1.5x null-relay;             c=16 calls/s >= 0.5x null-relay
//   relay only (ping)   c=1 p50 <= 1.25x null ping;             c=16 calls/s >= 0.8x null ping,
//                       in every run (each run's medians judged; the rounds that fell outside
//                       are counted beside them)
// Beside each path: the CPU time its spawned process (the gateway, the null relay, or the server
// when direct) spent per call, all threads, from /proc/PID/task/*/schedstat: steadier than
// wall-clock figures on a busy machine, since it does not count time spent waiting for a core.
// Then each c=16 target as a CPU budget on this machine: at the target's rate, how much CPU per call
// the cores give the client, the server and the gateway together, what is left for the gateway
// (all threads, and its main thread, which can use one core at most) once the client's CPU (this
// process, measured per path) and the server's (the direct path's) are taken, against what the
// gateway spent; and the best rate the measured CPU allows.
// Secondary (components): the same gateway with its guard switched off, and the guard on and off
// in turn inside one gateway (bench/guard-off-gateway.mjs).
//
//   node bench/relay.mjs
// Env: BENCH_SERVER=echo|everything  the server: test/fixtures/servers/echo.mjs (default: a
//                                    hand-rolled echo, so the relay dominates) or server-everything
//      BENCH_CALLS=N                 calls per round at c=1 (default 2000; c=16 does 4N)
//      BENCH_WARMUP_16=N             warm-up calls at c=16 per path after the c=1 ones (default
//                                    3000: until V8's optimizing compiler has settled; 0: none)
//      BENCH_ROUNDS=N                rounds (default 5); the paths are measured in turn in each
//                                    round and every figure is the median over the rounds
//      BENCH_PATHS=a,b               only these paths (names as printed; the baselines always run)
//      BENCH_SECONDARY=0             skip the component lines (guard off, alternating)
//      BENCH_PROFILE_DIR=DIR         run every gateway under `node --cpu-prof` into DIR
//      BENCH_PROFILE_INTERVAL=US     the profiler's sampling interval (node's default: 1000 µs)
//      BENCH_BASE_CLI=PATH           also each portcullis path through this other build's CLI, as
//                                    "<path> (base)", in the same rounds (before/after a change)
//      PORTCULLIS_CLI=PATH           another build of the CLI (default dist/cli/main.cjs)
//      PORTCULLIS_BENCH_ARGS="..."   extra `run` options (split on spaces), appended after the
//                                    defaults "--label bench --approval none"
// Exit code: 0, also when portcullis is not built; 1 when a measured path fails.
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = process.env.PORTCULLIS_CLI ?? join(REPO, "dist", "cli", "main.cjs");
const NODE = process.execPath;
const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const CALLS_16 = CALLS * 4;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARMUP = Math.max(50, Math.round(CALLS / 4));
// Then this many at c=16 (quick): V8's optimizing compiler keeps its threads busy through a
// gateway's first few thousand guarded calls (measured on a 2-core machine: 100–160 µs of their CPU
// per call over the 3,000 calls after the first 500, under 10 after), competing for the cores with
// the gateway, the client and the server. A gateway serves a session for hours: the figures are
// its steady state, not its first seconds.
const WARMUP_16 = Number(process.env.BENCH_WARMUP_16 ?? 3000);
const SERVERS = {
  echo: [NODE, join(REPO, "test", "fixtures", "servers", "echo.mjs")],
  everything: [
    NODE,
    join(REPO, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"),
    "stdio",
  ],
};
const serverName = process.env.BENCH_SERVER ?? "echo";
const server = SERVERS[serverName];
if (!server) {
  process.stderr.write(`relay bench: unknown BENCH_SERVER ${serverName} (echo|everything)\n`);
  process.exit(2);
}
const extraArgs = (process.env.PORTCULLIS_BENCH_ARGS ?? "").split(/\s+/).filter(Boolean);
const MINIMAL_ENV = Object.fromEntries(
  ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"].flatMap((k) =>
    process.env[k] ? [[k, process.env[k]]] : [],
  ),
);

/** A bare newline-delimited JSON-RPC client over a child's stdio: the least client work possible. */
class RpcClient {
  constructor(command, args, env) {
    this.child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env: { ...MINIMAL_ENV, ...env } });
    this.pending = new Map();
    this.nextId = 1;
    this.stderr = "";
    this.exited = new Promise((res) => this.child.once("exit", (code, signal) => res({ code, signal })));
    this.exited.then(({ code, signal }) => {
      for (const { reject } of this.pending.values())
        reject(new Error(`process exited (code ${code}, signal ${signal})`));
      this.pending.clear();
    });
    this.child.stdin.on("error", () => {});
    this.child.stderr.on("data", (chunk) => {
      if (this.stderr.length < 64_000) this.stderr += chunk;
    });
    let buffer = "";
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk) => {
      buffer += chunk;
      let nl = buffer.indexOf("\n");
      while (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf("\n");
        let message;
        try {
          message = JSON.parse(line);
        } catch {
          continue;
        }
        const waiter = message.method === undefined ? this.pending.get(message.id) : undefined;
        if (!waiter) continue;
        this.pending.delete(message.id);
        if (message.error) waiter.reject(new Error(`${message.error.code} ${message.error.message}`));
        else waiter.resolve(message.result);
      }
    });
  }

  request(method, params, timeoutMs = 30_000) {
    const id = this.nextId++;
    if (method === "tools/call") this.toolCalls = (this.toolCalls ?? 0) + 1;
    return new Promise((res, rej) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        rej(new Error(`${method} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          res(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          rej(e);
        },
      });
      this.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  }

  notify(method, params) {
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method, ...(params ? { params } : {}) })}\n`);
  }

  async close() {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGTERM"), 3000);
    const killer = setTimeout(() => this.child.kill("SIGKILL"), 6000);
    await this.exited;
    clearTimeout(timer);
    clearTimeout(killer);
  }
}

/** A guarded call (tools/call echo), or an unguarded request the gateway only relays (ping). */
const call = (client, i) =>
  client.method === "ping"
    ? client.request("ping", {})
    : client.request("tools/call", { name: "echo", arguments: { message: `ping ${i}` } }).then((result) => {
        if (result.isError) throw new Error(`echo failed: ${JSON.stringify(result.content)}`);
      });

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * CPU time (ns) the process has run so far, all its threads (Linux: /proc/PID/task/TID/schedstat;
 * the thread pool's fsyncs count too), null elsewhere. The spawned process's share of a call (the
 * gateway's, the null relay's, the server's when direct) is steadier on a busy machine than any
 * wall-clock figure: it does not count time spent waiting for a core. A thread that ended between
 * two readings takes its time with it: the pool's threads live as long as the process.
 */
function cpuNs(pid) {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`))
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    return ns;
  } catch {
    return null;
  }
}

/** CPU time (ns) of one thread of `pid` (its main thread when `tid` is `pid`), null elsewhere. */
function threadCpuNs(pid, tid = pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
  } catch {
    return null;
  }
}

async function measure(client, total, concurrency) {
  const latencies = new Float64Array(total);
  let issued = 0;
  const cpu0 = cpuNs(client.child.pid);
  const main0 = threadCpuNs(client.child.pid);
  // The client's own CPU (this process: the bench does nothing else while a path is measured).
  const mine0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  const worker = async () => {
    while (issued < total) {
      const i = issued++;
      const t0 = process.hrtime.bigint();
      await call(client, i);
      latencies[i] = Number(process.hrtime.bigint() - t0) / 1e6;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu1 = cpuNs(client.child.pid);
  const main1 = threadCpuNs(client.child.pid);
  const mine = process.cpuUsage(mine0);
  const sorted = Array.from(latencies).sort((a, b) => a - b);
  const perCall = (a, b) => (a === null || b === null ? Number.NaN : (b - a) / total / 1000);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    rps: total / seconds,
    cpu: perCall(cpu0, cpu1),
    mainCpu: perCall(main0, main1),
    clientCpu: (mine.user + mine.system) / total,
  };
}

/**
 * Approves, for the session, the first approval request that appears in `stateDir`: the way a
 * human would, with `portcullis approvals --json` and `portcullis approve ID --for session`.
 */
async function approveFirstRequest(stateDir, env) {
  const cli = (...args) =>
    spawnSync(NODE, [CLI, ...args, "--state-dir", stateDir], {
      env: { ...MINIMAL_ENV, ...env },
      encoding: "utf8",
      timeout: 60_000,
    });
  for (let tries = 0; tries < 600; tries++) {
    const listed = cli("approvals", "--json");
    const id = listed.status === 0 ? JSON.parse(listed.stdout).requests[0]?.request : undefined;
    if (id) {
      const approved = cli("approve", id, "--for", "session");
      if (approved.status !== 0) throw new Error(`portcullis approve failed: ${approved.stderr.trim()}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("no approval request appeared");
}

/** Start a path: spawn, handshake, list, warm up. Resolves with {name, client} or {name, error}. */
async function openPath(name, command, args, env = {}, method = "tools/call", approveIn = null) {
  const client = new RpcClient(command, args, env);
  client.method = method;
  try {
    const init = await client.request(
      "initialize",
      {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "relay-bench", version: "1.0.0" },
      },
      60_000,
    );
    if (!init?.protocolVersion) throw new Error("initialize returned no protocolVersion");
    client.notify("notifications/initialized");
    await client.request("tools/list", {}, 60_000);
    if (approveIn) {
      // The first call waits for a human: approve it for the session, as one would.
      const first = client.request("tools/call", { name: "echo", arguments: { message: "first" } }, 120_000);
      await approveFirstRequest(approveIn, env);
      await first;
    }
    for (let i = 0; i < WARMUP; i++) await call(client, i);
    if (WARMUP_16 > 0) await measure(client, WARMUP_16, 16);
    return { name, client, rounds: [] };
  } catch (error) {
    await client.close();
    return { name, error: describe(error, client) };
  }
}

function describe(error, client) {
  const lines = client.stderr.trim().split("\n").filter(Boolean);
  const shown = lines.length > 8 ? [...lines.slice(0, 3), "...", ...lines.slice(-5)] : lines;
  return `${error.message}${shown.length ? `\n  stderr: ${shown.join("\n  stderr: ")}` : ""}`;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * One fsync of a small append on the filesystem of `dir` (where the state directories are): the
 * cheapest durable write there is, so what the intent's durability costs at best. p50 of `n`.
 */
function measureFsync(dir, n = 200) {
  const file = join(dir, "fsync-probe");
  const fd = openSync(file, "a");
  const line = Buffer.from(`${"x".repeat(199)}\n`);
  const times = new Float64Array(n);
  try {
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      writeSync(fd, line);
      fsyncSync(fd);
      times[i] = Number(process.hrtime.bigint() - t0) / 1e6;
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return percentile(
    Array.from(times).sort((x, y) => x - y),
    50,
  );
}

/** ROUNDS rounds; in each, every open path is measured in turn (c=1 then c=16), so that drift
 *  on a shared machine hits all paths alike, and the fsync baseline once. Each figure is the
 *  median over the rounds; each round's figures are kept for the spread. */
async function measurePaths(paths, fsyncDir) {
  const fsyncs = [];
  for (let round = 0; round < ROUNDS; round++) {
    fsyncs.push(measureFsync(fsyncDir));
    for (const path of paths) {
      if (!path.client) continue;
      try {
        path.rounds.push({
          c1: await measure(path.client, CALLS, 1),
          c16: await measure(path.client, CALLS_16, 16),
        });
      } catch (error) {
        path.error = describe(error, path.client);
        await path.client.close();
        path.client = undefined;
      }
    }
  }
  for (const path of paths) {
    if (path.error || !path.rounds?.length) continue;
    const pick = (c, key) => median(path.rounds.map((r) => r[c][key]));
    const at = (c) => ({
      p50: pick(c, "p50"),
      p99: pick(c, "p99"),
      rps: pick(c, "rps"),
      cpu: pick(c, "cpu"),
      mainCpu: pick(c, "mainCpu"),
      clientCpu: pick(c, "clientCpu"),
    });
    path.c1 = at("c1");
    path.c16 = at("c16");
  }
  return { p50: median(fsyncs), rounds: fsyncs };
}

/**
 * The guard's cost inside one gateway process (bench/guard-off-gateway.mjs with GUARD_ALTERNATE):
 * blocks of ALTERNATE calls at c=1, the guard on in one block and off in the next. The p50 of
 * each block; each "on" block against the "off" block next to it; the median of those ratios.
 */
const ALTERNATE = 100;
const ALTERNATE_PAIRS = Number(process.env.BENCH_PAIRS ?? 60);
async function alternatingCost(client) {
  // Align with the gateway's count of decisions: a block starts on a multiple of ALTERNATE.
  while ((client.toolCalls ?? 0) % ALTERNATE !== 0) await call(client, 0);
  const on = [];
  const off = [];
  for (let b = 0; b < 2 * ALTERNATE_PAIRS; b++) {
    const guarded = Math.floor((client.toolCalls ?? 0) / ALTERNATE) % 2 === 0;
    const { p50 } = await measure(client, ALTERNATE, 1);
    (guarded ? on : off).push(p50);
  }
  const pairs = Math.min(on.length, off.length);
  const ratios = Array.from({ length: pairs }, (_, i) => on[i] / off[i]).sort((x, y) => x - y);
  return {
    ratio: median(ratios),
    low: ratios[Math.floor(pairs / 4)],
    high: ratios[Math.floor((pairs * 3) / 4)],
    on: median(on),
    off: median(off),
  };
}

function preparePortcullis() {
  const stateDir = mkdtempSync(join(tmpdir(), "portcullis-bench-"));
  const passFile = join(stateDir, "..", `${stateDir.split("/").pop()}.pass`);
  writeFileSync(passFile, "bench-passphrase-not-secret\n", { mode: 0o600 });
  const env = { PORTCULLIS_PASSPHRASE_FILE: passFile };
  const init = spawnSync(NODE, [CLI, "init", "--state-dir", stateDir], {
    env: { ...MINIMAL_ENV, ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
  const initNote =
    init.status === 0
      ? "keyring initialized"
      : `portcullis init exited ${init.status}: ${(init.stderr ?? "").trim().split("\n")[0]}`;
  return {
    stateDir,
    env,
    initNote,
    cleanup: () => {
      rmSync(stateDir, { recursive: true, force: true });
      rmSync(passFile, { force: true });
    },
  };
}

const fmt = (n, digits = 3) => (n === undefined ? "-" : n.toFixed(digits));
const pad = (s, n) => String(s).padEnd(n);

const ONLY = (process.env.BENCH_PATHS ?? "").split(",").filter(Boolean);
const SECONDARY = process.env.BENCH_SECONDARY !== "0";
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR ? resolve(process.env.BENCH_PROFILE_DIR) : null;
const PROFILE_INTERVAL = process.env.BENCH_PROFILE_INTERVAL ?? "";
if (PROFILE_INTERVAL && !/^[1-9][0-9]*$/.test(PROFILE_INTERVAL)) {
  process.stderr.write("relay bench: BENCH_PROFILE_INTERVAL must be a whole number of microseconds\n");
  process.exit(2);
}
const BASE_CLI = process.env.BENCH_BASE_CLI ? resolve(process.env.BENCH_BASE_CLI) : null;
const BASELINES = new Set(["direct", "null-relay", "null ping"]);
const wanted = (name) => BASELINES.has(name) || ONLY.length === 0 || ONLY.includes(name);

async function main() {
  console.log(
    `relay bench: tools/call echo against ${serverName}, node ${process.version}, ` +
      `${ROUNDS} rounds of c=1: ${CALLS} calls + c=16: ${CALLS_16} calls, ${WARMUP} + ${WARMUP_16} (c=16) warm-up calls per path, medians`,
  );
  // Wall-clock figures follow the machine's load: say what it was, before and after.
  const loadAtStart = loadavg()[0];
  const rows = [];
  const skipped = { name: "", skipped: "" };
  const baseline = async (name, method = "tools/call") =>
    rows.push(
      await openPath(name, NODE, [join(REPO, "bench", "null-relay.mjs"), "--", ...server], {}, method),
    );
  rows.push(await openPath("direct", server[0], server.slice(1)));
  await baseline("null-relay");
  let portcullisNote;
  const preps = [];
  const alternating = [];
  if (!existsSync(CLI)) {
    portcullisNote = "portcullis: not built";
    rows.push({ ...skipped, name: "portcullis", skipped: "(skipped)" });
  } else {
    // Each gateway gets its own state directory (its own store): one path's fsyncs and WAL
    // checkpoints must not land in another path's figures.
    // --approval none unless a path (or PORTCULLIS_BENCH_ARGS) gives its own: run refuses an
    // option given twice
    const runArgs = (stateDir, ...more) => [
      "run",
      "--state-dir",
      stateDir,
      "--label",
      "bench",
      ...([...more, ...extraArgs].includes("--approval") ? [] : ["--approval", "none"]),
      ...more,
      ...extraArgs,
    ];
    const open = async (name, launcher, more, method = "tools/call", approve = false, env = {}) => {
      const prep = preparePortcullis();
      preps.push(prep);
      const profile = PROFILE_DIR
        ? [
            "--cpu-prof",
            `--cpu-prof-dir=${PROFILE_DIR}`,
            `--cpu-prof-name=${name.replace(/\W+/g, "-")}.cpuprofile`,
            ...(PROFILE_INTERVAL ? [`--cpu-prof-interval=${PROFILE_INTERVAL}`] : []),
          ]
        : [];
      const args = [...profile, launcher, ...runArgs(prep.stateDir, ...more), "--", ...server];
      return openPath(name, NODE, args, { ...prep.env, ...env }, method, approve ? prep.stateDir : null);
    };
    const path = async (name, launcher, ...a) => {
      if (!wanted(name)) return;
      rows.push(await open(name, launcher, ...a));
      // the same path through another build, measured in the same rounds (before/after a change)
      if (BASE_CLI && launcher === CLI) rows.push(await open(`${name} (base)`, BASE_CLI, ...a));
    };
    portcullisNote = `portcullis: run ${runArgs("<tmp>").slice(3).join(" ")} (one state directory per path)`;
    const guardOff = join(REPO, "bench", "guard-off-gateway.mjs");
    const grant = ["--approval", "session"];
    // the user's path: guard on, every call audited, the intent record fsynced before the forward
    await path("pc none", CLI, []);
    // the same, every call covered by a session grant a human gave (step 7 finds it)
    await path("pc grant", CLI, grant, "tools/call", true);
    // the same two, the intent surviving a kill but not a power loss (no fsync)
    await path("pc none normal", CLI, ["--audit-sync", "normal"]);
    await path("pc grant normal", CLI, ["--audit-sync", "normal", ...grant], "tools/call", true);
    // relay only: a request the gateway does not guard, against the same through null-relay
    await baseline("null ping", "ping");
    await path("pc ping", CLI, [], "ping");
    if (SECONDARY) {
      // the same gateway with its guard switched off (steps 1–7 skipped, the intent still recorded)
      await path("pc guard off", guardOff, ["--audit-sync", "normal"]);
      // the guard on and off in turn inside one gateway (not in the table: see alternatingCost)
      const alternate = { GUARD_ALTERNATE: String(ALTERNATE) };
      alternating.push(
        await open("a/b none", guardOff, ["--audit-sync", "normal"], "tools/call", false, alternate),
      );
      alternating.push(
        await open(
          "a/b grant",
          guardOff,
          ["--audit-sync", "normal", ...grant],
          "tools/call",
          true,
          alternate,
        ),
      );
    }
    const failedInit = preps.find((p) => !p.initNote.startsWith("keyring"));
    if (failedInit) portcullisNote += `; ${failedInit.initNote}`;
  }
  const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
  let fsync;
  try {
    fsync = await measurePaths(rows, tmpdir());
    for (const a of alternating) {
      if (!a.client) continue;
      try {
        a.cost = await alternatingCost(a.client);
      } catch (error) {
        a.error = describe(error, a.client);
      }
    }
  } finally {
    for (const row of [...rows, ...alternating]) if (row.client) await row.client.close();
    for (const prep of preps) prep.cleanup();
  }

  const header = [
    "path",
    "c=1 p50 ms",
    "c=1 p99 ms",
    "c=1 calls/s",
    "c=16 p50 ms",
    "c=16 p99 ms",
    "c=16 calls/s",
    "cpu µs/call c=1",
    "c=16",
  ];
  const widths = [16, 12, 12, 13, 13, 13, 13, 16, 6];
  console.log(header.map((h, i) => pad(h, widths[i])).join(""));
  for (const row of rows) {
    if (row.c1) {
      const cells = [
        row.name,
        fmt(row.c1.p50),
        fmt(row.c1.p99),
        fmt(row.c1.rps, 0),
        fmt(row.c16.p50),
        fmt(row.c16.p99),
        fmt(row.c16.rps, 0),
        fmt(row.c1.cpu, 0),
        fmt(row.c16.cpu, 0),
      ];
      console.log(cells.map((c, i) => pad(c, widths[i])).join(""));
    } else {
      console.log(`${pad(row.name, widths[0])}${row.skipped ?? `FAILED: ${row.error}`}`);
    }
  }
  console.log(
    `${pad("fsync", widths[0])}${pad(fmt(fsync.p50), widths[1])}(one fsync of a 200-byte append in ${tmpdir()}; rounds ${fsync.rounds.map((f) => fmt(f)).join(" ")})`,
  );
  console.log(portcullisNote);
  console.log(
    "cpu µs/call: CPU time of the spawned process per call (the gateway, the null relay, or the server when direct), from /proc/PID/task/*/schedstat (all threads)",
  );

  console.log(
    `machine: ${cpus().length} CPUs, load average (1 min) ${fmt(loadAtStart, 2)} at the start, ${fmt(loadavg()[0], 2)} at the end`,
  );

  const floor = byName["null-relay"];
  const direct = byName.direct;
  if (floor?.c1 && direct?.c1) {
    console.log(
      `null-relay/direct: p50 c=1 ${fmt(floor.c1.p50 / direct.c1.p50, 2)}x, calls/s c=16 ${fmt(floor.c16.rps / direct.c16.rps, 2)}x`,
    );
  }
  const spread = (values, digits = 2) => {
    const sorted = [...values].sort((x, y) => x - y);
    return `${fmt(sorted[0], digits)}–${fmt(sorted[sorted.length - 1], digits)}`;
  };
  const mark = (ok) => (ok ? "met" : "MISSED");
  /** Per round, this path against the baseline measured in the same round. */
  const perRound = (a, b, f) => a.rounds.map((r, i) => (b.rounds[i] ? f(r, b.rounds[i], i) : Number.NaN));
  console.log("targets (issue #11), medians over rounds; [spread over rounds]:");
  const also = (names) => names.flatMap((n) => [n, `${n} (base)`]);
  for (const name of also(["pc none", "pc grant"])) {
    const a = byName[name];
    if (!a?.c1 || !floor?.c1) continue;
    const limit = floor.c1.p50 + fsync.p50 + 0.1;
    const over = perRound(a, floor, (r, f, i) => r.c1.p50 - f.c1.p50 - fsync.rounds[i]);
    const rps = a.c16.rps / floor.c16.rps;
    console.log(
      `  ${name} (default durability): p50 c=1 ${fmt(a.c1.p50)} ms vs null-relay + fsync + 0.100 = ${fmt(limit)} ms: ${mark(a.c1.p50 <= limit)} ` +
        `[over null+fsync ${spread(
          over.map((x) => x * 1000),
          0,
        )} µs]; ` +
        `calls/s c=16 ${fmt(rps, 2)}x null-relay (>= 0.4x: ${mark(rps >= 0.4)}) ` +
        `[${spread(perRound(a, floor, (r, f) => r.c16.rps / f.c16.rps))}x]`,
    );
  }
  for (const name of also(["pc none normal", "pc grant normal"])) {
    const a = byName[name];
    if (!a?.c1 || !floor?.c1) continue;
    const p50 = a.c1.p50 / floor.c1.p50;
    const rps = a.c16.rps / floor.c16.rps;
    console.log(
      `  ${name} (--audit-sync normal): p50 c=1 ${fmt(p50, 2)}x null-relay (<= 1.5x: ${mark(p50 <= 1.5)}) ` +
        `[${spread(perRound(a, floor, (r, f) => r.c1.p50 / f.c1.p50))}x]; ` +
        `calls/s c=16 ${fmt(rps, 2)}x (>= 0.5x: ${mark(rps >= 0.5)}) ` +
        `[${spread(perRound(a, floor, (r, f) => r.c16.rps / f.c16.rps))}x]`,
    );
  }
  const nullPing = byName["null ping"];
  for (const name of also(["pc ping"])) {
    const ping = byName[name];
    if (!ping?.c1 || !nullPing?.c1) continue;
    const p50s = perRound(ping, nullPing, (r, f) => r.c1.p50 / f.c1.p50);
    const rpss = perRound(ping, nullPing, (r, f) => r.c16.rps / f.c16.rps);
    const p50 = ping.c1.p50 / nullPing.c1.p50;
    const rps = ping.c16.rps / nullPing.c16.rps;
    const out = (xs, ok) => `${xs.filter((x) => !ok(x)).length} of ${xs.length} rounds outside`;
    console.log(
      `  ${name} (relay only): p50 c=1 ${fmt(p50, 2)}x null ping (<= 1.25x: ${mark(p50 <= 1.25)}) ` +
        `[${spread(p50s)}x, ${out(p50s, (x) => x <= 1.25)}]; calls/s c=16 ${fmt(rps, 2)}x (>= 0.8x: ${mark(rps >= 0.8)}) ` +
        `[${spread(rpss)}x, ${out(rpss, (x) => x >= 0.8)}]`,
    );
  }
  // The c=16 targets as CPU budgets on this machine. At a rate of N calls/s, the client, the server
  // and the process between them share the machine's cores: cores × 1 s / N of CPU per call, and
  // the gateway's main thread (one core at most) can give it 1 s / N. The client's CPU is this
  // process's own (measured on each path), the server's the direct path's spawned process.
  const cores = cpus().length;
  const serverCpu = direct?.c16?.cpu;
  if (floor?.c16 && Number.isFinite(serverCpu)) {
    console.log(
      `c=16 CPU budgets (${cores} CPUs; server ${fmt(serverCpu, 1)} µs per call, client per path; gateway figures all threads / main thread):`,
    );
    for (const [name, target] of [
      ["pc none", 0.4],
      ["pc grant", 0.4],
      ["pc none normal", 0.5],
      ["pc grant normal", 0.5],
      ["pc ping", 0.8],
    ]) {
      const a = byName[name];
      const base = name === "pc ping" ? nullPing : floor;
      if (!a?.c16 || !base?.c16) continue;
      const rate = target * base.c16.rps;
      const machine = (cores * 1e6) / rate;
      const gateway = machine - a.c16.clientCpu - serverCpu;
      const main = 1e6 / rate;
      // what the measured CPU allows at best: the machine's cores, or the gateway's main thread
      const bound = Math.min((cores * 1e6) / (a.c16.clientCpu + serverCpu + a.c16.cpu), 1e6 / a.c16.mainCpu);
      console.log(
        `  ${name} at ${target}x ${name === "pc ping" ? "null ping" : "null-relay"} (${fmt(rate, 0)} calls/s): ${fmt(machine, 1)} µs of CPU per call, ` +
          `client ${fmt(a.c16.clientCpu, 1)} + server ${fmt(serverCpu, 1)} → gateway ≤ ${fmt(gateway, 1)} µs, main thread ≤ ${fmt(main, 1)} µs; ` +
          `it spends ${fmt(a.c16.cpu, 1)} / ${fmt(a.c16.mainCpu, 1)} µs: at most ${fmt(bound, 0)} calls/s (${fmt(bound / base.c16.rps, 2)}x), measured ${fmt(a.c16.rps, 0)}`,
      );
    }
  }
  // Secondary: the guard's cost, judged inside one gateway that turns its guard on and off every
  // ALTERNATE calls (see alternatingCost): three processes ping-ponging on a busy machine are
  // scheduled differently from one run to the next, by more than the guard costs, and
  // separate processes compare badly; adjacent blocks of one process share their conditions.
  const pct = (r) => `${r >= 1 ? "+" : ""}${fmt((r - 1) * 100, 1)}%`;
  const off = byName["pc guard off"];
  if (off?.c1 && floor?.c1)
    console.log(
      `secondary: pc guard off (--audit-sync normal)/null-relay: p50 c=1 ${fmt(off.c1.p50 / floor.c1.p50, 2)}x, calls/s c=16 ${fmt(off.c16.rps / floor.c16.rps, 2)}x`,
    );
  for (const [a, name, what] of [
    [alternating[0], "pc none normal", "approval none"],
    [alternating[1], "pc grant normal", "each call covered by a session grant"],
  ]) {
    if (!a) continue;
    if (!a.cost) {
      console.log(`secondary: guard on (${what}) vs guard off: FAILED: ${a.error}`);
      continue;
    }
    const c = a.cost;
    const on = byName[name];
    const separate =
      on?.c1 && off?.c1 ? `; separate gateways, from the rounds: ${pct(on.c1.p50 / off.c1.p50)}` : "";
    console.log(
      `secondary: guard on (${what}) vs guard off, tools/call, intent recorded without fsync in both: p50 c=1 ${pct(c.ratio)} ` +
        `(${ALTERNATE_PAIRS} pairs of ${ALTERNATE}-call blocks in one gateway; middle half ${pct(c.low)} to ${pct(c.high)}; ` +
        `on ${fmt(c.on)} ms, off ${fmt(c.off)} ms; target < 10%: ${c.ratio < 1.1 ? "met" : "MISSED"})${separate}`,
    );
  }
  const on = byName["pc none normal"];
  const ping = byName["pc ping"];
  if (on?.c1 && ping?.c1) {
    console.log(
      `secondary: a guarded, audited call against a relayed ping (the audit's intent and result records included): ` +
        `p50 c=1 +${fmt((on.c1.p50 / ping.c1.p50 - 1) * 100, 0)}%`,
    );
  }
  return rows.some((r) => r.error) ? 1 : 0;
}

process.exitCode = await main();
