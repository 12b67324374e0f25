#!/usr/bin/env node
// The console's Audit page over a log that thousands of runs were appended to (needs `npm run
// build`): a state directory with --runs runs of four records (started, a call and its result,
// ended), each appended by a writer of its own as separate processes would, a console process in
// front of it, logged in over HTTP; then the time of POST /audit/open with the passphrase (the
// test KDF, so that scrypt is not what is measured), median and least of --rounds.
// --decisions D: then D decisions (`approval_granted`) appended after every run, each by a writer
// of its own as `portcullis approve` writes one, each naming one of the first runs (none on the
// first page): records another process writes about a run, after the first shown run's start.
// The first round is said apart (the rest are the page viewed again), and so is the CPU time the
// console process spent on the views (Linux), which a loaded machine changes less than wall time.
//
//   node bench/audit-page.mjs [--runs N] [--decisions D] [--rounds R] [--dist DIR]... [--passes P] [--cpu-prof DIR]
// --cpu-prof: the console process runs under node's --cpu-prof, its profile written to DIR when it
// stops (read it with bench/cpuprofile.mjs).
// --dist: another build's dist/ (inside the repository, so that its packages resolve); given more
// than once, each build's console is measured over the same state, in turn, --passes times
// (compare before/after on the same machine and log, one after the other).
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "3000" },
    decisions: { type: "string", default: "0" },
    rounds: { type: "string", default: "5" },
    dist: { type: "string", multiple: true, default: [join(root, "dist")] },
    passes: { type: "string", default: "1" },
    "cpu-prof": { type: "string" },
  },
});
const RUNS = Number(values.runs);
const DECISIONS = Number(values.decisions);
const ROUNDS = Number(values.rounds);
const DISTS = values.dist.map((d) => resolve(d));
const PASSES = Number(values.passes);
const dist = (p) => import(pathToFileURL(join(DISTS[0], p)).href);
const CLI = join(DISTS[0], "cli/main.cjs");
const PASSPHRASE = "correct horse battery staple";

const dir = mkdtempSync(join(tmpdir(), "portcullis-bench-audit-page-"));
const state = join(dir, "state");
const passFile = join(dir, "passphrase");
writeFileSync(passFile, `${PASSPHRASE}\n`, { mode: 0o600 });
const env = { ...process.env, PORTCULLIS_PASSPHRASE_FILE: passFile, PORTCULLIS_INSECURE_TEST_KDF: "1" };
let child = null;
try {
  const init = spawnSync(process.execPath, [CLI, "init", "--state-dir", state], { env, encoding: "utf8" });
  if (init.status !== 0) throw new Error(`portcullis init: ${init.stderr}`);
  const { openStore } = await dist("store/db.js");
  const { AuditLog } = await dist("audit/log.js");
  const db = openStore(state);
  for (let i = 0; i < RUNS; i++) {
    const run = `appended-${i}`;
    const call = { run, serverLabel: "shop", requestId: 1, callKey: 1, tool: "t", epoch: "E" };
    const log = AuditLog.open(db, state);
    log.appendMany([
      { type: "run_started", run, serverLabel: "shop" },
      { type: "tool_called", ...call },
      { type: "tool_result", ...call, outcome: "ok" },
      { type: "run_ended", run, serverLabel: "shop" },
    ]);
    log.close();
  }
  for (let i = 0; i < DECISIONS; i++) {
    const log = AuditLog.open(db, state, { sync: "normal" });
    log.append({
      type: "approval_granted",
      run: `appended-${i % Math.max(1, RUNS - 100)}`,
      serverLabel: "shop",
      approvalRequest: `request-${i}`,
      grant: `grant-${i}`,
      tools: ["t"],
      mode: "session",
    });
    log.close();
  }
  db.close();

  for (let pass = 0; pass < PASSES; pass++) for (const d of DISTS) console.log(await measure(d));
} finally {
  child?.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The CPU time (user + system, ms) a process has used, from /proc (Linux; null elsewhere): on a
 * loaded machine the view's wall time is mostly the other processes'.
 */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** A console process of the build `d` over the state, logged in; its views timed (the first apart). */
async function measure(d) {
  const { readConsoleAddress } = await import(pathToFileURL(join(d, "console/address.js")).href);
  const profile = values["cpu-prof"] ? ["--cpu-prof", `--cpu-prof-dir=${resolve(values["cpu-prof"])}`] : [];
  child = spawn(
    process.execPath,
    [...profile, join(d, "cli/main.cjs"), "console", "--no-open", "--state-dir", state],
    {
      env,
      stdio: "ignore",
    },
  );
  try {
    let base = null;
    for (let i = 0; i < 600 && base === null; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const a = readConsoleAddress(state);
      if (a && a.pid === child.pid) base = a.url;
    }
    if (base === null) throw new Error("the console did not start");
    const cookies = (h) => h.getSetCookie().map((c) => c.split(";")[0]);
    const form = { Origin: base, "Content-Type": "application/x-www-form-urlencoded" };
    const login = await fetch(`${base}/login`);
    const loginCsrf = /name="csrf" value="([^"]+)"/.exec(await login.text())[1];
    const proven = await fetch(`${base}/login`, {
      method: "POST",
      redirect: "manual",
      headers: { ...form, Cookie: cookies(login.headers).join("; ") },
      body: new URLSearchParams({ csrf: loginCsrf, passphrase: PASSPHRASE }),
    });
    const cookie = cookies(proven.headers).find((c) => c.startsWith("portcullis_session_"));
    const home = await (await fetch(`${base}/`, { headers: { Cookie: cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(home)[1];
    const times = [];
    const cpus = [];
    let bytes = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const c0 = cpuMs(child.pid);
      const t0 = performance.now();
      const r = await fetch(`${base}/audit/open`, {
        method: "POST",
        headers: { ...form, Cookie: cookie },
        body: new URLSearchParams({ csrf, passphrase: PASSPHRASE }),
      });
      const body = await r.text();
      times.push(performance.now() - t0);
      cpus.push(cpuMs(child.pid) - c0);
      if (r.status !== 200 || !body.includes("runs are in the audit"))
        throw new Error(`audit page: ${r.status}`);
      bytes = body.length;
    }
    const first = times[0];
    const firstCpu = cpus[0];
    times.sort((a, b) => a - b);
    cpus.sort((a, b) => a - b);
    return (
      `Audit page with ${RUNS.toLocaleString("en-US")} appended runs${
        DECISIONS > 0 ? ` and ${DECISIONS.toLocaleString("en-US")} decisions after them` : ""
      } (${d}): ` +
      `median ${times[Math.floor(ROUNDS / 2)].toFixed(0)} ms, least ${times[0].toFixed(0)} ms, first ${first.toFixed(0)} ms; the console's CPU: first ${firstCpu} ms, median ${cpus[Math.floor(ROUNDS / 2)]} ms; ${bytes} bytes of HTML`
    );
  } finally {
    // the profile is written as the console exits: wait for it
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
    child = null;
  }
}
