#!/usr/bin/env node
// Before/after of two builds on a busy machine: one client alternates single calls between two
// gateways (this build and another), each in front of its own echo server, so that both meet the
// same load at the same moments. bench/relay measures each path in its own stretch of time; when
// other work shares the cores, those stretches differ by more than a change does (the same build
// measured 0.62 and 2.4 thousand calls/s a minute apart at load 11), while the ratio of two
// gateways driven call by call held within ±8 % at that load, and 1.01 for a build against itself.
//
//   node bench/ab.mjs --base OTHER/dist/cli/main.js [--calls N] [--repeat R] [--method tools/call|ping]
//                     [--approval none|session [--base-approval none|session]] [--first | --start]
//                     [--concurrency N] [-- extra run options, default --audit-sync normal]
//
// Prints, per repetition, each gateway's CPU time per call (all its threads, /proc schedstat; its
// main thread apart) and its p50 round trip at c=1, then the ratios this/base and their median
// over the repetitions, and by position (the median where this build went first, where the base did, and their geometric
// mean). Which build is spawned, handshaken and called first swaps from one repetition to the
// next, in every mode (this build in even repetitions, the base in odd ones; each line says
// which): the build going first measured differently from the same build going second.
// --concurrency N: instead of alternating single calls, both gateways driven at the same time,
// N calls in flight at each (its own warm-up so too), until each answered --calls: the CPU per
// call at c=N, where the calls of one turn share its transactions and pipe writes (bench/relay's
// c=16 budget lines judge the main thread's). The p50 is then each call's round trip under both.
// --first: the first call instead, in a fresh pair of gateways each repetition: the CPU each
// spent on its first call alone (its first argument check: ajv's compiles), sent once the list
// is answered and the validator's warm-up has loaded ajv, and from spawn to that call's answer.
// --start: warm starts instead, as bench/startup's (its command line, `--approval none`, a state
// directory and digest cache each build filled by one start beforehand), the two builds in turn,
// which goes first alternating: the CPU each gateway had used when its first tools/list result
// arrived, all its threads and its main thread apart (the difference is mostly V8's background
// compiles, off the path to the answer while a core is free), and from spawn to that result; then
// the medians of the differences this − base, pair by pair, with their quartiles (the `run`
// options after `--` are not used: the command line is bench/startup's).
// --start --cold: cold starts instead, as bench/startup's (a fresh state directory, its keyring
// made beforehand, and a fresh digest cache for every start: the whole tree is digested); the
// CPU is then the process's own count, which keeps the time of the hashing threads that ended.
// --approval session: the grant path instead of `--approval none`: each gateway's first call waits
// for a human, and is approved for the session the way bench/relay's "pc grant" path does it
// (`portcullis approvals --json`, then `approve ID --for session`, each through that gateway's own
// build, in its state directory), so that every measured call is covered by that session grant.
// --base-approval: the base gateway's mode when it is not --approval's: with --base naming this
// build's own main.cjs, the grant path against `--approval none` in the same moments.
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
    start: { type: "boolean", default: false },
    cold: { type: "boolean", default: false },
    approval: { type: "string", default: "none" },
    "base-approval": { type: "string" },
    concurrency: { type: "string", default: "1" },
  },
  allowPositionals: true,
});
if (!values.base) {
  process.stderr.write(
    "ab bench: --base PATH (another build's dist/cli/main.cjs, or main.js before it) is required\n",
  );
  process.exit(2);
}
const RUN_ARGS = positionals.length > 0 ? positionals : ["--audit-sync", "normal"];
const BASE_APPROVAL = values["base-approval"] ?? values.approval;
for (const [flag, mode] of [
  ["--approval", values.approval],
  ["--base-approval", BASE_APPROVAL],
]) {
  if (mode !== "none" && mode !== "session") {
    process.stderr.write(`ab bench: ${flag} is none or session, not ${JSON.stringify(mode)}\n`);
    process.exit(2);
  }
}
if (RUN_ARGS.some((a) => a === "--approval" || a.startsWith("--approval="))) {
  process.stderr.write(
    "ab bench: give the approval mode with --approval (and --base-approval), not after --\n",
  );
  process.exit(2);
}
const GRANTS = values.approval === "session" || BASE_APPROVAL === "session";
if (GRANTS && (values.start || values.first || values.method !== "tools/call")) {
  process.stderr.write("ab bench: --approval session measures tools/call only, without --first or --start\n");
  process.exit(2);
}
const CALLS = Number(values.calls);
const CONCURRENCY = Number(values.concurrency);
if (!Number.isInteger(CONCURRENCY) || CONCURRENCY < 1) {
  process.stderr.write(
    `ab bench: --concurrency is a whole number of calls in flight, not ${values.concurrency}\n`,
  );
  process.exit(2);
}
if (CONCURRENCY > 1 && (values.first || values.start)) {
  process.stderr.write("ab bench: --concurrency measures steady calls, without --first or --start\n");
  process.exit(2);
}
const WARMUP = 1500;
const SERVER = [process.execPath, join(REPO, "test", "fixtures", "servers", "echo.mjs")];
const ENV = Object.fromEntries(
  ["HOME", "LOGNAME", "PATH", "USER"].flatMap((k) => (process.env[k] ? [[k, process.env[k]]] : [])),
);

/** A gateway of build `cli` with its own state directory, and a bare JSON-RPC client for it. */
function gateway(cli, approvalMode) {
  const stateDir = mkdtempSync(join(tmpdir(), "portcullis-ab-"));
  const passFile = `${stateDir}.pass`;
  writeFileSync(passFile, "bench-passphrase-not-secret\n", { mode: 0o600 });
  const env = { ...ENV, PORTCULLIS_PASSPHRASE_FILE: passFile };
  const init = spawnSync(process.execPath, [cli, "init", "--state-dir", stateDir], { env, encoding: "utf8" });
  if (init.status !== 0) throw new Error(`${cli} init: ${init.stderr.trim().split("\n")[0]}`);
  const args = [
    cli,
    "run",
    "--state-dir",
    stateDir,
    "--label",
    "ab",
    "--approval",
    approvalMode,
    ...RUN_ARGS,
  ];
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
  // the main thread alone: its task id is the process's
  const mainNs = () =>
    Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/schedstat`, "utf8").split(" ")[0]);
  const close = () => {
    child.kill();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(passFile, { force: true });
  };
  return {
    request,
    cpuNs,
    mainNs,
    close,
    child,
    cli,
    stateDir,
    env,
    approvalMode,
    latencies: [],
    cpu0: 0,
    main0: 0,
  };
}

/**
 * Approves, for the session, the first approval request that appears in gateway `g`'s state
 * directory, through its own build's CLI: as bench/relay.mjs's approveFirstRequest, a human would.
 */
async function approveFirstRequest(g) {
  const cli = (...args) =>
    spawnSync(process.execPath, [g.cli, ...args, "--state-dir", g.stateDir], {
      env: g.env,
      encoding: "utf8",
      timeout: 60_000,
    });
  for (let tries = 0; tries < 600; tries++) {
    const listed = cli("approvals", "--json");
    const id = listed.status === 0 ? JSON.parse(listed.stdout).requests[0]?.request : undefined;
    if (id) {
      const approved = cli("approve", id, "--for", "session");
      if (approved.status !== 0) throw new Error(`${g.cli} approve failed: ${approved.stderr.trim()}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${g.cli}: no approval request appeared`);
}

const params = values.method === "ping" ? {} : { name: "echo", arguments: { message: "ab" } };
async function one(g) {
  const t = process.hrtime.bigint();
  const answer = await g.request(values.method, params);
  g.latencies.push(Number(process.hrtime.bigint() - t) / 1000);
  if (answer.error || answer.result?.isError) throw new Error(JSON.stringify(answer.error ?? answer.result));
}

/** `calls` calls to `g`, CONCURRENCY of them in flight at any time. */
async function inFlight(g, calls) {
  let left = calls;
  const worker = async () => {
    while (left-- > 0) await one(g);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

/**
 * This build's gateway and the base's, each past its handshake: `[this, base]`. `baseFirst`: the
 * base's is spawned, handshaken and (by the caller) called first. Which build goes first in
 * everything swaps from one repetition to the next: with this build always first, the same build
 * measured against itself came out at 0.955 (six repetitions 0.943–0.994, --audit-sync normal).
 */
async function handshakenPair(baseFirst) {
  const make = [
    () => gateway(join(REPO, "dist", "cli", "main.cjs"), values.approval),
    () => gateway(resolve(values.base), BASE_APPROVAL),
  ];
  const spawned = baseFirst ? [make[1](), make[0]()] : [make[0](), make[1]()];
  const pair = baseFirst ? [spawned[1], spawned[0]] : spawned;
  try {
    for (const g of spawned) {
      const init = {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "ab", version: "1" },
      };
      await g.request("initialize", init);
      g.child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
      if (g.approvalMode === "session") {
        // the first call waits for a human: approved for the session, every later call is covered
        await g.request("tools/list", {});
        const first = one(g);
        await approveFirstRequest(g);
        await first;
      }
    }
  } catch (e) {
    for (const g of pair) g.close();
    throw e;
  }
  return pair;
}

/** Which build goes first in repetition `r`: this build in even ones, the base in odd ones. */
const baseFirstIn = (r) => (r & 1) === 1;
const firstName = (baseFirst) => (baseFirst ? "base first" : "this first");

async function repetition(baseFirst) {
  const pair = await handshakenPair(baseFirst);
  const ordered = baseFirst ? [pair[1], pair[0]] : pair;
  try {
    for (let i = 0; i < WARMUP; i++) for (const g of ordered) await one(g);
    if (CONCURRENCY > 1) await Promise.all(ordered.map((g) => inFlight(g, WARMUP)));
    for (const g of ordered) {
      g.latencies = [];
      g.cpu0 = g.cpuNs();
      g.main0 = g.mainNs();
    }
    // --concurrency N: both gateways at once, N calls in flight at each, the same moments' load
    if (CONCURRENCY > 1) await Promise.all(ordered.map((g) => inFlight(g, CALLS)));
    // alternate which goes first, so neither always follows the other's wake-ups
    else
      for (let i = 0; i < CALLS; i++)
        for (const g of i & 1 ? [ordered[1], ordered[0]] : ordered) await one(g);
    return pair.map((g) => ({
      cpu: (g.cpuNs() - g.cpu0) / 1000 / CALLS,
      main: (g.mainNs() - g.main0) / 1000 / CALLS,
      p50: g.latencies.sort((a, b) => a - b)[g.latencies.length >> 1],
    }));
  } finally {
    for (const g of pair) g.close();
  }
}

/** The median; of an even count, the mean of the two middle values (not the upper one). */
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length & 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** --first: each gateway's CPU ms on its first call, and from spawn to its answer. */
async function firstCall(baseFirst) {
  const pair = await handshakenPair(baseFirst);
  try {
    const ordered = baseFirst ? [pair[1], pair[0]] : pair;
    for (const g of ordered) await g.request("tools/list", {});
    // past the validator's warm-up (250 ms after the first catalog), which loads ajv
    await new Promise((r) => setTimeout(r, 600));
    const out = new Map();
    for (const g of ordered) {
      const before = g.cpuNs();
      await one(g);
      const after = g.cpuNs();
      out.set(g, { call: (after - before) / 1e6, total: after / 1e6 });
    }
    return pair.map((g) => out.get(g));
  } finally {
    for (const g of pair) g.close();
  }
}

/** Thread CPU ms of `pid` from /proc: every thread's and the main thread's. */
function threadCpu(pid) {
  const ns = (t) => {
    try {
      return Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      return 0; // a thread that ended meanwhile
    }
  };
  return {
    all: readdirSync(`/proc/${pid}/task`).reduce((sum, t) => sum + ns(t), 0) / 1e6,
    main: ns(pid) / 1e6,
  };
}

/** A state directory (made by `init`) and digest cache of build `cli`, warmed by one start unless cold. */
async function warmState(cli, cold = false) {
  const stateDir = mkdtempSync(join(tmpdir(), "portcullis-ab-start-"));
  const cacheDir = mkdtempSync(join(tmpdir(), "portcullis-ab-cache-"));
  const passFile = `${stateDir}.pass`;
  writeFileSync(passFile, "bench-passphrase-not-secret\n", { mode: 0o600 });
  const env = { ...ENV, PORTCULLIS_PASSPHRASE_FILE: passFile, PORTCULLIS_CACHE_DIR: cacheDir };
  const init = spawnSync(process.execPath, [cli, "init", "--state-dir", stateDir], { env, encoding: "utf8" });
  if (init.status !== 0) throw new Error(`${cli} init: ${init.stderr.trim().split("\n")[0]}`);
  const state = {
    cli,
    env,
    argv: [cli, "run", "--state-dir", stateDir, "--label", "startup", "--approval", "none", "--", ...SERVER],
    close: () => {
      for (const p of [stateDir, cacheDir, passFile]) rmSync(p, { recursive: true, force: true });
    },
  };
  if (!cold) await warmStart(state);
  return state;
}

/** CPU ms of `pid` by its own count (utime + stime, 10 ms ticks): threads that ended included. */
function processCpu(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** One start to its first tools/list result: ms from spawn, and its CPU then. */
function warmStart(state) {
  return new Promise((res, rej) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, state.argv, { stdio: ["pipe", "pipe", "pipe"], env: state.env });
    let stderr = "";
    let buffer = "";
    let out = null;
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.stderr.on("data", (c) => {
      if (stderr.length < 8000) stderr += c;
    });
    child.stdin.on("error", () => {});
    const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      buffer += chunk;
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const msg = JSON.parse(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        if (msg.id === 1) {
          send({ jsonrpc: "2.0", method: "notifications/initialized" });
          send({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
        } else if (msg.id === 2 && out === null) {
          out = { ms: Number(process.hrtime.bigint() - t0) / 1e6, ...threadCpu(child.pid) };
          if (values.cold) out.all = Math.max(out.all, processCpu(child.pid));
          if (!msg.result?.tools?.length) out = null;
          child.stdin.end();
        }
      }
    });
    child.once("exit", () => {
      clearTimeout(timer);
      if (out !== null) res(out);
      else
        rej(
          new Error(`${state.cli}: no tools/list result: ${stderr.trim().split("\n").slice(-2).join(" | ")}`),
        );
    });
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "ab", version: "1" } },
    });
  });
}

if (values.start) {
  const kind = values.cold ? "cold" : "warm";
  console.log(`ab bench --start: ${kind} starts to the first tools/list result, echo fixture, alternating`);
  console.log(`this: ${join(REPO, "dist", "cli", "main.cjs")}\nbase: ${resolve(values.base)}`);
  const clis = [join(REPO, "dist", "cli", "main.cjs"), resolve(values.base)];
  let states = values.cold ? [] : [await warmState(clis[0]), await warmState(clis[1])];
  const diffs = { all: [], main: [], ms: [] };
  const each = [[], []];
  try {
    for (let r = 0; r < Number(values.repeat); r++) {
      const order = baseFirstIn(r) ? [1, 0] : [0, 1];
      const got = [];
      if (values.cold) {
        for (const s of states) s.close();
        states = [await warmState(clis[0], true), await warmState(clis[1], true)];
      }
      for (const i of order) got[i] = await warmStart(states[i]);
      const [a, b] = got;
      each[0].push(a);
      each[1].push(b);
      for (const k of Object.keys(diffs)) diffs[k].push(a[k] - b[k]);
      console.log(
        `  ${firstName(baseFirstIn(r))}: cpu all/main thread: this ${a.all.toFixed(1)}/${a.main.toFixed(1)} ms, base ${b.all.toFixed(1)}/${b.main.toFixed(1)} ms | spawn to list: this ${a.ms.toFixed(0)} ms, base ${b.ms.toFixed(0)} ms`,
      );
    }
  } finally {
    for (const s of states) s.close();
  }
  const q = (xs, p) => [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) * p)];
  const spread = (xs) => `${median(xs).toFixed(1)} [${q(xs, 0.25).toFixed(1)}, ${q(xs, 0.75).toFixed(1)}]`;
  const m = (i, k) => median(each[i].map((x) => x[k])).toFixed(1);
  console.log(
    `medians: cpu all this ${m(0, "all")} base ${m(1, "all")} ms, main thread this ${m(0, "main")} base ${m(1, "main")} ms, spawn to list this ${m(0, "ms")} base ${m(1, "ms")} ms`,
  );
  console.log(
    `this - base, pair by pair, median [quartiles]: cpu all ${spread(diffs.all)} ms, main thread ${spread(diffs.main)} ms, spawn to list ${spread(diffs.ms)} ms`,
  );
  process.exit(0);
}

if (values.first) {
  console.log(
    `ab bench --first: the first ${values.method} of a fresh gateway, echo fixture; run ${RUN_ARGS.join(" ")}`,
  );
  console.log(`this: ${join(REPO, "dist", "cli", "main.cjs")}\nbase: ${resolve(values.base)}`);
  const rows = [];
  for (let r = 0; r < Number(values.repeat); r++) {
    const [a, b] = await firstCall(baseFirstIn(r));
    rows.push([a, b]);
    console.log(
      `  ${firstName(baseFirstIn(r))}: first call cpu: this ${a.call.toFixed(1)} ms, base ${b.call.toFixed(1)} ms | spawn to its answer: this ${a.total.toFixed(0)} ms, base ${b.total.toFixed(0)} ms`,
    );
  }
  const m = (f) => median(rows.map(f)).toFixed(1);
  console.log(
    `median: first call this ${m(([a]) => a.call)} ms, base ${m(([, b]) => b.call)} ms; ` +
      `spawn to its answer this ${m(([a]) => a.total)} ms, base ${m(([, b]) => b.total)} ms`,
  );
  // the gateway called first pays more than the one called second (a build against itself: about
  // twice the first call's CPU), so the medians above mix two populations: each build is compared
  // with the other in the same position
  const at = (base, first) =>
    rows.filter((_, r) => baseFirstIn(r) === (base === first)).map(([a, b]) => (base ? b : a).call);
  const pm = (base, first) => (at(base, first).length ? median(at(base, first)).toFixed(1) : "-");
  console.log(
    `median first call by position: called first this ${pm(false, true)} base ${pm(true, true)} ms, ` +
      `called second this ${pm(false, false)} base ${pm(true, false)} ms`,
  );
  process.exit(0);
}
console.log(
  `ab bench: ${values.method} against the echo fixture, c=${CONCURRENCY}, ${CALLS} calls each, ${CONCURRENCY > 1 ? "both at once" : "alternating"}; run --approval ${values.approval}${BASE_APPROVAL === values.approval ? "" : ` (base: --approval ${BASE_APPROVAL})`} ${RUN_ARGS.join(" ")}`,
);
console.log(`this: ${join(REPO, "dist", "cli", "main.cjs")}\nbase: ${resolve(values.base)}`);
const ratios = { cpu: [], main: [], p50: [] };
for (let r = 0; r < Number(values.repeat); r++) {
  const [a, b] = await repetition(baseFirstIn(r));
  ratios.cpu.push(a.cpu / b.cpu);
  ratios.main.push(a.main / b.main);
  ratios.p50.push(a.p50 / b.p50);
  console.log(
    `  ${firstName(baseFirstIn(r))}: this cpu ${a.cpu.toFixed(1)} µs/call (main ${a.main.toFixed(1)}) p50 ${a.p50.toFixed(0)} µs | base cpu ${b.cpu.toFixed(1)} (main ${b.main.toFixed(1)}) p50 ${b.p50.toFixed(0)}` +
      ` | this/base cpu ${(a.cpu / b.cpu).toFixed(3)} main ${(a.main / b.main).toFixed(3)} p50 ${(a.p50 / b.p50).toFixed(3)}`,
  );
}
console.log(
  `median this/base: cpu ${median(ratios.cpu).toFixed(3)}, main thread ${median(ratios.main).toFixed(3)}, p50 ${median(ratios.p50).toFixed(3)}`,
);
// a position bias multiplies the ratio by some b when this build goes first and by 1/b when the
// base does: the geometric mean of the two positions' medians cancels it
const byPosition = (xs, baseFirst) => xs.filter((_, r) => baseFirstIn(r) === baseFirst);
const balanced = (xs) => {
  const [t, b] = [byPosition(xs, false), byPosition(xs, true)];
  if (!t.length || !b.length) return "(needs --repeat 2 or more)";
  return `${Math.sqrt(median(t) * median(b)).toFixed(3)} (this first ${median(t).toFixed(3)}, base first ${median(b).toFixed(3)})`;
};
console.log(
  `by position, this/base: cpu ${balanced(ratios.cpu)}; main thread ${balanced(ratios.main)}; p50 ${balanced(ratios.p50)}`,
);
